//! Footprint geometry: the rows of every field component, and exact distinct-sector counts of
//! unions of boxes of elements.
//!
//! A *plane* is the storage of one field (or, in a structure-of-arrays field, one component): rows
//! of elements contiguous in x, `row` bytes apart in y and `layer` bytes apart in z. Its strides and
//! origin come from the instructions' affine address expressions, so the geometry is the one the
//! emitters print. What a block (or the whole grid) touches in a plane is a union of *boxes*: the
//! tile shifted by each access's offset. Such a union is constant on the rectangles between the
//! boxes' y and z edges (*regions*), so a count costs per region, not per row: the rows of a region
//! hold the same byte pattern and differ only in their alignment to sectors, which is counted as a
//! histogram of row residues modulo the sector size. Rows adjacent in memory can share a sector at
//! their ends; that is corrected pair by pair, also per region.

use super::MemoryProgram;
use crate::address::Var;
use crate::ir::AccessKind;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The rows of one field (or one SoA component).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plane {
    /// Field index.
    pub field: usize,
    /// Component of an SoA field (0 where components are interleaved).
    pub qrow: usize,
    /// Element size in bytes.
    pub elem: i64,
    /// Bytes from one x to the next (the element size, or a whole structure in AoS).
    pub pitch: i64,
    /// Bytes from one row (y) to the next.
    pub row: i64,
    /// Bytes from one layer (z) to the next.
    pub layer: i64,
    /// Absolute byte address of logical point (0, 0, 0), component 0, of this plane.
    pub origin: i64,
    /// Stored rows `[lo, hi)` in logical y (ghost layers included).
    pub ys: (i64, i64),
    /// Stored layers in logical z.
    pub zs: (i64, i64),
    /// Whether the last row of a layer is followed in memory by the first row of the next one.
    pub layers_contiguous: bool,
}

impl Plane {
    /// Absolute byte address of the start of row `(y, z)` (logical x = 0).
    pub fn row_base(&self, y: i64, z: i64) -> i64 {
        self.origin + y * self.row + z * self.layer
    }

    /// Whether components are interleaved within a pitch (array of structures).
    pub fn interleaved(&self) -> bool {
        self.pitch != self.elem
    }
}

/// One instruction, seen as an access to a plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlaneAccess {
    /// Index into the plane list.
    pub plane: usize,
    /// Position of the instruction in the per-point program.
    pub slot: u32,
    /// Load or store.
    pub kind: AccessKind,
    /// Lattice offset.
    pub off: [i64; 3],
    /// Component within the pitch (AoS), else 0.
    pub comp: i64,
}

/// Planes and plane accesses of a program, derived from its address expressions.
pub(crate) fn planes(prog: &MemoryProgram, planes: &mut Vec<Plane>, acc: &mut Vec<PlaneAccess>) {
    planes.clear();
    acc.clear();
    for (slot, ins) in prog.instructions.iter().enumerate() {
        let l = &prog.layouts[ins.field];
        let c = |v: Var| ins.address.coeffs[v.slot()];
        let (pitch, row, layer) = (c(Var::Tx), c(Var::Ty), c(Var::Tz));
        let elem = l.elem_size as i64;
        let a = ins.access;
        let off = [a.offset[0] as i64, a.offset[1] as i64, a.offset[2] as i64];
        let aos = pitch != elem;
        let comp = if aos { a.index as i64 } else { 0 };
        let qrow = if aos { 0 } else { a.index };
        let origin =
            ins.address.constant - off[0] * pitch - off[1] * row - off[2] * layer - comp * elem;
        let g = l.ghost;
        let n = prog.domain.size;
        let p = Plane {
            field: ins.field,
            qrow,
            elem,
            pitch,
            row,
            layer,
            origin,
            ys: (-(g[1] as i64), (n[1] + g[1]) as i64),
            zs: (-(g[2] as i64), (n[2] + g[2]) as i64),
            layers_contiguous: layer == row * l.extent[1] as i64
                && row == pitch * l.extent[0] as i64,
        };
        let plane = match planes.iter().position(|q| *q == p) {
            Some(i) => i,
            None => {
                planes.push(p);
                planes.len() - 1
            }
        };
        acc.push(PlaneAccess {
            plane,
            slot: slot as u32,
            kind: ins.kind,
            off,
            comp,
        });
    }
}

/// A box of elements in logical coordinates (`[lo, hi)` per axis) of one component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ElemBox {
    /// x range.
    pub x: (i64, i64),
    /// y range.
    pub y: (i64, i64),
    /// z range.
    pub z: (i64, i64),
    /// Component within the pitch.
    pub comp: i64,
}

/// Distinct sectors, and how many of them are fully covered.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Tally {
    /// Distinct sectors.
    pub distinct: f64,
    /// Sectors whose every byte is covered.
    pub full: f64,
}

/// A run of bytes relative to a row base: `n` elements of the teeth `teeth` repeated every
/// `pitch` bytes from `start` (a plain interval is one element with one tooth).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    start: i64,
    n: i64,
    pitch: i64,
    teeth: (u32, u32),
}

/// A multiplicative hasher for integer keys.
#[derive(Default)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
}

const NONE: u32 = u32::MAX;

/// A row pattern: items in increasing byte order, non-overlapping.
#[derive(Debug, Clone, Copy)]
struct Pattern {
    items: (u32, u32),
    /// First and one-past-last byte, relative to the row base.
    lo: i64,
    hi: i64,
}

/// Non-empty regions of a union of boxes: `(y range, z range, pattern)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Region {
    /// Rows `[lo, hi)`.
    pub y: (i64, i64),
    /// Layers `[lo, hi)`.
    pub z: (i64, i64),
    yi: u32,
    zi: u32,
    pattern: u32,
}

/// Scratch buffers of the region counts, reused between calls.
#[derive(Debug, Default)]
pub(crate) struct Counter {
    ybp: Vec<i64>,
    zbp: Vec<i64>,
    /// Pattern per (z segment, y segment), `NONE` where no box covers it.
    grid: Vec<u32>,
    patterns: Vec<Pattern>,
    items: Vec<Item>,
    teeth: Vec<(i64, i64)>,
    keys: HashMap<u128, u32, BuildHasherDefault<IntHasher>>,
    ymask: Vec<u128>,
    zmask: Vec<u128>,
    active: Vec<usize>,
    runs: Vec<(i64, i64)>,
    xbp: Vec<i64>,
    comps: Vec<i64>,
    hy: Vec<Vec<(i64, f64)>>,
    hz: Vec<Vec<(i64, f64)>>,
    tmp: Vec<(i64, f64)>,
    h1: Vec<(i64, f64)>,
    h2: Vec<(i64, f64)>,
    pairs: Vec<(u32, u32, i64, i64, i64)>,
    /// Non-empty regions of the last decomposition.
    pub regions: Vec<Region>,
}

/// Residues `(c·v + add) mod s` of `v` in `lo..hi`, with their counts.
pub(crate) fn residues(c: i64, lo: i64, hi: i64, add: i64, s: i64, out: &mut Vec<(i64, f64)>) {
    out.clear();
    let n = hi - lo;
    if n <= 0 {
        return;
    }
    let step = c.rem_euclid(s);
    let period = if step == 0 { 1 } else { s / gcd(step, s) };
    for k in 0..n.min(period) {
        let count = (n - k + period - 1) / period;
        let r = (c.rem_euclid(s) * (lo + k).rem_euclid(s) + add).rem_euclid(s);
        out.push((r, count as f64));
    }
}

/// `a ⊛ b` modulo `s` into `out` (sorted by residue, merged).
pub(crate) fn convolve(a: &[(i64, f64)], b: &[(i64, f64)], s: i64, out: &mut Vec<(i64, f64)>) {
    out.clear();
    for &(ra, ca) in a {
        for &(rb, cb) in b {
            out.push(((ra + rb).rem_euclid(s), ca * cb));
        }
    }
    out.sort_unstable_by_key(|x| x.0);
    let mut w = 0;
    for i in 0..out.len() {
        if w > 0 && out[w - 1].0 == out[i].0 {
            out[w - 1].1 += out[i].1;
        } else {
            out[w] = out[i];
            w += 1;
        }
    }
    out.truncate(w);
}

pub(crate) fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

impl Counter {
    /// Splits the union of `boxes` on `plane` into regions and builds their patterns.
    pub fn decompose(&mut self, plane: &Plane, boxes: &[ElemBox]) {
        self.ybp.clear();
        self.zbp.clear();
        for b in boxes {
            if b.x.0 < b.x.1 && b.y.0 < b.y.1 && b.z.0 < b.z.1 {
                self.ybp.extend([b.y.0, b.y.1]);
                self.zbp.extend([b.z.0, b.z.1]);
            }
        }
        self.ybp.sort_unstable();
        self.ybp.dedup();
        self.zbp.sort_unstable();
        self.zbp.dedup();
        self.patterns.clear();
        self.items.clear();
        self.teeth.clear();
        self.keys.clear();
        self.regions.clear();
        let ny = self.ybp.len().saturating_sub(1);
        let nz = self.zbp.len().saturating_sub(1);
        self.grid.clear();
        self.grid.resize(ny * nz, NONE);
        let dedup = boxes.len() <= 128;
        // Which boxes cover each y and each z segment: a region's boxes are the intersection.
        self.ymask.clear();
        self.zmask.clear();
        if dedup {
            self.ymask.resize(ny, 0);
            self.zmask.resize(nz, 0);
            for (i, b) in boxes.iter().enumerate() {
                if b.x.0 >= b.x.1 || b.y.0 >= b.y.1 || b.z.0 >= b.z.1 {
                    continue;
                }
                let (y0, y1) = (
                    self.ybp.partition_point(|v| *v < b.y.0),
                    self.ybp.partition_point(|v| *v < b.y.1),
                );
                for m in &mut self.ymask[y0..y1] {
                    *m |= 1 << i;
                }
                let (z0, z1) = (
                    self.zbp.partition_point(|v| *v < b.z.0),
                    self.zbp.partition_point(|v| *v < b.z.1),
                );
                for m in &mut self.zmask[z0..z1] {
                    *m |= 1 << i;
                }
            }
        }
        for zi in 0..nz {
            let (za, zb) = (self.zbp[zi], self.zbp[zi + 1]);
            for yi in 0..ny {
                let (ya, yb) = (self.ybp[yi], self.ybp[yi + 1]);
                let key = if dedup {
                    let key = self.ymask[yi] & self.zmask[zi];
                    if key == 0 {
                        continue;
                    }
                    key
                } else {
                    0
                };
                let found = if dedup {
                    self.keys.get(&key).copied()
                } else {
                    None
                };
                let pid = match found {
                    Some(p) => p,
                    None => {
                        self.active.clear();
                        for (i, b) in boxes.iter().enumerate() {
                            if b.x.0 < b.x.1
                                && b.y.0 <= ya
                                && yb <= b.y.1
                                && b.z.0 <= za
                                && zb <= b.z.1
                            {
                                self.active.push(i);
                            }
                        }
                        if self.active.is_empty() {
                            continue;
                        }
                        let p = self.build(plane, boxes);
                        if dedup {
                            self.keys.insert(key, p);
                        }
                        p
                    }
                };
                self.grid[zi * ny + yi] = pid;
                self.regions.push(Region {
                    y: (ya, yb),
                    z: (za, zb),
                    yi: yi as u32,
                    zi: zi as u32,
                    pattern: pid,
                });
            }
        }
    }

    /// Builds the pattern of the boxes in `self.active`.
    fn build(&mut self, plane: &Plane, boxes: &[ElemBox]) -> u32 {
        let first = self.items.len() as u32;
        let (p, e) = (plane.pitch, plane.elem);
        if !plane.interleaved() {
            self.runs.clear();
            self.runs.extend(
                self.active
                    .iter()
                    .map(|&i| (boxes[i].x.0 * p, boxes[i].x.1 * p)),
            );
            merge(&mut self.runs);
            for &(a, b) in &self.runs {
                let t = self.teeth.len() as u32;
                self.teeth.push((0, b - a));
                self.items.push(Item {
                    start: a,
                    n: 1,
                    pitch: b - a,
                    teeth: (t, t + 1),
                });
            }
        } else {
            // Components interleaved: split x where the set of components changes; a segment
            // holding every component is one run, others repeat their components' bytes.
            let q = p / e;
            self.xbp.clear();
            for &i in &self.active {
                self.xbp.extend([boxes[i].x.0, boxes[i].x.1]);
            }
            self.xbp.sort_unstable();
            self.xbp.dedup();
            for w in 0..self.xbp.len() - 1 {
                let (xa, xb) = (self.xbp[w], self.xbp[w + 1]);
                self.comps.clear();
                for &i in &self.active {
                    if boxes[i].x.0 <= xa && xb <= boxes[i].x.1 {
                        self.comps.push(boxes[i].comp);
                    }
                }
                if self.comps.is_empty() {
                    continue;
                }
                self.comps.sort_unstable();
                self.comps.dedup();
                if self.comps.len() as i64 == q {
                    // Contiguous: extend the previous run where it ends here.
                    if let Some(last) = self.items[first as usize..].last_mut() {
                        let t = last.teeth.0 as usize;
                        let run = last.n == 1 && self.teeth[t] == (0, last.pitch);
                        if run && last.start + last.pitch == xa * p {
                            last.pitch += (xb - xa) * p;
                            self.teeth[t].1 = last.pitch;
                            continue;
                        }
                    }
                    let t = self.teeth.len() as u32;
                    self.teeth.push((0, (xb - xa) * p));
                    self.items.push(Item {
                        start: xa * p,
                        n: 1,
                        pitch: (xb - xa) * p,
                        teeth: (t, t + 1),
                    });
                } else {
                    let t0 = self.teeth.len() as u32;
                    let mut k = 0;
                    while k < self.comps.len() {
                        let c0 = self.comps[k];
                        let mut c1 = c0 + 1;
                        k += 1;
                        while k < self.comps.len() && self.comps[k] == c1 {
                            c1 += 1;
                            k += 1;
                        }
                        self.teeth.push((c0 * e, c1 * e));
                    }
                    self.items.push(Item {
                        start: xa * p,
                        n: xb - xa,
                        pitch: p,
                        teeth: (t0, self.teeth.len() as u32),
                    });
                }
            }
        }
        let last = self.items.len() as u32;
        let lo = self.items[first as usize].start
            + self.teeth[self.items[first as usize].teeth.0 as usize].0;
        let it = self.items[last as usize - 1];
        let hi = it.start + (it.n - 1) * it.pitch + self.teeth[it.teeth.1 as usize - 1].1;
        self.patterns.push(Pattern {
            items: (first, last),
            lo,
            hi,
        });
        (self.patterns.len() - 1) as u32
    }

    /// Distinct (and fully covered) sectors of the union of `boxes` on `plane`, summed over the
    /// byte shifts `shifts` (`(shift, weight)`: the same union placed at other blocks' positions).
    pub fn count(
        &mut self,
        plane: &Plane,
        boxes: &[ElemBox],
        shifts: &[(i64, f64)],
        s: i64,
    ) -> Tally {
        self.decompose(plane, boxes);
        self.count_decomposed(plane, shifts, s)
    }

    /// As [`Counter::count`], for the boxes of the last [`Counter::decompose`].
    pub fn count_decomposed(&mut self, plane: &Plane, shifts: &[(i64, f64)], s: i64) -> Tally {
        let ny = self.ybp.len().saturating_sub(1);
        let nz = self.zbp.len().saturating_sub(1);
        if ny == 0 || nz == 0 {
            return Tally::default();
        }
        // Residue histograms per y segment (rows) and per z segment (layers, origin and shifts).
        while self.hy.len() < ny + 1 {
            self.hy.push(Vec::new());
        }
        while self.hz.len() < nz + 1 {
            self.hz.push(Vec::new());
        }
        for yi in 0..ny {
            residues(
                plane.row,
                self.ybp[yi],
                self.ybp[yi + 1],
                0,
                s,
                &mut self.hy[yi],
            );
        }
        for zi in 0..nz {
            residues(
                plane.layer,
                self.zbp[zi],
                self.zbp[zi + 1],
                plane.origin,
                s,
                &mut self.tmp,
            );
            convolve(&self.tmp, shifts, s, &mut self.hz[zi]);
        }
        let mut t = Tally::default();
        for r in &self.regions {
            let (yi, zi) = (r.yi as usize, r.zi as usize);
            let pat = self.patterns[r.pattern as usize];
            for &(ry, cy) in &self.hy[yi] {
                for &(rz, cz) in &self.hz[zi] {
                    let (d, f) = self.pattern_count(&pat, (ry + rz) % s, s);
                    t.distinct += cy * cz * d as f64;
                    t.full += cy * cz * f as f64;
                }
            }
        }
        self.shared_ends(plane, shifts, s, &mut t);
        t
    }

    /// Corrects `t` for sectors shared by the end of one row and the start of the next in memory.
    fn shared_ends(&mut self, plane: &Plane, shifts: &[(i64, f64)], s: i64, t: &mut Tally) {
        let ny = self.ybp.len() - 1;
        let nz = self.zbp.len() - 1;
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for p in &self.patterns {
            lo = lo.min(p.lo);
            hi = hi.max(p.hi);
        }
        // The next row starts `row` bytes after this one; a sector is shared only if the first
        // byte of the next row's pattern lies within a sector of the last byte of this row's.
        if plane.row + lo - hi >= s {
            return;
        }
        let pat = |g: &[u32], yi: usize, zi: usize| g[zi * ny + yi];
        // Pairs (y, z)-(y+1, z): inside a y segment and across segment edges.
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        for zi in 0..nz {
            for yi in 0..ny {
                let a = pat(&self.grid, yi, zi);
                if a == NONE {
                    continue;
                }
                let (ya, yb) = (self.ybp[yi], self.ybp[yi + 1]);
                if yb - ya > 1 {
                    pairs.push((a, a, ya, yb - 1, zi as i64));
                }
                if yi + 1 < ny && yb < plane.ys.1 {
                    let b = pat(&self.grid, yi + 1, zi);
                    if b != NONE {
                        pairs.push((a, b, yb - 1, yb, zi as i64));
                    }
                }
            }
        }
        let mut hz = std::mem::take(&mut self.tmp);
        let mut hy = std::mem::take(&mut self.h1);
        let mut h = std::mem::take(&mut self.h2);
        for &(a, b, y0, y1, zi) in &pairs {
            let (pa, pb) = (self.patterns[a as usize], self.patterns[b as usize]);
            if plane.row + pb.lo - pa.hi >= s {
                continue;
            }
            let zi = zi as usize;
            residues(plane.row, y0, y1, 0, s, &mut hy);
            residues(
                plane.layer,
                self.zbp[zi],
                self.zbp[zi + 1],
                plane.origin,
                s,
                &mut hz,
            );
            convolve(&hz, shifts, s, &mut h);
            for &(ry, cy) in &hy {
                for &(rz, cz) in &h {
                    let rho = (ry + rz) % s;
                    self.pair_adjust(&pa, &pb, rho, plane.row, s, cy * cz, t);
                }
            }
        }
        // The last stored row of a layer and the first of the next layer.
        if plane.layers_contiguous && nz > 0 {
            let top = plane.ys.1 - 1;
            let bottom = plane.ys.0;
            let yt = self.ybp.partition_point(|v| *v <= top);
            let yb = self.ybp.partition_point(|v| *v <= bottom);
            if yt >= 1 && yt <= ny && self.ybp[yt - 1] <= top && yb >= 1 && yb <= ny {
                let (yt, yb) = (yt - 1, yb - 1);
                for zi in 0..nz {
                    let a = pat(&self.grid, yt, zi);
                    if a == NONE {
                        continue;
                    }
                    let (za, zb) = (self.zbp[zi], self.zbp[zi + 1]);
                    // Layers z in [za, zb) whose next layer z + 1 has a pattern in row `bottom`.
                    let b_same = pat(&self.grid, yb, zi);
                    let b_next = if zi + 1 < nz {
                        pat(&self.grid, yb, zi + 1)
                    } else {
                        NONE
                    };
                    for (z0, z1, b) in [(za, zb - 1, b_same), (zb - 1, zb, b_next)] {
                        if b == NONE || z1 <= z0 {
                            continue;
                        }
                        let (pa, pb) = (self.patterns[a as usize], self.patterns[b as usize]);
                        if plane.row + pb.lo - pa.hi >= s {
                            continue;
                        }
                        residues(
                            plane.layer,
                            z0,
                            z1,
                            plane.origin + top * plane.row,
                            s,
                            &mut hz,
                        );
                        convolve(&hz, shifts, s, &mut h);
                        for &(rho, c) in &h {
                            self.pair_adjust(&pa, &pb, rho, plane.row, s, c, t);
                        }
                    }
                }
            }
        }
        self.tmp = hz;
        self.h1 = hy;
        self.h2 = h;
        self.pairs = pairs;
    }

    /// For a row with pattern `a` at residue `rho` followed `row` bytes later by one with pattern
    /// `b`: if they share a sector, removes the double count (`weight` such pairs).
    #[allow(clippy::too_many_arguments)]
    fn pair_adjust(
        &self,
        a: &Pattern,
        b: &Pattern,
        rho: i64,
        row: i64,
        s: i64,
        weight: f64,
        t: &mut Tally,
    ) {
        let last = (rho + a.hi - 1).div_euclid(s);
        let first = (rho + row + b.lo).div_euclid(s);
        if last != first {
            return;
        }
        t.distinct -= weight;
        let ca = self.coverage(a, rho, last, s);
        let cb = self.coverage(b, rho + row, last, s);
        let before = i64::from(ca == s) + i64::from(cb == s);
        let after = i64::from(ca + cb >= s);
        t.full += weight * (after - before) as f64;
    }

    /// Bytes of sector `sector` (relative to residue 0) covered by pattern `p` placed at `rho`.
    fn coverage(&self, p: &Pattern, rho: i64, sector: i64, s: i64) -> i64 {
        let (lo, hi) = (sector * s, sector * s + s);
        let mut c = 0;
        for it in &self.items[p.items.0 as usize..p.items.1 as usize] {
            let teeth = &self.teeth[it.teeth.0 as usize..it.teeth.1 as usize];
            let base = rho + it.start;
            if base + (it.n - 1) * it.pitch + teeth[teeth.len() - 1].1 <= lo || base >= hi {
                continue;
            }
            let k0 = ((lo - base - it.pitch).div_euclid(it.pitch)).max(0);
            let k1 = ((hi - base).div_euclid(it.pitch) + 1).min(it.n);
            for k in k0..k1 {
                for &(a, b) in teeth {
                    let (x, y) = (base + k * it.pitch + a, base + k * it.pitch + b);
                    c += (y.min(hi) - x.max(lo)).max(0);
                }
            }
        }
        c
    }

    /// Distinct and fully covered sectors of pattern `p` on a row at residue `rho`.
    fn pattern_count(&self, p: &Pattern, rho: i64, s: i64) -> (i64, i64) {
        let mut o = Open::default();
        for it in &self.items[p.items.0 as usize..p.items.1 as usize] {
            let teeth = &self.teeth[it.teeth.0 as usize..it.teeth.1 as usize];
            comb(rho + it.start, it.n, it.pitch, teeth, s, &mut o);
        }
        o.close(s);
        (o.distinct, o.full)
    }
}

/// A running count of distinct and fully covered sectors over bytes added in increasing order;
/// the sector counted last stays open (its coverage may still grow).
#[derive(Debug, Clone, Copy)]
struct Open {
    last: i64,
    cov: i64,
    distinct: i64,
    full: i64,
}

impl Default for Open {
    fn default() -> Open {
        Open {
            last: i64::MIN,
            cov: 0,
            distinct: 0,
            full: 0,
        }
    }
}

impl Open {
    /// Adds bytes `[x, y)`, not below any byte added before.
    fn add(&mut self, x: i64, y: i64, s: i64) {
        let (f, l) = (x.div_euclid(s), (y - 1).div_euclid(s));
        if f == self.last {
            self.cov += y.min((f + 1) * s) - x;
            if l == f {
                return;
            }
            self.full += i64::from(self.cov >= s);
            self.distinct += l - f;
        } else {
            self.close(s);
            self.distinct += l - f + 1;
            if l == f {
                self.last = f;
                self.cov = y - x;
                return;
            }
            self.full += i64::from(x == f * s);
        }
        self.full += l - f - 1;
        self.last = l;
        self.cov = y - l * s;
    }

    /// Counts the open sector as full if it is.
    fn close(&mut self, s: i64) {
        if self.last != i64::MIN && self.cov >= s {
            self.full += 1;
        }
        self.cov = 0;
    }
}

/// Adds `n` elements of `teeth` repeated every `pitch` bytes from `base` to `o`. The increments of
/// an element depend only on its residue modulo the sector (once the elements before it are far
/// enough back), so beyond a few periods whole periods are added at once.
fn comb(base: i64, n: i64, pitch: i64, teeth: &[(i64, i64)], s: i64, o: &mut Open) {
    if n == 1 {
        for &(a, b) in teeth {
            o.add(base + a, base + b, s);
        }
        return;
    }
    let period = {
        let st = pitch.rem_euclid(s);
        if st == 0 {
            1
        } else {
            s / gcd(st, s)
        }
    };
    // Elements a sector can span, plus slack: beyond these the state is periodic.
    let settle = 2 * period + s / pitch.max(1) + 4;
    if n <= settle + period || period > 256 {
        for k in 0..n {
            for &(a, b) in teeth {
                o.add(base + k * pitch + a, base + k * pitch + b, s);
            }
        }
        return;
    }
    let mut inc = [(0i64, 0i64, 0i64, 0i64); 256];
    for k in 0..settle {
        let (d0, f0) = (o.distinct, o.full);
        for &(a, b) in teeth {
            o.add(base + k * pitch + a, base + k * pitch + b, s);
        }
        if k >= settle - period {
            inc[(k - (settle - period)) as usize] = (o.distinct - d0, o.full - f0, o.last, o.cov);
        }
    }
    // Elements settle..n repeat the last period's increments.
    let rest = n - settle;
    for (j, &(dd, df, _, _)) in inc.iter().enumerate().take(period as usize) {
        let j = j as i64;
        if j < rest {
            let times = (rest - 1 - j) / period + 1;
            o.distinct += dd * times;
            o.full += df * times;
        }
    }
    // The state after the last element: that of its counterpart in the recorded period, moved
    // by whole periods (a period spans a whole number of sectors).
    let j = (rest - 1) % period;
    let (_, _, last, cov) = inc[j as usize];
    let periods = (rest - 1 - j) / period + 1;
    o.last = last + periods * period * pitch / s;
    o.cov = cov;
}

/// Sorts and merges intervals in place (touching ones too).
pub(crate) fn merge(v: &mut Vec<(i64, i64)>) {
    v.sort_unstable();
    let mut w = 0;
    for i in 0..v.len() {
        if w > 0 && v[i].0 <= v[w - 1].1 {
            v[w - 1].1 = v[w - 1].1.max(v[i].1);
        } else {
            v[w] = v[i];
            w += 1;
        }
    }
    v.truncate(w);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    /// Distinct and fully covered sectors of the union of `boxes`, shifted by each shift, by
    /// enumerating every byte.
    fn brute(plane: &Plane, boxes: &[ElemBox], shifts: &[(i64, f64)], s: i64) -> Tally {
        let mut t = Tally::default();
        for &(shift, w) in shifts {
            let mut cov: BTreeMap<i64, i64> = BTreeMap::new();
            let mut bytes = std::collections::BTreeSet::new();
            for b in boxes {
                for z in b.z.0..b.z.1 {
                    for y in b.y.0..b.y.1 {
                        for x in b.x.0..b.x.1 {
                            let a = plane.row_base(y, z)
                                + x * plane.pitch
                                + b.comp * plane.elem
                                + shift;
                            for k in 0..plane.elem {
                                bytes.insert(a + k);
                            }
                        }
                    }
                }
            }
            for a in bytes {
                *cov.entry(a.div_euclid(s)).or_default() += 1;
            }
            t.distinct += w * cov.len() as f64;
            t.full += w * cov.values().filter(|c| **c == s).count() as f64;
        }
        t
    }

    #[test]
    fn region_counts_match_enumeration() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut c = Counter::default();
        for case in 0..1000 {
            let elem = [4i64, 8][rng.gen_range(0..2)];
            let q = [1i64, 1, 3, 4, 19][rng.gen_range(0..5)];
            let g = rng.gen_range(0..3i64);
            let wide = rng.gen_bool(0.3);
            let n = [
                rng.gen_range(1..if wide { 90i64 } else { 12 }),
                rng.gen_range(1..6),
                rng.gen_range(1..5),
            ];
            let s = [16i64, 32, 64][rng.gen_range(0..3)];
            let pitch = elem * q;
            // Rows of at least two sectors (see `Counter::count`).
            let pad = rng
                .gen_range(0..3i64)
                .max((2 * s + pitch - 1) / pitch - n[0] - 2 * g);
            let ex = n[0] + 2 * g + pad;
            let ey = n[1] + 2 * g;
            let plane = Plane {
                field: 0,
                qrow: 0,
                elem,
                pitch,
                row: ex * pitch,
                layer: ex * ey * pitch,
                origin: (1 << 40) + (g * ex * ey + g * ex + g) * pitch,
                ys: (-g, n[1] + g),
                zs: (-g, n[2] + g),
                layers_contiguous: true,
            };
            let nb = rng.gen_range(1..7);
            let boxes: Vec<ElemBox> = (0..nb)
                .map(|_| {
                    let mut r = |d: usize| {
                        let lo = rng.gen_range(-g..=n[d] + g - 1);
                        let hi = rng.gen_range(lo + 1..=n[d] + g);
                        (lo, hi)
                    };
                    let x = r(0);
                    let y = r(1);
                    let z = r(2);
                    ElemBox {
                        x,
                        y,
                        z,
                        comp: rng.gen_range(0..q),
                    }
                })
                .collect();
            let shifts: Vec<(i64, f64)> = if rng.gen_bool(0.5) {
                vec![(0, 1.0)]
            } else {
                vec![(0, 1.0), (elem, 2.0), (3 * elem, 1.0)]
            };
            let want = brute(&plane, &boxes, &shifts, s);
            let got = c.count(&plane, &boxes, &shifts, s);
            assert_eq!(
                got.distinct, want.distinct,
                "case {case}: distinct {plane:?} {boxes:?} s {s} {shifts:?}"
            );
            assert_eq!(
                got.full, want.full,
                "case {case}: full {plane:?} {boxes:?} s {s} {shifts:?}"
            );
        }
    }
}
