//! Element copies between kernel launches: periodic ghost-layer exchange and bounce-back links.
//!
//! Kernels run over the interior only, so boundary conditions are copies inside one buffer,
//! described by element indices of the buffer's [`FieldLayout`] and nothing else. A runtime executes
//! a [`Transfer`] with one tiny copy kernel (or `clEnqueueCopyBufferRect`-like calls); the CPU
//! executes it with [`Transfer::apply`]. The copies of one transfer touch disjoint elements
//! (no element is both read and written), so they may run in any order or in parallel; transfers
//! run in the order given.
//!
//! The periodic exchange is derived from a kernel's accesses, so it works for any kernel (LBM or
//! stencil): before the kernel, every ghost element it reads is filled from its periodic image
//! ([`periodic_fill`]); after it, every ghost element it wrote is folded back onto its periodic
//! image in the interior ([`periodic_fold`]).

use crate::ir::{AccessKind, Domain, FieldLayout, Kernel};
use crate::reference::{FieldArray, Real};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A box of elements copied within one buffer: for every `(i, j, k) < extent`,
/// `buf[dst + i·stride[0] + j·stride[1] + k·stride[2]] = buf[src + i·stride[0] + …]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoxCopy {
    /// Element index of the first source element.
    pub src: usize,
    /// Element index of the first destination element.
    pub dst: usize,
    /// Points per dimension.
    pub extent: [usize; 3],
    /// Element strides of x, y, z (the buffer's layout strides).
    pub stride: [usize; 3],
}

impl BoxCopy {
    /// Number of elements copied.
    pub fn len(&self) -> usize {
        self.extent.iter().product()
    }

    /// Whether the box is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `(src, dst)` element index pairs, x fastest.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let [ex, ey, ez] = self.extent;
        let [sx, sy, sz] = self.stride;
        (0..ez).flat_map(move |k| {
            (0..ey).flat_map(move |j| {
                (0..ex).map(move |i| {
                    let o = i * sx + j * sy + k * sz;
                    (self.src + o, self.dst + o)
                })
            })
        })
    }
}

/// One batch of independent element copies inside one buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Transfer {
    /// Strided boxes (the periodic exchange).
    Boxes {
        /// Index of the buffer in the program.
        buffer: usize,
        /// The boxes.
        boxes: Vec<BoxCopy>,
    },
    /// Single elements as `[src, dst]` index pairs (bounce-back links).
    Elements {
        /// Index of the buffer in the program.
        buffer: usize,
        /// `[source element, destination element]`.
        pairs: Vec<[usize; 2]>,
    },
}

impl Transfer {
    /// The buffer the copies happen in.
    pub fn buffer(&self) -> usize {
        match self {
            Transfer::Boxes { buffer, .. } | Transfer::Elements { buffer, .. } => *buffer,
        }
    }

    /// Number of elements copied.
    pub fn len(&self) -> usize {
        match self {
            Transfer::Boxes { boxes, .. } => boxes.iter().map(BoxCopy::len).sum(),
            Transfer::Elements { pairs, .. } => pairs.len(),
        }
    }

    /// Whether nothing is copied.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every copy as a `[src, dst]` element index pair (for runtimes that upload index lists and
    /// run one gather kernel per transfer).
    pub fn pairs(&self) -> Vec<[usize; 2]> {
        match self {
            Transfer::Boxes { boxes, .. } => boxes
                .iter()
                .flat_map(|b| b.pairs().map(|(s, d)| [s, d]))
                .collect(),
            Transfer::Elements { pairs, .. } => pairs.clone(),
        }
    }

    /// Executes the copies on CPU arrays (`buffers` indexed like the program's buffers).
    pub fn apply<T: Real>(&self, buffers: &mut [FieldArray<T>]) {
        let data = buffers[self.buffer()].as_mut_slice();
        match self {
            Transfer::Boxes { boxes, .. } => {
                for b in boxes {
                    for (s, d) in b.pairs() {
                        data[d] = data[s];
                    }
                }
            }
            Transfer::Elements { pairs, .. } => {
                for [s, d] in pairs {
                    data[*d] = data[*s];
                }
            }
        }
    }
}

/// Ghost regions: per dimension -1 (low ghost), 0 (interior) or +1 (high ghost), not all 0.
fn regions(dims: usize) -> Vec<[i32; 3]> {
    let zr: &[i32] = if dims == 3 { &[-1, 0, 1] } else { &[0] };
    let mut out = Vec::new();
    for &z in zr {
        for y in -1..=1 {
            for x in -1..=1 {
                if [x, y, z] != [0, 0, 0] {
                    out.push([x, y, z]);
                }
            }
        }
    }
    out
}

/// The half-open range of region side `s` along an axis of `n` points and `g` ghost layers,
/// intersected with the interior shifted by `o`.
fn side_range(s: i32, n: i64, g: i64, o: i64) -> (i64, i64) {
    let (lo, hi) = match s {
        -1 => (-g, 0),
        0 => (0, n),
        _ => (n, n + g),
    };
    (lo.max(o), hi.min(n + o))
}

/// Boxes `(first ghost point, extent, region)` of the ghost points `interior + offset` reaches,
/// one per region (bounding box over the offsets; only points with valid periodic images).
fn ghost_boxes(
    offsets: &BTreeSet<[i32; 3]>,
    domain: &Domain,
    layout: &FieldLayout,
) -> Vec<([i64; 3], [usize; 3], [i32; 3])> {
    let mut out = Vec::new();
    for s in regions(domain.dims) {
        let mut lo = [i64::MAX; 3];
        let mut hi = [i64::MIN; 3];
        let mut any = false;
        for o in offsets {
            let r: Vec<(i64, i64)> = (0..3)
                .map(|d| {
                    side_range(
                        s[d],
                        domain.size[d] as i64,
                        layout.ghost[d] as i64,
                        o[d] as i64,
                    )
                })
                .collect();
            if r.iter().all(|(a, b)| a < b) {
                any = true;
                for d in 0..3 {
                    lo[d] = lo[d].min(r[d].0);
                    hi[d] = hi[d].max(r[d].1);
                }
            }
        }
        if any {
            let ext = [0, 1, 2].map(|d| (hi[d] - lo[d]) as usize);
            out.push((lo, ext, s));
        }
    }
    out
}

/// Why no periodic exchange can be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}` has {ghost} ghost layer(s) but the domain {domain} is narrower; a periodic image needs at least as many interior points as ghost layers per axis")]
pub struct ExchangeError {
    /// The field.
    pub field: String,
    /// Its ghost layers.
    pub ghost: usize,
    /// The domain.
    pub domain: Domain,
}

/// Offsets per component at which `kernel` accesses `field` with `kind`.
fn offsets_by_component(
    kernel: &Kernel,
    field: usize,
    kind: AccessKind,
) -> BTreeMap<usize, BTreeSet<[i32; 3]>> {
    let mut m: BTreeMap<usize, BTreeSet<[i32; 3]>> = BTreeMap::new();
    for a in kernel.distinct_accesses(kind) {
        if a.field == field {
            m.entry(a.index).or_default().insert(a.offset);
        }
    }
    m
}

fn exchange(
    kernel: &Kernel,
    field: usize,
    domain: &Domain,
    buffer: usize,
    kind: AccessKind,
) -> Result<Transfer, ExchangeError> {
    let f = &kernel.fields[field];
    let layout = f.layout_for(domain);
    for d in 0..domain.dims {
        if domain.size[d] < layout.ghost[d] {
            return Err(ExchangeError {
                field: f.name.clone(),
                ghost: f.ghost,
                domain: *domain,
            });
        }
    }
    let mut boxes = Vec::new();
    for (q, offsets) in offsets_by_component(kernel, field, kind) {
        for (lo, extent, s) in ghost_boxes(&offsets, domain, &layout) {
            let ghost = layout.index(lo[0], lo[1], lo[2], q);
            let img = [0, 1, 2].map(|d| lo[d] - s[d] as i64 * domain.size[d] as i64);
            let image = layout.index(img[0], img[1], img[2], q);
            let (src, dst) = match kind {
                AccessKind::Load => (image, ghost),
                AccessKind::Store => (ghost, image),
            };
            boxes.push(BoxCopy {
                src,
                dst,
                extent,
                stride: layout.stride,
            });
        }
    }
    Ok(Transfer::Boxes { buffer, boxes })
}

/// Before `kernel` runs: fills every ghost element of `field` it reads with its periodic image
/// (in buffer `buffer`). Ghost points of a region no read reaches are not copied; inside a region
/// the bounding box of the reads is (all of it with valid images).
pub fn periodic_fill(
    kernel: &Kernel,
    field: usize,
    domain: &Domain,
    buffer: usize,
) -> Result<Transfer, ExchangeError> {
    exchange(kernel, field, domain, buffer, AccessKind::Load)
}

/// After `kernel` ran: copies every ghost element of `field` it wrote onto its periodic image in
/// the interior. Exact: a written component is stored at one offset (the IR's race rule), so only
/// elements the kernel wrote are copied.
pub fn periodic_fold(
    kernel: &Kernel,
    field: usize,
    domain: &Domain,
    buffer: usize,
) -> Result<Transfer, ExchangeError> {
    exchange(kernel, field, domain, buffer, AccessKind::Store)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Access, Assignment, Dtype, Expr, Field, FieldRole, Target};
    use crate::spec::{shape_kernel, Shape, ShapeKind};

    /// A periodic 5-point stencil with the fill equals the same stencil with wrapped indices.
    #[test]
    fn fill_makes_a_stencil_periodic() {
        let shape = Shape {
            kind: ShapeKind::Box,
            radius: 1,
            dims: 2,
            coefficients: vec![0.5, 0.25, 0.125],
        };
        let k = shape_kernel("s", &shape, Dtype::F64, "u", "v");
        let d = Domain::new2(5, 3);
        let mut arrays = vec![
            FieldArray::<f64>::random(&k.fields[0], &d, 1, -1.0, 1.0),
            FieldArray::<f64>::filled(&k.fields[1], &d, 0.0),
        ];
        let fill = periodic_fill(&k, 0, &d, 0).unwrap();
        assert_eq!(fill.len(), 2 * 5 + 2 * 3 + 4, "faces and corners");
        fill.apply(&mut arrays);
        let pairs = fill.pairs();
        let (src, dst): (BTreeSet<usize>, BTreeSet<usize>) = (
            pairs.iter().map(|p| p[0]).collect(),
            pairs.iter().map(|p| p[1]).collect(),
        );
        assert_eq!(dst.len(), pairs.len(), "each ghost element is written once");
        assert!(src.is_disjoint(&dst), "no element is both read and written");
        crate::reference::run(&k, &d, &mut arrays).unwrap();
        let u = &arrays[0];
        for y in 0..3i64 {
            for x in 0..5i64 {
                let w =
                    |dx: i64, dy: i64| u.get((x + dx).rem_euclid(5), (y + dy).rem_euclid(3), 0, 0);
                let mut want = 0.5 * w(0, 0);
                want += 0.25 * (w(-1, 0) + w(1, 0) + w(0, -1) + w(0, 1));
                want += 0.125 * (w(-1, -1) + w(1, -1) + w(-1, 1) + w(1, 1));
                let got = arrays[1].get(x, y, 0, 0);
                assert!((got - want).abs() < 1e-14, "({x},{y}): {got} vs {want}");
            }
        }
    }

    /// A kernel that writes a neighbour: the fold puts what crossed the boundary on the other side.
    #[test]
    fn fold_wraps_writes() {
        let mut f = Field::scalar("a", Dtype::F64, 1, FieldRole::Output);
        f.components = 2;
        let k = Kernel {
            name: "shift".into(),
            dims: 3,
            fields: vec![Field::scalar("x", Dtype::F64, 0, FieldRole::Input), f],
            params: vec![],
            temps: vec![],
            body: (0..2)
                .map(|q| Assignment {
                    target: Target::Store(Access {
                        field: 1,
                        offset: if q == 0 { [1, 0, -1] } else { [0, -1, 0] },
                        index: q,
                    }),
                    value: Expr::Load(Access {
                        field: 0,
                        offset: [0; 3],
                        index: 0,
                    }),
                })
                .collect(),
        };
        let d = Domain::new3(3, 4, 2);
        let mut arrays = vec![
            FieldArray::<f64>::random(&k.fields[0], &d, 3, 0.0, 1.0),
            FieldArray::<f64>::filled(&k.fields[1], &d, -1.0),
        ];
        crate::reference::run(&k, &d, &mut arrays).unwrap();
        let fold = periodic_fold(&k, 1, &d, 1).unwrap();
        assert!(periodic_fill(&k, 1, &d, 1).unwrap().is_empty());
        fold.apply(&mut arrays);
        for z in 0..2i64 {
            for y in 0..4i64 {
                for x in 0..3i64 {
                    let src = arrays[0].get(x, y, z, 0);
                    let (x0, z0) = ((x + 1).rem_euclid(3), (z - 1).rem_euclid(2));
                    assert_eq!(arrays[1].get(x0, y, z0, 0), src);
                    assert_eq!(arrays[1].get(x, (y - 1).rem_euclid(4), z, 1), src);
                }
            }
        }
    }

    #[test]
    fn too_small_domains_are_refused() {
        let shape = Shape {
            kind: ShapeKind::Star,
            radius: 2,
            dims: 2,
            coefficients: vec![1.0, 1.0, 1.0],
        };
        let k = shape_kernel("s", &shape, Dtype::F64, "u", "v");
        assert!(periodic_fill(&k, 0, &Domain::new2(1, 8), 0).is_err());
        assert!(periodic_fill(&k, 0, &Domain::new2(2, 8), 0).is_ok());
    }
}
