//! What the stencil and LBM file readers share: the file's text and name, positions of TOML
//! values, and the checks of keys both kinds of file have (names, numbers, element types,
//! layouts), each failing with the value's `file:line:col`.

use super::error::{Location, SemanticError, SpecError};
use super::line_col;
use crate::ir::{Dtype, Layout};
use serde::de::DeserializeOwned;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

/// Reads a definition file's text; `file` (the path as shown in messages) comes with it.
pub(crate) fn read_text(path: &Path) -> Result<(String, String), SpecError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Io {
        file: file.clone(),
        source,
    })?;
    Ok((text, file))
}

/// A TOML definition's text and file name: the positions of its values.
pub(crate) struct TomlText<'a> {
    /// The whole file.
    pub text: &'a str,
    /// The file's name in messages.
    pub file: &'a str,
}

impl TomlText<'_> {
    /// The location of byte `offset`.
    pub fn loc(&self, offset: usize) -> Location {
        let (line, col) = line_col(self.text, offset);
        Location {
            file: self.file.to_string(),
            line,
            col,
        }
    }

    /// A semantic error at the start of `span`.
    pub fn invalid(&self, span: Range<usize>, kind: SemanticError) -> SpecError {
        SpecError::Invalid {
            loc: self.loc(span.start),
            kind,
        }
    }

    /// The file deserialised into `T`, TOML errors with their position.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, SpecError> {
        toml::from_str(self.text).map_err(|e| SpecError::Syntax {
            loc: self.loc(e.span().map(|s| s.start).unwrap_or(0)),
            message: e.message().trim().replace('\n', "; "),
        })
    }

    /// A finite number (integer or float) for `key`.
    pub fn number(&self, key: &str, v: &Spanned<toml::Value>) -> Result<f64, SpecError> {
        let x = match v.get_ref() {
            toml::Value::Float(f) => *f,
            toml::Value::Integer(i) => *i as f64,
            other => {
                return Err(SpecError::Syntax {
                    loc: self.loc(v.span().start),
                    message: format!("expected a number for `{key}`, found {}", other.type_str()),
                })
            }
        };
        if !x.is_finite() {
            return Err(self.invalid(
                v.span(),
                SemanticError::NonFiniteParam {
                    name: key.to_string(),
                    value: x,
                },
            ));
        }
        Ok(x)
    }

    /// An identifier (`[A-Za-z_][A-Za-z0-9_]*`): names become C and WGSL identifiers.
    pub fn ident(&self, v: &Spanned<String>) -> Result<String, SpecError> {
        let s = v.get_ref();
        let ok = s
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(self.invalid(v.span(), SemanticError::BadName(s.clone())));
        }
        Ok(s.clone())
    }

    /// The element type, f64 when the file gives none.
    pub fn dtype(&self, d: Option<&Spanned<String>>) -> Result<Dtype, SpecError> {
        let Some(d) = d else {
            return Ok(Dtype::F64);
        };
        Dtype::parse(d.get_ref()).ok_or_else(|| {
            self.invalid(
                d.span(),
                SemanticError::UnknownDtype {
                    found: d.get_ref().clone(),
                },
            )
        })
    }

    /// A memory layout name (`fzyx`/SoA or `zyxf`/AoS).
    pub fn layout(&self, l: &Spanned<String>) -> Result<Layout, SpecError> {
        Layout::parse(l.get_ref()).ok_or_else(|| {
            self.invalid(
                l.span(),
                SemanticError::UnknownLayout {
                    found: l.get_ref().clone(),
                },
            )
        })
    }
}
