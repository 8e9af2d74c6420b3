//! LBM definition files (`lbm/*.toml`): one variant per file, validated with positions.
//!
//! ```toml
//! name = "d3q19_srt_pull"
//! description = "..."          # optional
//! lattice = "D3Q19"            # D2Q9, D3Q15, D3Q19, D3Q27
//! collision = "srt"            # srt (default) or trt
//! tau = 0.6                    # or omega = 1/tau; tau > 1/2
//! magic = 0.1875               # TRT only (default 3/16)
//! streaming = "pull"           # pull, push, aa
//! layout = "fzyx"              # fzyx (SoA, default) or zyxf (AoS)
//! dtype = "f32"                # f32 or f64 (default)
//! force = [1e-6, 0, 0]         # optional Guo body force, one entry per dimension
//! ghost = 1                    # ghost layers of the population arrays (default 1; 8 for f32
//!                              # or 4 for f64 align rows to 32-byte sectors)
//! padding = 0                  # extra elements at the end of each x row (default 0)
//! domain = [256, 256, 256]     # optional default domain, one size per dimension
//! ```

use super::error::{SemanticError, SpecError};
use super::toml_text::{read_text, TomlText};
use crate::ir::{Domain, Layout};
use crate::lbm::{Collision, LatticeKind, LbmError, LbmSpec, Streaming, DEFAULT_MAGIC};
use serde::Deserialize;
use std::ops::{Deref, Range};
use std::path::Path;
use toml::Spanned;

/// A parsed LBM file.
#[derive(Debug, Clone, PartialEq)]
pub struct LbmDefinition {
    /// The validated variant.
    pub spec: LbmSpec,
    /// The default domain of the file, if it gives one.
    pub domain: Option<Domain>,
    /// Free text from the file.
    pub description: Option<String>,
}

/// Keys that only LBM files have: a file with any of them is read as an LBM file.
pub(crate) const LBM_KEYS: [&str; 6] =
    ["lattice", "collision", "streaming", "tau", "omega", "magic"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LbmFile {
    name: Spanned<String>,
    description: Option<String>,
    lattice: Spanned<String>,
    collision: Option<Spanned<String>>,
    tau: Option<Spanned<toml::Value>>,
    omega: Option<Spanned<toml::Value>>,
    magic: Option<Spanned<toml::Value>>,
    streaming: Spanned<String>,
    layout: Option<Spanned<String>>,
    dtype: Option<Spanned<String>>,
    force: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    ghost: Option<Spanned<i64>>,
    padding: Option<Spanned<i64>>,
    domain: Option<Spanned<Vec<i64>>>,
}

/// Reads and validates an LBM file.
pub fn load_lbm(path: &Path) -> Result<LbmDefinition, SpecError> {
    let (text, file) = read_text(path)?;
    parse_lbm(&text, &file)
}

/// Parses and validates the text of an LBM file; `file` is only used in messages.
pub fn parse_lbm(text: &str, file: &str) -> Result<LbmDefinition, SpecError> {
    Reader(TomlText { text, file }).read()
}

struct Reader<'a>(TomlText<'a>);

impl<'a> Deref for Reader<'a> {
    type Target = TomlText<'a>;
    fn deref(&self) -> &TomlText<'a> {
        &self.0
    }
}

impl Reader<'_> {
    fn lbm(&self, span: Range<usize>, e: LbmError) -> SpecError {
        self.invalid(span, SemanticError::Lbm(e))
    }

    fn read(&self) -> Result<LbmDefinition, SpecError> {
        let f: LbmFile = self.deserialize()?;
        let name = &self.ident(&f.name)?;
        let lattice = LatticeKind::parse(f.lattice.get_ref()).ok_or_else(|| {
            self.lbm(
                f.lattice.span(),
                LbmError::UnknownLattice(f.lattice.get_ref().clone()),
            )
        })?;
        let dims = lattice.dims();
        let streaming = self.streaming(&f.streaming)?;
        let collision = match &f.collision {
            None => Collision::Srt,
            Some(c) => match c.get_ref().to_ascii_lowercase().as_str() {
                "srt" | "bgk" => Collision::Srt,
                "trt" => Collision::Trt {
                    magic: DEFAULT_MAGIC,
                },
                _ => {
                    return Err(self.lbm(c.span(), LbmError::UnknownCollision(c.get_ref().clone())))
                }
            },
        };
        let collision = match (collision, &f.magic) {
            (c, None) => c,
            (Collision::Srt, Some(m)) => return Err(self.lbm(m.span(), LbmError::MagicWithSrt)),
            (Collision::Trt { .. }, Some(m)) => Collision::Trt {
                magic: self.number("magic", m)?,
            },
        };
        let (tau, tau_span) = match (&f.tau, &f.omega) {
            (Some(_), Some(o)) => {
                return Err(self.lbm(o.span(), LbmError::RelaxationTwice));
            }
            (None, None) => return Err(self.lbm(f.name.span(), LbmError::MissingRelaxation)),
            (Some(t), None) => (self.number("tau", t)?, t.span()),
            (None, Some(o)) => {
                let omega = self.number("omega", o)?;
                if !(omega > 0.0 && omega < 2.0) {
                    return Err(self.lbm(
                        o.span(),
                        LbmError::BadNumber {
                            key: "omega",
                            value: omega,
                            valid: "ω = 1/τ must lie in (0, 2), e.g. 1.6",
                        },
                    ));
                }
                (1.0 / omega, o.span())
            }
        };
        let layout = match &f.layout {
            None => Layout::Fzyx,
            Some(l) => self.layout(l)?,
        };
        let dtype = self.dtype(f.dtype.as_ref())?;
        let mut force = [0.0; 3];
        if let Some(fv) = &f.force {
            if fv.get_ref().len() != dims {
                return Err(self.lbm(
                    fv.span(),
                    LbmError::ForceDims {
                        lattice,
                        dims,
                        found: fv.get_ref().len(),
                    },
                ));
            }
            for (d, v) in fv.get_ref().iter().enumerate() {
                force[d] = self.number("force", v)?;
            }
        }
        let count = |key: &'static str, v: &Option<Spanned<i64>>, default: usize| match v {
            None => Ok(default),
            Some(v) => crate::lbm::check_count(key, *v.get_ref())
                .map(|()| *v.get_ref() as usize)
                .map_err(|e| self.lbm(v.span(), e)),
        };
        let ghost = count("ghost", &f.ghost, 1)?;
        let padding = count("padding", &f.padding, 0)?;
        let spec = LbmSpec {
            name: name.clone(),
            lattice,
            collision,
            tau,
            force,
            streaming,
            layout,
            dtype,
            ghost,
            padding,
        };
        spec.validate().map_err(|e| {
            let span = match &e {
                LbmError::BadNumber { key: "magic", .. } => f.magic.as_ref().map(|m| m.span()),
                LbmError::BadNumber { key: "force", .. } | LbmError::ForceDims { .. } => {
                    f.force.as_ref().map(|m| m.span())
                }
                _ => None,
            };
            self.lbm(span.unwrap_or(tau_span.clone()), e)
        })?;
        let domain = match &f.domain {
            None => None,
            Some(d) => Some(self.domain(d, &spec)?),
        };
        Ok(LbmDefinition {
            spec,
            domain,
            description: f.description.clone(),
        })
    }

    fn streaming(&self, s: &Spanned<String>) -> Result<Streaming, SpecError> {
        let v = s.get_ref();
        Streaming::parse(v).ok_or_else(|| {
            let lower = v.to_ascii_lowercase();
            let e = if lower.contains("aa") && (lower.contains("push") || lower.contains("pull")) {
                LbmError::AaWithDirection(v.clone())
            } else {
                LbmError::UnknownStreaming(v.clone())
            };
            self.lbm(s.span(), e)
        })
    }

    fn domain(&self, d: &Spanned<Vec<i64>>, spec: &LbmSpec) -> Result<Domain, SpecError> {
        let v = d.get_ref();
        let dims = spec.lattice.dims();
        let bad = !(2..=3).contains(&v.len()) || v.iter().any(|x| *x < 1 || *x > (1 << 24));
        if bad {
            return Err(self.invalid(
                d.span(),
                SemanticError::BadDomain {
                    found: format!("{v:?}"),
                    dims,
                },
            ));
        }
        let sizes: Vec<usize> = v.iter().map(|x| *x as usize).collect();
        let domain = Domain::from_slice(&sizes).expect("2 or 3 sizes");
        spec.check_domain(&domain)
            .map_err(|e| self.lbm(d.span(), e))?;
        Ok(domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dtype;

    const GOOD: &str = r#"name = "d3q19_trt_aa"
lattice = "D3Q19"
collision = "trt"
tau = 0.6
streaming = "aa"
layout = "zyxf"
dtype = "f32"
force = [1e-6, 0, 0]
domain = [64, 32, 16]
"#;

    fn err(text: &str) -> SpecError {
        parse_lbm(text, "l.toml").unwrap_err()
    }

    fn lbm_err(text: &str) -> (LbmError, usize) {
        let e = err(text);
        let line = e.location().map(|l| l.line).unwrap_or(0);
        match e.semantic() {
            Some(SemanticError::Lbm(l)) => (l.clone(), line),
            _ => panic!("expected an LBM error, got {e}"),
        }
    }

    #[test]
    fn parses_a_full_file() {
        let d = parse_lbm(GOOD, "l.toml").unwrap();
        assert_eq!(d.spec.lattice, LatticeKind::D3Q19);
        assert_eq!(d.spec.collision, Collision::Trt { magic: 0.1875 });
        assert_eq!(d.spec.streaming, Streaming::Aa);
        assert_eq!(d.spec.layout, Layout::Zyxf);
        assert_eq!(d.spec.dtype, Dtype::F32);
        assert_eq!(d.spec.force, [1e-6, 0.0, 0.0]);
        assert_eq!(d.domain, Some(Domain::new3(64, 32, 16)));
        let o = parse_lbm(&GOOD.replace("tau = 0.6", "omega = 1.25"), "l.toml").unwrap();
        assert!((o.spec.tau - 0.8).abs() < 1e-15);
        let m = parse_lbm(&GOOD.replace("tau = 0.6", "tau = 0.6\nmagic = 0.25"), "l").unwrap();
        assert_eq!(m.spec.collision, Collision::Trt { magic: 0.25 });
        assert_eq!((d.spec.ghost, d.spec.padding), (1, 0));
        let g = parse_lbm(&GOOD.replace("dtype", "ghost = 8\npadding = 2\ndtype"), "l").unwrap();
        assert_eq!((g.spec.ghost, g.spec.padding), (8, 2));
        let k = g.spec.kernel(None).unwrap();
        assert_eq!((k.fields[0].ghost, k.fields[0].padding), (8, 2));
    }

    #[test]
    fn ghost_and_padding_out_of_range_are_positioned_errors() {
        for (text, key, line) in [
            ("ghost = 0", "ghost", 7),
            ("ghost = 65", "ghost", 7),
            ("padding = -1", "padding", 7),
        ] {
            let (e, l) = lbm_err(&GOOD.replace("dtype", &format!("{text}\ndtype")));
            assert!(
                matches!(e, LbmError::BadNumber { key: k, .. } if k == key),
                "{e}"
            );
            assert_eq!(l, line, "{text}");
            let value = text.split(" = ").nth(1).unwrap();
            assert!(
                e.to_string().contains(&format!("`{key}` = {value} ")),
                "{e}"
            );
        }
    }

    #[test]
    fn invalid_combinations_are_clear_errors() {
        let (e, line) = lbm_err(&GOOD.replace("D3Q19", "D3Q13"));
        assert!(matches!(e, LbmError::UnknownLattice(_)));
        assert_eq!(line, 2);
        let (e, line) = lbm_err(&GOOD.replace("tau = 0.6", "tau = 0.5"));
        assert!(matches!(e, LbmError::TauTooSmall { .. }));
        assert_eq!(line, 4);
        assert!(e.to_string().contains("greater than 1/2"), "{e}");
        let (e, _) = lbm_err(&GOOD.replace("tau = 0.6", "omega = 2.0"));
        assert!(matches!(e, LbmError::BadNumber { key: "omega", .. }));
        let (e, line) = lbm_err(&GOOD.replace("\"aa\"", "\"aa-push\""));
        assert!(matches!(e, LbmError::AaWithDirection(_)), "{e}");
        assert_eq!(line, 5);
        let (e, _) = lbm_err(&GOOD.replace("\"aa\"", "\"swap\""));
        assert!(matches!(e, LbmError::UnknownStreaming(_)));
        let (e, line) = lbm_err(
            &GOOD
                .replace("D3Q19", "D2Q9")
                .replace("force = [1e-6, 0, 0]", "force = [1e-6, 0]"),
        );
        assert!(matches!(e, LbmError::DomainDims { found: 3, .. }), "{e}");
        assert_eq!(line, 9);
        let (e, line) = lbm_err(&GOOD.replace("D3Q19", "D2Q9"));
        assert!(matches!(e, LbmError::ForceDims { .. }));
        assert_eq!(line, 8);
        let (e, _) =
            lbm_err(&GOOD.replace("collision = \"trt\"", "collision = \"srt\"\nmagic = 0.2"));
        assert!(matches!(e, LbmError::MagicWithSrt));
        let (e, _) = lbm_err(&GOOD.replace("collision = \"trt\"", "collision = \"mrt\""));
        assert!(matches!(e, LbmError::UnknownCollision(_)));
        let (e, _) = lbm_err(&GOOD.replace("tau = 0.6", "tau = 0.6\nomega = 1.5"));
        assert!(matches!(e, LbmError::RelaxationTwice));
        let (e, _) = lbm_err(&GOOD.replace("tau = 0.6\n", ""));
        assert!(matches!(e, LbmError::MissingRelaxation));
        let (e, _) = lbm_err(&GOOD.replace("tau = 0.6", "tau = 0.6\nmagic = -1"));
        assert!(matches!(e, LbmError::BadNumber { key: "magic", .. }));
        assert!(matches!(
            err(&GOOD.replace("dtype = \"f32\"", "dtype = \"f16\"")).semantic(),
            Some(SemanticError::UnknownDtype { .. })
        ));
        assert!(matches!(
            err(&GOOD.replace("[64, 32, 16]", "[64, 0, 16]")).semantic(),
            Some(SemanticError::BadDomain { .. })
        ));
        let e = err(&GOOD.replace("layout", "layuot"));
        assert!(matches!(e, SpecError::Syntax { .. }));
        assert!(e.to_string().contains("layuot"), "{e}");
        assert!(matches!(
            err(&GOOD.replace("tau = 0.6", "tau = \"0.6\"")),
            SpecError::Syntax { .. }
        ));
    }
}
