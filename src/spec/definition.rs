//! Any kernel definition file, stencil or LBM, told apart by its keys.

use super::error::SpecError;
use super::lbm_file::{parse_lbm, LBM_KEYS};
use super::stencil::parse_stencil;
use super::SemanticError;
use crate::ir::{Domain, Dtype, Kernel};
use crate::lbm::{LbmSpec, Step};
use std::path::Path;

/// A definition file turned into the kernel that stands for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// The kernel: the stencil's, or the LBM variant's primary kernel (see
    /// [`LbmSpec::primary_step`]: the AA pattern's odd step) unless another step was chosen.
    pub kernel: Kernel,
    /// The default domain of the file, if it gives one.
    pub domain: Option<Domain>,
    /// Free text from the file.
    pub description: Option<String>,
    /// The LBM variant, for LBM files (its other kernels and its time loop come from here).
    pub lbm: Option<LbmSpec>,
}

impl Definition {
    /// Changes the element type of the kernel (and of the LBM variant).
    pub fn set_dtype(&mut self, dtype: Dtype) {
        self.kernel.set_dtype(dtype);
        if let Some(s) = &mut self.lbm {
            s.dtype = dtype;
        }
    }
}

/// Reads a stencil or LBM file (an LBM file is one with any of the keys `lattice`, `collision`,
/// `streaming`, `tau`, `omega`, `magic`).
pub fn load_definition(path: &Path) -> Result<Definition, SpecError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Io {
        file: file.clone(),
        source,
    })?;
    parse_definition(&text, &file, None)
}

/// Parses a stencil or LBM file; `step` picks an AA kernel (`None`: the primary one).
pub fn parse_definition(
    text: &str,
    file: &str,
    step: Option<Step>,
) -> Result<Definition, SpecError> {
    let is_lbm = text
        .parse::<toml::Table>()
        .map(|t| LBM_KEYS.iter().any(|k| t.contains_key(*k)))
        .unwrap_or(false);
    if !is_lbm {
        let d = parse_stencil(text, file)?;
        if step.is_some() {
            return Err(SpecError::Invalid {
                loc: super::Location {
                    file: file.to_string(),
                    line: 1,
                    col: 1,
                },
                kind: SemanticError::Lbm(crate::lbm::LbmError::BadStep(
                    "even and odd steps exist only for LBM files with streaming = \"aa\"".into(),
                )),
            });
        }
        return Ok(Definition {
            kernel: d.kernel,
            domain: d.domain,
            description: d.description,
            lbm: None,
        });
    }
    let d = parse_lbm(text, file)?;
    let kernel = d.spec.kernel(step).map_err(|e| SpecError::Invalid {
        loc: streaming_location(text, file),
        kind: SemanticError::Lbm(e),
    })?;
    Ok(Definition {
        kernel,
        domain: d.domain,
        description: d.description,
        lbm: Some(d.spec),
    })
}

/// Loads a file and picks a kernel of an AA variant.
pub fn load_definition_step(path: &Path, step: Option<Step>) -> Result<Definition, SpecError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Io {
        file: file.clone(),
        source,
    })?;
    parse_definition(&text, &file, step)
}

/// The position of the `streaming` key (where a step that does not fit is the file's business).
fn streaming_location(text: &str, file: &str) -> super::Location {
    let offset = text
        .lines()
        .scan(0, |pos, l| {
            let start = *pos;
            *pos += l.len() + 1;
            Some((start, l))
        })
        .find(|(_, l)| l.trim_start().starts_with("streaming"))
        .map(|(s, _)| s)
        .unwrap_or(0);
    let (line, col) = super::line_col(text, offset);
    super::Location {
        file: file.to_string(),
        line,
        col,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatches_on_the_keys() {
        let stencil =
            "name = \"s\"\ndims = 2\n[shape]\nkind = \"star\"\nradius = 1\ncoefficients = [1, 2]\n";
        let d = parse_definition(stencil, "s.toml", None).unwrap();
        assert!(d.lbm.is_none());
        assert!(parse_definition(stencil, "s.toml", Some(Step::Even)).is_err());
        let lbm = "name = \"l\"\nlattice = \"D2Q9\"\ntau = 0.7\nstreaming = \"aa\"\n";
        let d = parse_definition(lbm, "l.toml", None).unwrap();
        assert_eq!(d.kernel.name, "l_odd");
        assert!(d.lbm.is_some());
        let d = parse_definition(lbm, "l.toml", Some(Step::Even)).unwrap();
        assert_eq!(d.kernel.name, "l_even");
        let pull = lbm.replace("\"aa\"", "\"pull\"");
        let e = parse_definition(&pull, "l.toml", Some(Step::Odd)).unwrap_err();
        assert_eq!(e.location().unwrap().line, 4, "{e}");
        // A misspelt LBM key is still read as LBM and named.
        let e = parse_definition(&lbm.replace("lattice", "latice"), "l.toml", None).unwrap_err();
        assert!(e.to_string().contains("latice"), "{e}");
    }
}
