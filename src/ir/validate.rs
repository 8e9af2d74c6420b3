//! Semantic validation of a kernel, its own stage so that every front end (files, API, LBM) shares it.

use super::expr::Expr;
use super::field::FieldRole;
use super::kernel::{Access, Kernel, Target};
use std::collections::BTreeMap;

/// What is wrong with a kernel. `stmt` is the index of the offending statement in `Kernel::body`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IrError {
    /// Dimensions other than 2 or 3.
    #[error("kernel has {0} dimensions; stencilscope supports 2 or 3")]
    BadDims(usize),
    /// The kernel has no statement or no store.
    #[error("empty update: the kernel stores no field element (write at least one `field[offsets] = expression`)")]
    EmptyUpdate,
    /// Two fields share a name.
    #[error("field `{0}` is declared twice")]
    DuplicateField(String),
    /// Fields of different element types.
    #[error("field `{field}` is {found} but the kernel's element type is {expected}; all fields must share one dtype")]
    MixedDtype {
        /// The odd field.
        field: String,
        /// Its dtype.
        found: String,
        /// The first field's dtype.
        expected: String,
    },
    /// A field with zero components.
    #[error("field `{0}` has 0 components; use at least 1")]
    NoComponents(String),
    /// An access names a field index that does not exist.
    #[error("statement {stmt}: access to unknown field #{field}")]
    UnknownField {
        /// Statement index.
        stmt: usize,
        /// Field index.
        field: usize,
    },
    /// An offset along an axis the kernel does not have.
    #[error("statement {stmt}: access to `{field}` has a z offset of {dz} in a 2D kernel")]
    DimensionMismatch {
        /// Statement index.
        stmt: usize,
        /// Field name.
        field: String,
        /// The z offset.
        dz: i32,
    },
    /// A component index beyond the field's index dimension.
    #[error("statement {stmt}: component {index} of `{field}` does not exist (it has {components}, valid are 0..{components})")]
    ComponentOutOfRange {
        /// Statement index.
        stmt: usize,
        /// Field name.
        field: String,
        /// Requested component.
        index: usize,
        /// Available components.
        components: usize,
    },
    /// An offset reaches beyond the ghost layers.
    #[error("statement {stmt}: access to `{field}` at offset {offset:?} reaches {radius} points out, but `{field}` has only {ghost} ghost layer(s); raise `ghost` to at least {radius}")]
    OffsetBeyondGhost {
        /// Statement index.
        stmt: usize,
        /// Field name.
        field: String,
        /// The offset.
        offset: [i32; 3],
        /// Its radius.
        radius: usize,
        /// The field's ghost layers.
        ghost: usize,
    },
    /// A store into a field declared as input.
    #[error("statement {stmt}: store into input field `{field}`; declare it `output` (or `inout` to update in place)")]
    StoreIntoInput {
        /// Statement index.
        stmt: usize,
        /// Field name.
        field: String,
    },
    /// A load from a field declared as output.
    #[error("statement {stmt}: load from output field `{field}`; declare it `inout` to read and write it")]
    LoadFromOutput {
        /// Statement index.
        stmt: usize,
        /// Field name.
        field: String,
    },
    /// Two points would write (or read and write) the same element: the kernel would race.
    #[error("statement {stmt}: component {index} of `{field}` is accessed at offsets {first:?} and {second:?}; a written component must be accessed at one offset only, or neighbouring points race")]
    RacingAccess {
        /// Statement index.
        stmt: usize,
        /// Field name.
        field: String,
        /// Component.
        index: usize,
        /// First offset seen.
        first: [i32; 3],
        /// Conflicting offset.
        second: [i32; 3],
    },
    /// NaN or infinity as literal.
    #[error("statement {stmt}: literal {value} is not finite")]
    NonFiniteLiteral {
        /// Statement index.
        stmt: usize,
        /// The value.
        value: f64,
    },
    /// NaN or infinity as parameter value.
    #[error("parameter `{name}` = {value} is not finite")]
    NonFiniteParam {
        /// Parameter name.
        name: String,
        /// The value.
        value: f64,
    },
    /// A parameter index that does not exist.
    #[error("statement {stmt}: unknown parameter #{index}")]
    UnknownParam {
        /// Statement index.
        stmt: usize,
        /// Parameter index.
        index: usize,
    },
    /// A temporary read before anything was assigned to it.
    #[error("statement {stmt}: temporary `{name}` is read before it is assigned")]
    TempBeforeAssignment {
        /// Statement index.
        stmt: usize,
        /// Temporary name.
        name: String,
    },
}

impl IrError {
    /// The statement the error is about, if any.
    pub fn statement(&self) -> Option<usize> {
        use IrError::*;
        match self {
            UnknownField { stmt, .. }
            | DimensionMismatch { stmt, .. }
            | ComponentOutOfRange { stmt, .. }
            | OffsetBeyondGhost { stmt, .. }
            | StoreIntoInput { stmt, .. }
            | LoadFromOutput { stmt, .. }
            | RacingAccess { stmt, .. }
            | NonFiniteLiteral { stmt, .. }
            | UnknownParam { stmt, .. }
            | TempBeforeAssignment { stmt, .. } => Some(*stmt),
            _ => None,
        }
    }
}

impl Kernel {
    /// Checks every rule the reference, the emitters and the footprint rely on.
    pub fn validate(&self) -> Result<(), IrError> {
        if self.dims != 2 && self.dims != 3 {
            return Err(IrError::BadDims(self.dims));
        }
        for (i, f) in self.fields.iter().enumerate() {
            if self.fields[..i].iter().any(|g| g.name == f.name) {
                return Err(IrError::DuplicateField(f.name.clone()));
            }
            if f.components == 0 {
                return Err(IrError::NoComponents(f.name.clone()));
            }
            let first = self.fields[0].dtype;
            if f.dtype != first {
                return Err(IrError::MixedDtype {
                    field: f.name.clone(),
                    found: f.dtype.to_string(),
                    expected: first.to_string(),
                });
            }
        }
        for p in &self.params {
            if !p.value.is_finite() {
                return Err(IrError::NonFiniteParam {
                    name: p.name.clone(),
                    value: p.value,
                });
            }
        }
        let mut assigned = vec![false; self.temps.len()];
        // Per written (field, component): the one offset at which it may be touched.
        let mut touched: BTreeMap<(usize, usize), [i32; 3]> = BTreeMap::new();
        let mut any_store = false;
        for (stmt, a) in self.body.iter().enumerate() {
            let mut err = None;
            a.value.visit(&mut |e| {
                if err.is_some() {
                    return;
                }
                err = match e {
                    Expr::Lit(v) if !v.is_finite() => {
                        Some(IrError::NonFiniteLiteral { stmt, value: *v })
                    }
                    Expr::Param(i) if *i >= self.params.len() => {
                        Some(IrError::UnknownParam { stmt, index: *i })
                    }
                    Expr::Temp(t) if !assigned.get(*t).copied().unwrap_or(false) => {
                        Some(IrError::TempBeforeAssignment {
                            stmt,
                            name: self.temps.get(*t).cloned().unwrap_or_default(),
                        })
                    }
                    Expr::Load(acc) => self.check_access(stmt, acc, false).err(),
                    _ => None,
                };
            });
            if let Some(e) = err {
                return Err(e);
            }
            match a.target {
                Target::Temp(t) => {
                    if t >= assigned.len() {
                        return Err(IrError::TempBeforeAssignment {
                            stmt,
                            name: format!("#{t}"),
                        });
                    }
                    assigned[t] = true;
                }
                Target::Store(acc) => {
                    self.check_access(stmt, &acc, true)?;
                    any_store = true;
                }
            }
        }
        if !any_store {
            return Err(IrError::EmptyUpdate);
        }
        // Race freedom: a written component is touched (loaded or stored) at one offset only.
        for (stmt, a) in self.body.iter().enumerate() {
            let mut accs = a.value.loads();
            if let Target::Store(s) = a.target {
                accs.push(s);
            }
            for acc in accs {
                let role = self.fields[acc.field].role;
                let is_written = role != FieldRole::Input;
                if !is_written {
                    continue;
                }
                let key = (acc.field, acc.index);
                match touched.get(&key) {
                    Some(first) if *first != acc.offset => {
                        return Err(IrError::RacingAccess {
                            stmt,
                            field: self.fields[acc.field].name.clone(),
                            index: acc.index,
                            first: *first,
                            second: acc.offset,
                        })
                    }
                    Some(_) => {}
                    None => {
                        touched.insert(key, acc.offset);
                    }
                }
            }
        }
        Ok(())
    }

    fn check_access(&self, stmt: usize, acc: &Access, store: bool) -> Result<(), IrError> {
        let f = self.fields.get(acc.field).ok_or(IrError::UnknownField {
            stmt,
            field: acc.field,
        })?;
        if self.dims == 2 && acc.offset[2] != 0 {
            return Err(IrError::DimensionMismatch {
                stmt,
                field: f.name.clone(),
                dz: acc.offset[2],
            });
        }
        if acc.index >= f.components {
            return Err(IrError::ComponentOutOfRange {
                stmt,
                field: f.name.clone(),
                index: acc.index,
                components: f.components,
            });
        }
        if acc.radius() > f.ghost {
            return Err(IrError::OffsetBeyondGhost {
                stmt,
                field: f.name.clone(),
                offset: acc.offset,
                radius: acc.radius(),
                ghost: f.ghost,
            });
        }
        match (store, f.role) {
            (true, FieldRole::Input) => Err(IrError::StoreIntoInput {
                stmt,
                field: f.name.clone(),
            }),
            (false, FieldRole::Output) => Err(IrError::LoadFromOutput {
                stmt,
                field: f.name.clone(),
            }),
            _ => Ok(()),
        }
    }
}
