use super::expr::{BinOp, Expr, UnOp};
use super::field::{Dtype, Field};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Whether an access reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    /// A read.
    Load,
    /// A write.
    Store,
}

/// One element of a field relative to the point being updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Access {
    /// Index into `Kernel::fields`.
    pub field: usize,
    /// Spatial offset (x, y, z); z is 0 in 2D.
    pub offset: [i32; 3],
    /// Component of the index dimension (0 for scalar fields).
    pub index: usize,
}

impl Access {
    /// The largest absolute offset over all dimensions.
    pub fn radius(&self) -> usize {
        self.offset
            .iter()
            .map(|o| o.unsigned_abs() as usize)
            .max()
            .unwrap_or(0)
    }
}

/// A named scalar parameter with its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// Name used in expressions.
    pub name: String,
    /// Value used by the reference and passed to emitted kernels.
    pub value: f64,
}

/// What an assignment writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A field element.
    Store(Access),
    /// A temporary, by index into `Kernel::temps`.
    Temp(usize),
}

/// `target = value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    /// What is written.
    pub target: Target,
    /// The right-hand side.
    pub value: Expr,
}

/// A lattice-update kernel: executed once per interior point of the domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// Kernel name (an identifier).
    pub name: String,
    /// 2 or 3 spatial dimensions.
    pub dims: usize,
    /// The fields.
    pub fields: Vec<Field>,
    /// Named parameters.
    pub params: Vec<Param>,
    /// Names of temporaries (SSA-like, but reassignment is allowed).
    pub temps: Vec<String>,
    /// Statements, executed in order for each point.
    pub body: Vec<Assignment>,
}

/// Floating-point operations per lattice update, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FlopCounts {
    /// Additions and subtractions.
    pub add: usize,
    /// Multiplications.
    pub mul: usize,
    /// Divisions.
    pub div: usize,
    /// Fused multiply-adds (two flops each).
    pub fma: usize,
    /// Square roots.
    pub sqrt: usize,
    /// Minima, maxima, negations and selects.
    pub other: usize,
}

impl FlopCounts {
    /// Total flops, counting an fma as two and every other operation as one.
    pub fn total(&self) -> usize {
        self.add + self.mul + self.div + 2 * self.fma + self.sqrt + self.other
    }
}

impl Kernel {
    /// The common element type of all fields (`F64` when there are none).
    pub fn dtype(&self) -> Dtype {
        self.fields.first().map(|f| f.dtype).unwrap_or(Dtype::F64)
    }

    /// Sets the element type of every field.
    pub fn set_dtype(&mut self, dtype: Dtype) {
        for f in &mut self.fields {
            f.dtype = dtype;
        }
    }

    /// Index of the field called `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// Whether every store's value depends on every element the kernel loads (through the
    /// temporaries): an LBM collision, whose populations all enter the density, and a stencil's
    /// one output. A compiled kernel then issues its stores only once all its loads are back,
    /// where a copy stores each element as its load returns, which keeps records partly written
    /// longer (`MachineModel::partial_store_loss_after_loads`). False without loads or stores.
    pub fn stores_need_every_load(&self) -> bool {
        let loads = self.distinct_accesses(AccessKind::Load);
        if loads.is_empty() {
            return false;
        }
        // The loads each temporary's current value depends on, as a set of indices in `loads`.
        let mut temps: Vec<Vec<bool>> = vec![vec![false; loads.len()]; self.temps.len()];
        let mut stores = 0;
        for a in &self.body {
            let mut needs = vec![false; loads.len()];
            a.value.visit(&mut |e| match e {
                Expr::Load(l) => {
                    if let Ok(k) = loads.binary_search(l) {
                        needs[k] = true;
                    }
                }
                Expr::Temp(t) => {
                    if let Some(d) = temps.get(*t) {
                        for (n, &x) in needs.iter_mut().zip(d) {
                            *n |= x;
                        }
                    }
                }
                _ => {}
            });
            match a.target {
                Target::Temp(t) => {
                    if let Some(d) = temps.get_mut(t) {
                        *d = needs;
                    }
                }
                Target::Store(_) => {
                    if needs.iter().any(|&n| !n) {
                        return false;
                    }
                    stores += 1;
                }
            }
        }
        stores > 0
    }

    /// Every access in program order, each with its kind (loads of a statement before its store).
    pub fn accesses(&self) -> Vec<(Access, AccessKind)> {
        let mut out = Vec::new();
        for a in &self.body {
            // The loads as `Expr::loads` lists them, without a vector per statement.
            a.value.visit(&mut |e| {
                if let Expr::Load(l) = e {
                    out.push((*l, AccessKind::Load));
                }
            });
            if let Target::Store(s) = a.target {
                out.push((s, AccessKind::Store));
            }
        }
        out
    }

    /// Distinct accesses of one kind, sorted (duplicates in the body are one memory location).
    pub fn distinct_accesses(&self, kind: AccessKind) -> Vec<Access> {
        let set: BTreeSet<Access> = self
            .accesses()
            .into_iter()
            .filter(|(_, k)| *k == kind)
            .map(|(a, _)| a)
            .collect();
        set.into_iter().collect()
    }

    /// Flops per lattice update, by kind.
    pub fn flops(&self) -> FlopCounts {
        let mut c = FlopCounts::default();
        for a in &self.body {
            a.value.visit(&mut |e| match e {
                Expr::Binary(BinOp::Add | BinOp::Sub, ..) => c.add += 1,
                Expr::Binary(BinOp::Mul, ..) => c.mul += 1,
                Expr::Binary(BinOp::Div, ..) => c.div += 1,
                Expr::Binary(BinOp::Min | BinOp::Max, ..) => c.other += 1,
                Expr::Fma(..) => c.fma += 1,
                Expr::Unary(UnOp::Sqrt, _) => c.sqrt += 1,
                Expr::Unary(UnOp::Neg, _) | Expr::Select { .. } => c.other += 1,
                _ => {}
            });
        }
        c
    }

    /// The minimal bytes per lattice update: every loaded (field, component) read once and every
    /// stored one written once.
    pub fn min_bytes_per_lup(&self) -> usize {
        let comps = |kind| -> BTreeSet<(usize, usize)> {
            self.distinct_accesses(kind)
                .iter()
                .map(|a| (a.field, a.index))
                .collect()
        };
        let size = |s: &BTreeSet<(usize, usize)>| -> usize {
            s.iter().map(|(f, _)| self.fields[*f].dtype.size()).sum()
        };
        size(&comps(AccessKind::Load)) + size(&comps(AccessKind::Store))
    }

    /// The largest offset radius of any access.
    pub fn radius(&self) -> usize {
        self.accesses()
            .iter()
            .map(|(a, _)| a.radius())
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::FieldRole;

    fn copy_kernel() -> Kernel {
        Kernel {
            name: "copy".into(),
            dims: 3,
            fields: vec![
                Field::scalar("src", Dtype::F64, 1, FieldRole::Input),
                Field::scalar("dst", Dtype::F64, 1, FieldRole::Output),
            ],
            params: vec![],
            temps: vec![],
            body: vec![Assignment {
                target: Target::Store(Access {
                    field: 1,
                    offset: [0; 3],
                    index: 0,
                }),
                value: Expr::bin(
                    BinOp::Add,
                    Expr::Load(Access {
                        field: 0,
                        offset: [1, 0, 0],
                        index: 0,
                    }),
                    Expr::Load(Access {
                        field: 0,
                        offset: [-1, 0, 0],
                        index: 0,
                    }),
                ),
            }],
        }
    }

    #[test]
    fn min_bytes_counts_each_component_once() {
        let mut k = copy_kernel();
        assert_eq!(k.min_bytes_per_lup(), 16);
        k.set_dtype(Dtype::F32);
        assert_eq!(k.min_bytes_per_lup(), 8);
        assert_eq!(k.flops().total(), 1);
        assert_eq!(k.radius(), 1);
        assert_eq!(k.accesses().len(), 3);
        assert_eq!(k.distinct_accesses(AccessKind::Load).len(), 2);
    }

    #[test]
    fn stores_need_every_load_follows_the_temporaries() {
        let load = |index| {
            Expr::Load(Access {
                field: 0,
                offset: [0; 3],
                index,
            })
        };
        let store = |index, value| Assignment {
            target: Target::Store(Access {
                field: 1,
                offset: [0; 3],
                index,
            }),
            value,
        };
        // One store of both loads: yes.
        assert!(copy_kernel().stores_need_every_load());
        // A record copied word by word: each store needs its own load only.
        let mut k = copy_kernel();
        k.body = vec![store(0, load(0)), store(1, load(1))];
        assert!(!k.stores_need_every_load());
        // Both stores through a temporary holding the sum of both loads (a density): yes.
        k.temps = vec!["rho".into()];
        k.body = vec![
            Assignment {
                target: Target::Temp(0),
                value: Expr::bin(BinOp::Add, load(0), load(1)),
            },
            store(0, Expr::bin(BinOp::Mul, load(0), Expr::Temp(0))),
            store(1, Expr::Temp(0)),
        ];
        assert!(k.stores_need_every_load());
        // The temporary reassigned to one load before the second store: no.
        k.body.insert(
            2,
            Assignment {
                target: Target::Temp(0),
                value: load(1),
            },
        );
        assert!(!k.stores_need_every_load());
        // Nothing loaded: no.
        k.body = vec![store(0, Expr::Lit(1.0))];
        assert!(!k.stores_need_every_load());
    }
}
