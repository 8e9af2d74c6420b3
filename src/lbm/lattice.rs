//! Lattice models: discrete velocities, weights and opposite directions.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The velocity sets stencilscope generates kernels for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LatticeKind {
    /// 2D, 9 velocities.
    D2Q9,
    /// 3D, 15 velocities (rest, 6 faces, 8 corners).
    D3Q15,
    /// 3D, 19 velocities (rest, 6 faces, 12 edges).
    D3Q19,
    /// 3D, 27 velocities (the full cube).
    D3Q27,
}

impl LatticeKind {
    /// Every lattice, for messages and exhaustive tests.
    pub const ALL: [LatticeKind; 4] = [
        LatticeKind::D2Q9,
        LatticeKind::D3Q15,
        LatticeKind::D3Q19,
        LatticeKind::D3Q27,
    ];

    /// Parses `D3Q19`, `d3q19` and the like.
    pub fn parse(s: &str) -> Option<LatticeKind> {
        LatticeKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
    }

    /// The conventional name, e.g. `D3Q19`.
    pub fn name(self) -> &'static str {
        match self {
            LatticeKind::D2Q9 => "D2Q9",
            LatticeKind::D3Q15 => "D3Q15",
            LatticeKind::D3Q19 => "D3Q19",
            LatticeKind::D3Q27 => "D3Q27",
        }
    }

    /// Spatial dimensions.
    pub fn dims(self) -> usize {
        match self {
            LatticeKind::D2Q9 => 2,
            _ => 3,
        }
    }

    /// Weight of a velocity of squared length `len2` (`None` if the set has no such velocity).
    fn weight(self, len2: i32) -> Option<f64> {
        let w: &[Option<f64>] = match self {
            LatticeKind::D2Q9 => &[Some(4.0 / 9.0), Some(1.0 / 9.0), Some(1.0 / 36.0), None],
            LatticeKind::D3Q15 => &[Some(2.0 / 9.0), Some(1.0 / 9.0), None, Some(1.0 / 72.0)],
            LatticeKind::D3Q19 => &[Some(1.0 / 3.0), Some(1.0 / 18.0), Some(1.0 / 36.0), None],
            LatticeKind::D3Q27 => &[
                Some(8.0 / 27.0),
                Some(2.0 / 27.0),
                Some(1.0 / 54.0),
                Some(1.0 / 216.0),
            ],
        };
        w[len2 as usize]
    }
}

impl fmt::Display for LatticeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A lattice model: velocities `c_i`, weights `w_i` and opposites, with `c_s² = 1/3`.
///
/// Ordering: population 0 is the rest population; for `k ≥ 1`, populations `2k − 1` and `2k` are
/// opposite, and `2k − 1` is the one whose first non-zero component (x, then y, then z) is +1.
/// Pairs come in order of increasing speed, so kernels can treat a pair at once (the equilibrium
/// and the TRT split share their symmetric and antisymmetric parts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lattice {
    /// Which velocity set.
    pub kind: LatticeKind,
    /// Velocities (z is 0 in 2D).
    pub velocities: Vec<[i32; 3]>,
    /// Weights, summing to 1.
    pub weights: Vec<f64>,
    /// `opposite[i]` is the index of `-c_i`.
    pub opposite: Vec<usize>,
}

impl Lattice {
    /// Builds the lattice model.
    pub fn new(kind: LatticeKind) -> Lattice {
        let dims = kind.dims();
        let zr = if dims == 3 { -1..=1 } else { 0..=0 };
        // Representatives: the velocities whose first non-zero component is +1.
        let mut reps: Vec<[i32; 3]> = Vec::new();
        for z in zr {
            for y in -1..=1 {
                for x in -1..=1 {
                    let c = [x, y, z];
                    let first = c.iter().find(|v| **v != 0).copied();
                    if first == Some(1) && kind.weight(len2(c)).is_some() {
                        reps.push(c);
                    }
                }
            }
        }
        // Increasing speed, then a fixed order: x-axis before y before z, lexicographic after.
        reps.sort_by_key(|c| (len2(*c), [-c[0], -c[1].abs(), -c[2].abs(), -c[1], -c[2]]));
        let mut velocities = vec![[0, 0, 0]];
        for c in reps {
            velocities.push(c);
            velocities.push([-c[0], -c[1], -c[2]]);
        }
        let weights: Vec<f64> = velocities
            .iter()
            .map(|c| kind.weight(len2(*c)).unwrap_or(0.0))
            .collect();
        let opposite = (0..velocities.len())
            .map(|i| {
                if i == 0 {
                    0
                } else if i % 2 == 1 {
                    i + 1
                } else {
                    i - 1
                }
            })
            .collect();
        Lattice {
            kind,
            velocities,
            weights,
            opposite,
        }
    }

    /// Number of velocities Q.
    pub fn q(&self) -> usize {
        self.velocities.len()
    }

    /// Spatial dimensions.
    pub fn dims(&self) -> usize {
        self.kind.dims()
    }

    /// The opposite pairs `(i, opposite(i))`, one entry per pair, representative first.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (1..self.q()).step_by(2).map(|i| (i, i + 1))
    }

    /// The second-order equilibrium `w_i ρ (1 + 3 c·u + 9/2 (c·u)² − 3/2 u²)` (host side, f64).
    pub fn equilibrium(&self, rho: f64, u: [f64; 3]) -> Vec<f64> {
        let usq = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        self.velocities
            .iter()
            .zip(&self.weights)
            .map(|(c, w)| {
                let cu = c[0] as f64 * u[0] + c[1] as f64 * u[1] + c[2] as f64 * u[2];
                w * rho * (1.0 + 3.0 * cu + 4.5 * cu * cu - 1.5 * usq)
            })
            .collect()
    }

    /// Density and momentum `(ρ, Σ c_i f_i)` of a set of populations (host side, f64).
    pub fn moments(&self, f: &[f64]) -> (f64, [f64; 3]) {
        let mut rho = 0.0;
        let mut j = [0.0; 3];
        for (c, fi) in self.velocities.iter().zip(f) {
            rho += fi;
            for d in 0..3 {
                j[d] += c[d] as f64 * fi;
            }
        }
        (rho, j)
    }
}

/// Squared length of a velocity.
fn len2(c: [i32; 3]) -> i32 {
    c.iter().map(|v| v * v).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_weights_and_isotropy() {
        for (kind, q) in LatticeKind::ALL.into_iter().zip([9, 15, 19, 27]) {
            let l = Lattice::new(kind);
            assert_eq!(l.q(), q, "{kind}");
            assert_eq!(l.velocities[0], [0, 0, 0]);
            let sum: f64 = l.weights.iter().sum();
            assert!((sum - 1.0).abs() < 1e-15, "{kind}: weights sum to {sum}");
            // Second and fourth moments of the weights: Σ w c_a c_b = δ_ab/3 and
            // Σ w c_a² c_b² = 1/9 (a ≠ b), 1/3 (a = b), which the equilibrium relies on.
            let dims = kind.dims();
            for a in 0..dims {
                for b in 0..dims {
                    let m2: f64 = l
                        .velocities
                        .iter()
                        .zip(&l.weights)
                        .map(|(c, w)| w * (c[a] * c[b]) as f64)
                        .sum();
                    let want = if a == b { 1.0 / 3.0 } else { 0.0 };
                    assert!((m2 - want).abs() < 1e-15, "{kind} second moment {a}{b}");
                    let m4: f64 = l
                        .velocities
                        .iter()
                        .zip(&l.weights)
                        .map(|(c, w)| w * (c[a] * c[a] * c[b] * c[b]) as f64)
                        .sum();
                    let want = if a == b { 1.0 / 3.0 } else { 1.0 / 9.0 };
                    assert!((m4 - want).abs() < 1e-15, "{kind} fourth moment {a}{b}");
                }
            }
            for i in 0..q {
                let (c, o) = (l.velocities[i], l.velocities[l.opposite[i]]);
                assert_eq!([c[0] + o[0], c[1] + o[1], c[2] + o[2]], [0, 0, 0]);
                assert_eq!(l.opposite[l.opposite[i]], i);
                if dims == 2 {
                    assert_eq!(c[2], 0);
                }
            }
            for (i, _) in l.pairs() {
                let c = l.velocities[i];
                assert_eq!(c.iter().find(|v| **v != 0), Some(&1));
            }
            let mut sorted = l.velocities.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), q, "{kind}: velocities are distinct");
        }
    }

    #[test]
    fn equilibrium_has_the_right_moments() {
        let l = Lattice::new(LatticeKind::D3Q19);
        let u = [0.03, -0.02, 0.01];
        let f = l.equilibrium(1.2, u);
        let (rho, j) = l.moments(&f);
        assert!((rho - 1.2).abs() < 1e-15);
        for d in 0..3 {
            assert!((j[d] - 1.2 * u[d]).abs() < 1e-15);
        }
        assert_eq!(LatticeKind::parse("d3q19"), Some(LatticeKind::D3Q19));
        assert_eq!(LatticeKind::parse("D3Q13"), None);
    }
}
