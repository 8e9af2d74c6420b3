//! Stencil definition files: a `[shape]` shorthand or a free-form `update`.

use super::error::{SemanticError, SpecError};
use super::parser::{parse_update, ParseError};
use super::shapes::{shape_kernel, Shape, ShapeKind};
use super::toml_text::{read_text, TomlText};
use crate::ir::{Domain, Dtype, Field, FieldRole, IrError, Kernel, Layout, Param};
use serde::Deserialize;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::Path;
use toml::Spanned;

/// A parsed stencil file: the kernel plus what the file says about how to run it.
#[derive(Debug, Clone, PartialEq)]
pub struct StencilDefinition {
    /// The validated kernel.
    pub kernel: Kernel,
    /// The default domain of the file, if it gives one.
    pub domain: Option<Domain>,
    /// Free text from the file.
    pub description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StencilFile {
    name: Spanned<String>,
    description: Option<String>,
    dims: Spanned<i64>,
    dtype: Option<Spanned<String>>,
    domain: Option<Spanned<Vec<i64>>>,
    ghost: Option<Spanned<i64>>,
    layout: Option<Spanned<String>>,
    padding: Option<Spanned<i64>>,
    update: Option<Spanned<String>>,
    shape: Option<ShapeSpec>,
    fields: Option<Vec<FieldSpec>>,
    params: Option<BTreeMap<String, Spanned<toml::Value>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShapeSpec {
    kind: Spanned<String>,
    radius: Spanned<i64>,
    coefficients: Spanned<Vec<Spanned<toml::Value>>>,
    input: Option<Spanned<String>>,
    output: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldSpec {
    name: Spanned<String>,
    role: Spanned<String>,
    components: Option<Spanned<i64>>,
    layout: Option<Spanned<String>>,
    ghost: Option<Spanned<i64>>,
    padding: Option<Spanned<i64>>,
}

/// Reads and validates a stencil file.
pub fn load_stencil(path: &Path) -> Result<StencilDefinition, SpecError> {
    let (text, file) = read_text(path)?;
    parse_stencil(&text, &file)
}

/// Parses and validates the text of a stencil file; `file` is only used in messages.
pub fn parse_stencil(text: &str, file: &str) -> Result<StencilDefinition, SpecError> {
    Reader {
        toml: TomlText { text, file },
        stmt_starts: OnceCell::new(),
    }
    .read()
}

struct Reader<'a> {
    toml: TomlText<'a>,
    /// File offsets of the update's statements, once parsed.
    stmt_starts: OnceCell<Vec<usize>>,
}

impl<'a> Deref for Reader<'a> {
    type Target = TomlText<'a>;
    fn deref(&self) -> &TomlText<'a> {
        &self.toml
    }
}

impl Reader<'_> {
    fn int(
        &self,
        v: &Spanned<i64>,
        key: &'static str,
        min: i64,
        max: i64,
        valid: &'static str,
    ) -> Result<usize, SpecError> {
        let x = *v.get_ref();
        if x < min || x > max {
            return Err(self.invalid(
                v.span(),
                SemanticError::OutOfRange {
                    key,
                    found: x,
                    valid,
                },
            ));
        }
        Ok(x as usize)
    }

    fn read(&self) -> Result<StencilDefinition, SpecError> {
        let f: StencilFile = self.deserialize()?;
        let name = self.ident(&f.name)?;
        let dims = *f.dims.get_ref();
        if dims != 2 && dims != 3 {
            return Err(self.invalid(f.dims.span(), SemanticError::BadDims { found: dims }));
        }
        let dims = dims as usize;
        let dtype = self.dtype(f.dtype.as_ref())?;
        let layout = match &f.layout {
            None => Layout::Fzyx,
            Some(l) => self.layout(l)?,
        };
        let ghost = f
            .ghost
            .as_ref()
            .map(|g| self.int(g, "ghost", 0, 64, "0 to 64 layers"))
            .transpose()?;
        let padding = f
            .padding
            .as_ref()
            .map(|p| self.int(p, "padding", 0, 4096, "0 to 4096 elements"))
            .transpose()?
            .unwrap_or(0);
        let domain = match &f.domain {
            None => None,
            Some(d) => {
                let v = d.get_ref();
                let bad = v.len() != dims || v.iter().any(|x| *x < 1 || *x > (1 << 24));
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
                Domain::from_slice(&sizes)
            }
        };

        let mut kernel = match (&f.shape, &f.update) {
            (Some(_), Some(u)) => return Err(self.invalid(u.span(), SemanticError::UpdateAndShape)),
            (None, None) => {
                return Err(self.invalid(f.name.span(), SemanticError::EmptyUpdate));
            }
            (Some(shape), None) => self.shape(&name, dims, dtype, shape)?,
            (None, Some(update)) => self.free_form(&name, dims, dtype, &f, update)?,
        };
        for field in &mut kernel.fields {
            if let Some(g) = ghost {
                field.ghost = g;
            }
            if field.padding == 0 {
                field.padding = padding;
            }
            if f.layout.is_some() {
                field.layout = layout;
            }
        }
        self.validate(&kernel, &f)?;
        Ok(StencilDefinition {
            kernel,
            domain,
            description: f.description.clone(),
        })
    }

    fn shape(
        &self,
        name: &str,
        dims: usize,
        dtype: Dtype,
        s: &ShapeSpec,
    ) -> Result<Kernel, SpecError> {
        let kind = match s.kind.get_ref().as_str() {
            "star" => ShapeKind::Star,
            "box" => ShapeKind::Box,
            other => {
                return Err(self.invalid(
                    s.kind.span(),
                    SemanticError::UnknownShape {
                        found: other.to_string(),
                    },
                ))
            }
        };
        let radius = self.int(&s.radius, "radius", 0, 16, "0 to 16")?;
        let coeffs = s
            .coefficients
            .get_ref()
            .iter()
            .enumerate()
            .map(|(i, c)| self.number(&format!("c{i}"), c))
            .collect::<Result<Vec<f64>, _>>()?;
        let expected = kind.coefficient_count(radius, dims);
        if coeffs.len() != expected {
            return Err(self.invalid(
                s.coefficients.span(),
                SemanticError::CoefficientCount {
                    shape: s.kind.get_ref().clone(),
                    radius,
                    dims,
                    expected,
                    found: coeffs.len(),
                    meaning: kind.meaning(),
                },
            ));
        }
        let input = s
            .input
            .as_ref()
            .map(|n| self.ident(n))
            .transpose()?
            .unwrap_or_else(|| "u".into());
        let output = s
            .output
            .as_ref()
            .map(|n| self.ident(n))
            .transpose()?
            .unwrap_or_else(|| "v".into());
        if input == output {
            let span = s.output.as_ref().map(|o| o.span()).unwrap_or(s.kind.span());
            return Err(self.invalid(span, SemanticError::DuplicateField(output)));
        }
        let shape = Shape {
            kind,
            radius,
            dims,
            coefficients: coeffs,
        };
        Ok(shape_kernel(name, &shape, dtype, &input, &output))
    }

    fn free_form(
        &self,
        name: &str,
        dims: usize,
        dtype: Dtype,
        f: &StencilFile,
        update: &Spanned<String>,
    ) -> Result<Kernel, SpecError> {
        let specs = f.fields.as_deref().unwrap_or(&[]);
        let mut fields: Vec<Field> = Vec::new();
        // Ghost layers given per field; the others are derived from the accesses below.
        let mut explicit_ghost = Vec::new();
        for s in specs {
            let fname = self.ident(&s.name)?;
            if fields.iter().any(|g| g.name == fname) {
                return Err(self.invalid(s.name.span(), SemanticError::DuplicateField(fname)));
            }
            let role = match s.role.get_ref().as_str() {
                "input" => FieldRole::Input,
                "output" => FieldRole::Output,
                "inout" => FieldRole::Inout,
                other => {
                    return Err(self.invalid(
                        s.role.span(),
                        SemanticError::UnknownRole {
                            found: other.to_string(),
                        },
                    ))
                }
            };
            let mut field = Field::scalar(&fname, dtype, 0, role);
            if let Some(c) = &s.components {
                field.components = self.int(c, "components", 1, 1024, "1 to 1024")?;
            }
            if let Some(l) = &s.layout {
                field.layout = self.layout(l)?;
            }
            if let Some(p) = &s.padding {
                field.padding = self.int(p, "padding", 0, 4096, "0 to 4096 elements")?;
            }
            explicit_ghost.push(
                s.ghost
                    .as_ref()
                    .map(|g| self.int(g, "ghost", 0, 64, "0 to 64 layers"))
                    .transpose()?,
            );
            fields.push(field);
        }
        let mut params_in_order: Vec<(&String, &Spanned<toml::Value>)> =
            f.params.iter().flatten().collect();
        params_in_order.sort_by_key(|(_, v)| v.span().start);
        let mut params = Vec::new();
        for (pname, v) in params_in_order {
            if fields.iter().any(|g| &g.name == pname) {
                return Err(self.invalid(
                    v.span(),
                    SemanticError::NameClash {
                        name: pname.clone(),
                        what: "field",
                    },
                ));
            }
            params.push(Param {
                name: pname.clone(),
                value: self.number(pname, v)?,
            });
        }

        let map = UpdateMap::new(self.text, update);
        let parsed =
            parse_update(update.get_ref(), dims, &fields, &params).map_err(|e| match e {
                ParseError::Syntax { at, message } => SpecError::Syntax {
                    loc: self.loc(map.file_offset(at)),
                    message,
                },
                ParseError::Semantic { at, error } => SpecError::Invalid {
                    loc: self.loc(map.file_offset(at)),
                    kind: error,
                },
            })?;
        if parsed.body.is_empty() {
            return Err(self.invalid(update.span(), SemanticError::EmptyUpdate));
        }
        let mut kernel = Kernel {
            name: name.to_string(),
            dims,
            fields,
            params,
            temps: parsed.temps,
            body: parsed.body,
        };
        let radii = field_radii(&kernel);
        for ((field, explicit), r) in kernel.fields.iter_mut().zip(explicit_ghost).zip(radii) {
            field.ghost = explicit.unwrap_or(r);
        }
        // Statement positions, for errors of the validation stage.
        self.stmt_starts
            .set(parsed.starts.iter().map(|s| map.file_offset(*s)).collect())
            .ok();
        Ok(kernel)
    }

    fn validate(&self, kernel: &Kernel, f: &StencilFile) -> Result<(), SpecError> {
        kernel.validate().map_err(|e| {
            let at = match (e.statement(), &e) {
                (Some(s), _) => self
                    .stmt_starts
                    .get()
                    .and_then(|v| v.get(s).copied())
                    .or_else(|| f.ghost.as_ref().map(|g| g.span().start))
                    .or_else(|| f.shape.as_ref().map(|s| s.radius.span().start))
                    .unwrap_or(0),
                (None, IrError::EmptyUpdate) => {
                    f.update.as_ref().map(|u| u.span().start).unwrap_or(0)
                }
                (None, _) => f.name.span().start,
            };
            SpecError::Invalid {
                loc: self.loc(at),
                kind: SemanticError::Ir(e),
            }
        })
    }
}

/// The largest access radius per field (the default ghost-layer count).
fn field_radii(kernel: &Kernel) -> Vec<usize> {
    let mut r = vec![0; kernel.fields.len()];
    for (a, _) in kernel.accesses() {
        if let Some(x) = r.get_mut(a.field) {
            *x = (*x).max(a.radius());
        }
    }
    r
}

/// Maps byte offsets inside the `update` string to byte offsets in the file.
struct UpdateMap {
    /// File offset of the string's first content byte, when the raw text equals the value.
    content_start: Option<usize>,
    /// File offset of the string token.
    token_start: usize,
}

impl UpdateMap {
    fn new(text: &str, update: &Spanned<String>) -> UpdateMap {
        let span = update.span();
        let raw = text.get(span.clone()).unwrap_or("");
        let mut start = span.start;
        if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
            start += 3;
            // TOML drops a line break right after the opening delimiter.
            if text[start..].starts_with("\r\n") {
                start += 2;
            } else if text[start..].starts_with('\n') {
                start += 1;
            }
        } else {
            start += 1;
        }
        let value = update.get_ref();
        // Escapes make the value differ from the raw text; then only the string's start is exact.
        let exact = text.get(start..start + value.len()) == Some(value.as_str());
        UpdateMap {
            content_start: exact.then_some(start),
            token_start: span.start,
        }
    }

    fn file_offset(&self, at: usize) -> usize {
        match self.content_start {
            Some(s) => s + at,
            None => self.token_start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::AccessKind;

    fn err(text: &str) -> SpecError {
        parse_stencil(text, "t.toml").unwrap_err()
    }

    const FREE: &str = r#"name = "k"
dims = 3
update = """
v[0,0,0] = c0*u[0,0,0] +
   c1*(u[-1,0,0] + u[1,0,0])
"""

[[fields]]
name = "u"
role = "input"

[[fields]]
name = "v"
role = "output"

[params]
c1 = 0.25
c0 = 0.5
"#;

    #[test]
    fn free_form_parses_with_derived_ghosts() {
        let d = parse_stencil(FREE, "t.toml").unwrap();
        let k = &d.kernel;
        assert_eq!(k.fields[0].ghost, 1);
        assert_eq!(k.fields[1].ghost, 0);
        assert_eq!(k.params[0].name, "c1", "file order is kept");
        assert_eq!(k.distinct_accesses(AccessKind::Load).len(), 3);
        assert_eq!(k.dtype(), Dtype::F64);
    }

    #[test]
    fn update_errors_have_file_positions() {
        let e = err(&FREE.replace("u[1,0,0])", "w[1,0,0])"));
        assert_eq!(e.to_string().split(": ").next(), Some("t.toml:5:20"), "{e}");
        assert!(matches!(
            e.semantic(),
            Some(SemanticError::UnknownField { .. })
        ));
        let e = err(&FREE.replace("c0*u[0,0,0] +", "c0*u[0,0,0] + )"));
        assert!(matches!(e, SpecError::Syntax { .. }));
        assert_eq!(e.location().unwrap().line, 4);
        assert_eq!(e.location().unwrap().col, 26);
    }

    #[test]
    fn semantic_errors() {
        let store_input = FREE.replace("v[0,0,0] = c0", "u[0,0,0] = c0");
        assert!(matches!(
            err(&store_input).semantic(),
            Some(SemanticError::Ir(IrError::StoreIntoInput { .. }))
        ));
        let e = err(&FREE.replace("role = \"input\"", "role = \"input\"\nghost = 0"));
        assert!(matches!(
            e.semantic(),
            Some(SemanticError::Ir(IrError::OffsetBeyondGhost { .. }))
        ));
        assert_eq!(e.location().unwrap().line, 4, "{e}");
        assert!(matches!(
            err(&FREE.replace("dims = 3", "dims = 2")).semantic(),
            Some(SemanticError::OffsetCount { .. })
        ));
        assert!(matches!(
            err(&FREE.replace("dims = 3", "dims = 3\ndtype = \"f16\"")).semantic(),
            Some(SemanticError::UnknownDtype { .. })
        ));
        assert!(matches!(
            err(&FREE.replace("dims = 3", "dims = 3\ndomain = [10, 0, 4]")).semantic(),
            Some(SemanticError::BadDomain { .. })
        ));
        assert!(matches!(
            err(&FREE.replace("c0 = 0.5", "c0 = inf")).semantic(),
            Some(SemanticError::NonFiniteParam { .. })
        ));
        let empty = FREE.replace(
            "v[0,0,0] = c0*u[0,0,0] +\n   c1*(u[-1,0,0] + u[1,0,0])\n",
            "# nothing\n",
        );
        assert!(matches!(
            err(&empty).semantic(),
            Some(SemanticError::EmptyUpdate)
        ));
        let only_temp = FREE.replace("v[0,0,0] = c0", "t = c0");
        assert!(matches!(
            err(&only_temp).semantic(),
            Some(SemanticError::Ir(IrError::EmptyUpdate))
        ));
        assert!(matches!(
            err(&FREE.replace("dims = 3", "dims = 4")).semantic(),
            Some(SemanticError::BadDims { found: 4 })
        ));
    }

    #[test]
    fn shapes_and_toml_errors() {
        let star = "name = \"s\"\ndims = 2\ndtype = \"f32\"\n[shape]\nkind = \"star\"\nradius = 2\ncoefficients = [1, 2, 3]\n";
        let d = parse_stencil(star, "s.toml").unwrap();
        assert_eq!(d.kernel.min_bytes_per_lup(), 8);
        assert_eq!(d.kernel.fields[0].ghost, 2);
        let e = err(&star.replace("[1, 2, 3]", "[1, 2]"));
        assert!(matches!(
            e.semantic(),
            Some(SemanticError::CoefficientCount { expected: 3, .. })
        ));
        let e = err(&star.replace("dims = 2", "dims = 2\nghost = 1"));
        assert!(matches!(
            e.semantic(),
            Some(SemanticError::Ir(IrError::OffsetBeyondGhost { .. }))
        ));
        let e = err(&star.replace("kind = \"star\"", "kind = \"star"));
        assert!(matches!(e, SpecError::Syntax { .. }));
        assert_eq!(e.location().unwrap().line, 5);
        let e = err(&star.replace("radius", "radios"));
        assert!(e.to_string().contains("radios"), "{e}");
    }
}
