//! The shorthand shapes `star` and `box`: any radius, 2D or 3D, one coefficient per distance.

use crate::ir::{Access, Assignment, BinOp, Dtype, Expr, Field, FieldRole, Kernel, Param, Target};
use serde::{Deserialize, Serialize};

/// A shorthand stencil shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShapeKind {
    /// Points on the axes up to the radius; coefficient `c[d]` for axis distance `d` (r + 1 of them).
    Star,
    /// The full cube of the radius; coefficient `c[d]` for Manhattan distance `d` (dims·r + 1 of them).
    Box,
}

impl ShapeKind {
    /// Number of coefficients a shape of this radius needs.
    pub fn coefficient_count(self, radius: usize, dims: usize) -> usize {
        match self {
            ShapeKind::Star => radius + 1,
            ShapeKind::Box => dims * radius + 1,
        }
    }

    /// What coefficient `d` weighs, for error messages.
    pub fn meaning(self) -> &'static str {
        match self {
            ShapeKind::Star => "c0 for the centre, cd for the points at distance d along an axis",
            ShapeKind::Box => "cd for the points at Manhattan distance d",
        }
    }

    /// The offsets of the shape, grouped by coefficient index.
    pub fn offsets(self, radius: usize, dims: usize) -> Vec<Vec<[i32; 3]>> {
        let r = radius as i32;
        let mut groups = vec![Vec::new(); self.coefficient_count(radius, dims)];
        let zr = if dims == 3 { r } else { 0 };
        for z in -zr..=zr {
            for y in -r..=r {
                for x in -r..=r {
                    let o = [x, y, z];
                    let nonzero = o.iter().filter(|v| **v != 0).count();
                    let d = match self {
                        ShapeKind::Star if nonzero > 1 => continue,
                        ShapeKind::Star => o.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0),
                        ShapeKind::Box => o.iter().map(|v| v.unsigned_abs()).sum(),
                    };
                    groups[d as usize].push(o);
                }
            }
        }
        groups
    }
}

/// A shorthand stencil: shape, radius, dimensions and one coefficient per distance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// Star or box.
    pub kind: ShapeKind,
    /// Largest offset.
    pub radius: usize,
    /// 2 or 3.
    pub dims: usize,
    /// `ShapeKind::coefficient_count` values.
    pub coefficients: Vec<f64>,
}

/// Builds `output[0] = Σ_d c_d · Σ_{offsets at distance d} input[offset]` with parameters `c0..`.
pub fn shape_kernel(name: &str, shape: &Shape, dtype: Dtype, input: &str, output: &str) -> Kernel {
    let Shape {
        kind,
        radius,
        dims,
        ref coefficients,
    } = *shape;
    let fields = vec![
        Field::scalar(input, dtype, radius, FieldRole::Input),
        Field::scalar(output, dtype, radius, FieldRole::Output),
    ];
    let params: Vec<Param> = coefficients
        .iter()
        .enumerate()
        .map(|(i, v)| Param {
            name: format!("c{i}"),
            value: *v,
        })
        .collect();
    let load = |offset| {
        Expr::Load(Access {
            field: 0,
            offset,
            index: 0,
        })
    };
    let mut total: Option<Expr> = None;
    for (d, group) in kind.offsets(radius, dims).into_iter().enumerate() {
        let Some(sum) = group
            .into_iter()
            .map(load)
            .reduce(|a, b| Expr::bin(BinOp::Add, a, b))
        else {
            continue;
        };
        let term = Expr::bin(BinOp::Mul, Expr::Param(d), sum);
        total = Some(match total {
            None => term,
            Some(t) => Expr::bin(BinOp::Add, t, term),
        });
    }
    Kernel {
        name: name.to_string(),
        dims,
        fields,
        params,
        temps: vec![],
        body: vec![Assignment {
            target: Target::Store(Access {
                field: 1,
                offset: [0; 3],
                index: 0,
            }),
            value: total.expect("every shape has a centre point"),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::AccessKind;

    #[test]
    fn point_counts() {
        let count = |k: ShapeKind, r, d| -> usize { k.offsets(r, d).iter().map(Vec::len).sum() };
        assert_eq!(count(ShapeKind::Star, 1, 2), 5);
        assert_eq!(count(ShapeKind::Star, 1, 3), 7);
        assert_eq!(count(ShapeKind::Star, 4, 3), 25);
        assert_eq!(count(ShapeKind::Box, 1, 3), 27);
        assert_eq!(count(ShapeKind::Box, 2, 2), 25);
        let groups = ShapeKind::Box.offsets(1, 3);
        assert_eq!(
            groups.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![1, 6, 12, 8]
        );
    }

    #[test]
    fn star_r4_kernel() {
        let shape = Shape {
            kind: ShapeKind::Star,
            radius: 4,
            dims: 3,
            coefficients: vec![1.0, 2.0, 3.0, 4.0, 5.0],
        };
        let k = shape_kernel("s", &shape, Dtype::F64, "u", "v");
        k.validate().unwrap();
        assert_eq!(k.distinct_accesses(AccessKind::Load).len(), 25);
        assert_eq!(k.min_bytes_per_lup(), 16);
        let f = k.flops();
        assert_eq!((f.add, f.mul), (24, 5));
    }
}
