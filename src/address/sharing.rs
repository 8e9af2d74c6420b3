//! Loads shared between the fold points of one thread.
//!
//! Unrolled fold points of a thread often read the same element (a radius-4 star with `bx = 2`
//! folded in x reads `u[x+2]` at point 0 and `u[x]` at point 1). Compilers load such an element
//! once per thread (the inputs are `const restrict`; on an H200 the warp load requests show it),
//! so the emitters load it once explicitly into a temporary and the memory program counts one
//! load instruction: both take the decision from [`LoadSharing`], so code and model agree.

use super::element_index;
use crate::config::LaunchConfig;
use crate::ir::{Access, AccessKind, Domain, FieldLayout, Kernel};

/// Which loads of each fold point are issued and which reuse an earlier fold point's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSharing {
    /// The distinct load accesses of one point, in order of first appearance (the *slots*).
    pub loads: Vec<Access>,
    /// Fold points `(i, j, k)`, `i` fastest: all of them, also those outside the domain.
    pub points: Vec<[usize; 3]>,
    /// Per point and slot (`point · loads.len() + slot`): `None` where the point issues the load,
    /// else the `(point, slot)` that issued the element it reads.
    pub source: Vec<Option<(usize, usize)>>,
    /// Per dimension: whether its fold points are guarded (the domain is not a multiple of the
    /// tile), which limits the sharing.
    pub guarded: [bool; 3],
}

impl LoadSharing {
    /// Plans the loads of `kernel` under `config` on `domain` (`layouts` are the fields' layouts
    /// for `domain`). A fold point reuses an element an earlier point of the thread loaded only
    /// where that point is inside the domain whenever this one is: along a dimension whose fold
    /// points are guarded (the domain is not a multiple of the tile), only from points at the same
    /// or a lower fold index.
    pub fn new(
        kernel: &Kernel,
        layouts: &[FieldLayout],
        config: &LaunchConfig,
        domain: &Domain,
    ) -> LoadSharing {
        LoadSharing::of_accesses(&kernel.accesses(), layouts, config, domain)
    }

    /// As [`LoadSharing::new`], for the kernel's accesses listed already ([`Kernel::accesses`]).
    pub fn of_accesses(
        accesses: &[(Access, AccessKind)],
        layouts: &[FieldLayout],
        config: &LaunchConfig,
        domain: &Domain,
    ) -> LoadSharing {
        let mut loads: Vec<Access> = Vec::new();
        for &(a, kind) in accesses {
            if kind == AccessKind::Load && !loads.contains(&a) {
                loads.push(a);
            }
        }
        let tile = config.tile();
        let guard = [0, 1, 2].map(|d| !domain.size[d].is_multiple_of(tile[d]));
        let [fx, fy, fz] = config.fold;
        let points: Vec<[usize; 3]> = (0..fz)
            .flat_map(|k| (0..fy).flat_map(move |j| (0..fx).map(move |i| [i, j, k])))
            .collect();
        let exprs: Vec<_> = loads
            .iter()
            .map(|a| element_index(&layouts[a.field], a, config))
            .collect();
        // Element (field, index constant) → the chain of (point, slot)s that issued it, in issue
        // order: an open-addressing table of chain heads and tails, sized once, over one flat
        // `next` array (rank runs this per configuration; a map of vectors allocated per key).
        // The per-thread part of an element index is the same for every access of a field, so
        // equal constants are equal elements.
        let slots = loads.len();
        let n = points.len() * slots;
        let mask = (2 * n).next_power_of_two().max(2) - 1;
        // (field, constant, first issuer, last issuer); `NONE` marks an empty entry.
        const NONE: u32 = u32::MAX;
        let mut table: Vec<(usize, i64, u32, u32)> = vec![(0, 0, NONE, NONE); mask + 1];
        let mut next = vec![NONE; n];
        let mut source = Vec::with_capacity(n);
        for (pi, p) in points.iter().enumerate() {
            for (s, a) in loads.iter().enumerate() {
                let c = exprs[s].at_fold_point(*p).constant;
                let h = (c as u64 ^ ((a.field as u64) << 56)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut e = (h >> 32) as usize & mask;
                while table[e].2 != NONE && (table[e].0, table[e].1) != (a.field, c) {
                    e = (e + 1) & mask;
                }
                let covers = |q: &[usize; 3]| (0..3).all(|d| !guard[d] || q[d] <= p[d]);
                let mut from = None;
                let mut j = table[e].2;
                while j != NONE {
                    let (qi, qs) = (j as usize / slots, j as usize % slots);
                    if qi != pi && covers(&points[qi]) {
                        from = Some((qi, qs));
                        break;
                    }
                    j = next[j as usize];
                }
                if from.is_none() {
                    // Two slots of one point never share an element: the accesses differ.
                    let i = (pi * slots + s) as u32;
                    if table[e].2 == NONE {
                        table[e] = (a.field, c, i, i);
                    } else {
                        next[table[e].3 as usize] = i;
                        table[e].3 = i;
                    }
                }
                source.push(from);
            }
        }
        LoadSharing {
            loads,
            points,
            source,
            guarded: guard,
        }
    }

    /// Where slot `slot` of fold point `point` gets its value (`None`: issued there).
    pub fn source(&self, point: usize, slot: usize) -> Option<(usize, usize)> {
        self.source[point * self.loads.len() + slot]
    }

    /// Index of fold point `p`.
    pub fn point_index(&self, p: [usize; 3]) -> usize {
        self.points
            .iter()
            .position(|q| *q == p)
            .expect("a fold point of the configuration")
    }

    /// The slot of load access `a`.
    pub fn slot(&self, a: &Access) -> Option<usize> {
        self.loads.iter().position(|l| l == a)
    }

    /// Whether no dimension is guarded: then the plan is that of every domain that is a multiple
    /// of the tile (element constants of distinct elements never coincide, as the row pitch
    /// exceeds the x-reach of a thread).
    pub fn unguarded(&self) -> bool {
        self.guarded == [false; 3]
    }

    /// Load instructions a thread issues over all its fold points.
    pub fn issued(&self) -> usize {
        self.source.iter().filter(|s| s.is_none()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dtype;
    use crate::spec::{shape_kernel, Shape, ShapeKind};

    fn kernel(kind: ShapeKind, radius: usize) -> Kernel {
        let shape = Shape {
            kind,
            radius,
            dims: 3,
            coefficients: vec![1.0; kind.coefficient_count(radius, 3)],
        };
        shape_kernel("k", &shape, Dtype::F64, "u", "v")
    }

    fn plan(k: &Kernel, c: &LaunchConfig, d: &Domain) -> LoadSharing {
        let layouts: Vec<FieldLayout> = k.fields.iter().map(|f| f.layout_for(d)).collect();
        LoadSharing::new(k, &layouts, c, d)
    }

    #[test]
    fn folded_points_load_a_shared_element_once() {
        // Radius 4, bx = 2, fold 2 in x: point 1 reads x0+2+o, which point 0 read for o ≤ 2
        // (7 of its 9 x offsets, the centre included); the 16 others are new.
        let k = kernel(ShapeKind::Star, 4);
        let s = plan(
            &k,
            &LaunchConfig::new([2, 4, 4], [2, 1, 1]),
            &Domain::new3(8, 8, 8),
        );
        assert_eq!(s.loads.len(), 25);
        assert_eq!(s.issued(), 25 + 18);
        // A wide block shares nothing.
        let s = plan(
            &k,
            &LaunchConfig::new([16, 1, 1], [2, 1, 1]),
            &Domain::new3(32, 8, 8),
        );
        assert_eq!(s.issued(), 50);
    }

    #[test]
    fn reuse_respects_the_guards() {
        // Star radius 1 with 1×1 blocks folded 2×2: (x0+1, y0+1) is read first by point (1,0,0)
        // and then by (0,1,0), which with a guard in x may not take it from there (it runs where
        // (1,0,0) is outside the domain).
        let k = kernel(ShapeKind::Star, 1);
        let c = LaunchConfig::new([1, 1, 4], [2, 2, 1]);
        for (dom, guarded) in [
            (Domain::new3(8, 8, 8), false),
            (Domain::new3(7, 8, 8), true),
        ] {
            let s = plan(&k, &c, &dom);
            let layouts: Vec<FieldLayout> = k.fields.iter().map(|f| f.layout_for(&dom)).collect();
            let elem = |p: usize, slot: usize| {
                let a = &s.loads[slot];
                element_index(&layouts[a.field], a, &c)
                    .at_fold_point(s.points[p])
                    .constant
            };
            let mut from_later_x = 0;
            for p in 0..s.points.len() {
                for slot in 0..s.loads.len() {
                    if let Some((q, qs)) = s.source(p, slot) {
                        assert!(q < p);
                        assert_eq!(elem(p, slot), elem(q, qs));
                        if s.points[q][0] > s.points[p][0] {
                            from_later_x += 1;
                        }
                    }
                }
            }
            assert_eq!(from_later_x == 0, guarded, "{dom}");
        }
    }
}
