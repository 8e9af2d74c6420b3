//! Affine address expressions over thread, block and fold indices.
//!
//! The emitters print these objects and the footprint visitor evaluates them, so what is estimated
//! is exactly what is emitted.

use crate::config::LaunchConfig;
use crate::ir::{Access, FieldLayout};
use serde::{Deserialize, Serialize};
use std::fmt;

mod sharing;
pub use sharing::LoadSharing;

/// The index variables of a generated kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Var {
    /// Thread index in x.
    Tx,
    /// Thread index in y.
    Ty,
    /// Thread index in z.
    Tz,
    /// Block index in x.
    Bx,
    /// Block index in y.
    By,
    /// Block index in z.
    Bz,
    /// Fold index in x (`i < fx`).
    I,
    /// Fold index in y (`j < fy`).
    J,
    /// Fold index in z (`k < fz`).
    K,
}

impl Var {
    /// All variables, in coefficient order.
    pub const ALL: [Var; 9] = [
        Var::Tx,
        Var::Ty,
        Var::Tz,
        Var::Bx,
        Var::By,
        Var::Bz,
        Var::I,
        Var::J,
        Var::K,
    ];

    /// Position in `AffineExpr::coeffs`.
    pub fn slot(self) -> usize {
        self as usize
    }

    /// Thread, block and fold variable of dimension `d`.
    pub fn of_dim(d: usize) -> (Var, Var, Var) {
        (Var::ALL[d], Var::ALL[3 + d], Var::ALL[6 + d])
    }

    /// Conventional name in emitted code.
    pub fn name(self) -> &'static str {
        ["tx", "ty", "tz", "bx", "by", "bz", "i", "j", "k"][self.slot()]
    }
}

/// Values of the nine index variables, in `Var::ALL` order.
pub type VarValues = [i64; 9];

/// `constant + Σ coeffs[v] · v` over the index variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct AffineExpr {
    /// Constant term.
    pub constant: i64,
    /// Coefficient per variable, in `Var::ALL` order.
    pub coeffs: [i64; 9],
}

impl AffineExpr {
    /// A constant.
    pub fn constant(c: i64) -> AffineExpr {
        AffineExpr {
            constant: c,
            coeffs: [0; 9],
        }
    }

    /// Evaluates at the given variable values.
    pub fn eval(&self, v: &VarValues) -> i64 {
        self.constant + self.coeffs.iter().zip(v).map(|(c, x)| c * x).sum::<i64>()
    }

    /// `self · s`.
    pub fn scale(&self, s: i64) -> AffineExpr {
        AffineExpr {
            constant: self.constant * s,
            coeffs: self.coeffs.map(|c| c * s),
        }
    }

    /// `self + o`.
    pub fn add(&self, o: &AffineExpr) -> AffineExpr {
        let mut coeffs = self.coeffs;
        for (c, d) in coeffs.iter_mut().zip(o.coeffs) {
            *c += d;
        }
        AffineExpr {
            constant: self.constant + o.constant,
            coeffs,
        }
    }

    /// `self + c`.
    pub fn offset(&self, c: i64) -> AffineExpr {
        AffineExpr {
            constant: self.constant + c,
            coeffs: self.coeffs,
        }
    }

    /// The same expression without its constant term.
    pub fn variable_part(&self) -> AffineExpr {
        AffineExpr {
            constant: 0,
            coeffs: self.coeffs,
        }
    }

    /// The expression with `var` fixed to `value` (its term folded into the constant).
    pub fn bind(&self, var: Var, value: i64) -> AffineExpr {
        let mut e = *self;
        e.constant += e.coeffs[var.slot()] * value;
        e.coeffs[var.slot()] = 0;
        e
    }

    /// The expression at one fold point: the fold indices `i, j, k` fixed to `fold`. Emitters
    /// unroll the fold loops, so every access becomes a per-thread base plus this constant.
    pub fn at_fold_point(&self, fold: [usize; 3]) -> AffineExpr {
        self.bind(Var::I, fold[0] as i64)
            .bind(Var::J, fold[1] as i64)
            .bind(Var::K, fold[2] as i64)
    }

    /// The largest value over `0 ≤ v < upper[v]` for every variable (all bounds at least 1).
    pub fn max_over(&self, upper: &VarValues) -> i64 {
        self.constant
            + self
                .coeffs
                .iter()
                .zip(upper)
                .map(|(c, u)| if *c > 0 { c * (u - 1) } else { 0 })
                .sum::<i64>()
    }

    /// The variables with a non-zero coefficient.
    pub fn terms(&self) -> impl Iterator<Item = (Var, i64)> + '_ {
        Var::ALL
            .iter()
            .zip(self.coeffs)
            .filter(|(_, c)| *c != 0)
            .map(|(v, c)| (*v, c))
    }
}

impl fmt::Display for AffineExpr {
    /// Prints as C-like source, e.g. `4 + 1*tx + 128*bx`; variables use `Var::name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        if self.constant != 0 || self.terms().next().is_none() {
            write!(f, "{}", self.constant)?;
            first = false;
        }
        for (v, c) in self.terms() {
            if first {
                write!(f, "{c}*{}", v.name())?;
            } else if c < 0 {
                write!(f, " - {}*{}", -c, v.name())?;
            } else {
                write!(f, " + {c}*{}", v.name())?;
            }
            first = false;
        }
        Ok(())
    }
}

/// Lattice coordinate of dimension `d` computed by a thread: `B·b·f + t + i·b`.
pub fn coordinate(config: &LaunchConfig, d: usize) -> AffineExpr {
    let (t, b, i) = Var::of_dim(d);
    let mut e = AffineExpr::default();
    e.coeffs[t.slot()] = 1;
    e.coeffs[b.slot()] = (config.block[d] * config.fold[d]) as i64;
    e.coeffs[i.slot()] = config.block[d] as i64;
    e
}

/// Exclusive upper bounds of the nine variables for `config` on `domain`: threads per block,
/// blocks per grid and fold factors.
pub fn var_bounds(config: &LaunchConfig, domain: &crate::ir::Domain) -> VarValues {
    let g = config.grid(domain);
    let mut v = [1; 9];
    for d in 0..3 {
        v[d] = config.block[d] as i64;
        v[3 + d] = g[d] as i64;
        v[6 + d] = config.fold[d] as i64;
    }
    v
}

/// Element index of `access` into its field's buffer, for the thread/block/fold point.
pub fn element_index(layout: &FieldLayout, access: &Access, config: &LaunchConfig) -> AffineExpr {
    let mut e = AffineExpr::constant(
        (access.index * layout.stride_q) as i64
            + (0..3)
                .map(|d| {
                    (layout.ghost[d] as i64 + access.offset[d] as i64) * layout.stride[d] as i64
                })
                .sum::<i64>(),
    );
    for d in 0..3 {
        e = e.add(&coordinate(config, d).scale(layout.stride[d] as i64));
    }
    e
}

/// Byte address of `access` relative to its (aligned) buffer start.
pub fn byte_address(layout: &FieldLayout, access: &Access, config: &LaunchConfig) -> AffineExpr {
    element_index(layout, access, config).scale(layout.elem_size as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Domain, Dtype, Field, FieldRole};

    #[test]
    fn address_matches_layout_index() {
        let f = Field::scalar("u", Dtype::F64, 2, FieldRole::Input);
        let dom = Domain::new3(40, 12, 10);
        let l = f.layout_for(&dom);
        let c = LaunchConfig::new([8, 2, 2], [2, 1, 3]);
        let acc = Access {
            field: 0,
            offset: [-1, 2, 0],
            index: 0,
        };
        let e = element_index(&l, &acc, &c);
        // tx=3, ty=1, tz=0, bx=1, by=2, bz=0, i=1, j=0, k=2
        let v: VarValues = [3, 1, 0, 1, 2, 0, 1, 0, 2];
        let x = 16 + 3 + 8;
        let y = 4 + 1;
        let z = 2 * 2;
        assert_eq!(e.eval(&v), l.index(x - 1, y + 2, z, 0) as i64);
        assert_eq!(byte_address(&l, &acc, &c).eval(&v), 8 * e.eval(&v));
        assert_eq!(coordinate(&c, 0).to_string(), "1*tx + 16*bx + 8*i");
        // Binding the fold indices keeps the value and moves their terms into the constant.
        let p = e.at_fold_point([1, 0, 2]);
        assert_eq!(p.coeffs[Var::I.slot()], 0);
        assert_eq!(p.eval(&v), e.eval(&v));
        assert_eq!(
            p.variable_part(),
            e.at_fold_point([0, 0, 0]).variable_part()
        );
        let b = var_bounds(&c, &dom);
        assert_eq!(b, [8, 2, 2, 3, 6, 2, 2, 1, 3]);
        assert_eq!(coordinate(&c, 0).max_over(&b), 7 + 2 * 16 + 8);
    }
}
