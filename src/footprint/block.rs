//! Per-block volumes: L2 loads (L1 misses) and DRAM traffic.
//!
//! A block's footprint is a union of byte intervals per row (field, component row, y, z), built from
//! the tile shifted by each access's offset: a *template* per size class, placed at a block's real
//! position to get absolute sectors. One representative block per position class (first, interior,
//! last along each axis) stands for all blocks of its class.
//!
//! L2 load: the block's distinct sectors (reuse inside the block through L1); when the resident
//! blocks' footprint in lines exceeds L1, a fraction `1 - L1/footprint` of the reuse is lost,
//! moving smoothly towards the no-reuse bound (the block's L1 requests).
//!
//! DRAM load: a sector of a block's footprint is a DRAM miss unless the block that touched it most
//! recently before (in launch order, `Δ` blocks earlier) left it in L2. With waves of `W` blocks in
//! lockstep, that block ran `m = ⌊Δ/W⌋` or `m + 1` waves earlier, and between the two touches the
//! machine touched about `(m + u)·V` bytes, `V` being a wave's distinct data and `u ∈ [-1, 1]` the
//! difference of the two touches' positions in a block's run (triangular, as the difference of two
//! uniform positions). The hit probability `P(|m + u|·V < L2)` is the layer condition made smooth:
//! it holds when the overlap with earlier waves fits the effective L2, and fades over a width of
//! one wave's footprint.
//!
//! DRAM store: the distinct sectors written over the grid (each counted by the first block, in
//! launch order, that writes it); one not fully written by all blocks together also costs a read.

use super::{CacheParams, MemoryProgram, SizeClasses};
use crate::ir::{AccessKind, Layout};

/// Axes with at least this many blocks are represented by interior blocks only.
const MERGE_EDGES: usize = 64;

/// Totals over the grid, in sectors.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BlockTotals {
    pub l2_load_sectors: f64,
    pub dram_load_sectors: f64,
    pub dram_store_sectors: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct RowKey {
    field: u32,
    q: u32,
    z: i32,
    y: i32,
}

#[derive(Debug, Clone, Copy)]
struct Row {
    key: RowKey,
    start: u32,
    len: u32,
    lo: i64,
    hi: i64,
}

/// Byte intervals per row of one block of one size class, relative to each row's origin (the
/// element at the block's first x, the row's y and z, component row `q`).
#[derive(Debug, Default)]
struct Template {
    rows: Vec<Row>,
    iv: Vec<(i64, i64)>,
    /// Rows of one (field, q, z), contiguous in `rows`: `(key of the first row, start, end)`.
    groups: Vec<(RowKey, usize, usize)>,
    /// Smallest and largest y and z of any row.
    span: [(i32, i32); 2],
}

/// Scratch buffers, reused between calls.
#[derive(Debug, Default)]
pub(crate) struct BlockScratch {
    templates: Vec<Template>,
    raw: Vec<(RowKey, i64, i64)>,
    own: Vec<(i64, i64)>,
    rem: Vec<(i64, i64)>,
    tmp: Vec<(i64, i64)>,
    touch: Vec<(i64, i64, i64)>,
    bytes: Vec<(i64, i64)>,
    out: Vec<(i64, i64)>,
    claims: Vec<(i64, f64)>,
    /// Per template row: line segments with the step that touched them last.
    last: Vec<Vec<(i64, i64, u32)>>,
    seg: Vec<(i64, i64, u32)>,
    fenwick: Vec<i64>,
}

fn fen_add(f: &mut [i64], i: usize, v: i64) {
    let mut i = i + 1;
    while i <= f.len() {
        f[i - 1] += v;
        i += i & i.wrapping_neg();
    }
}

/// Sum of entries `0..=i`.
fn fen_prefix(f: &[i64], i: usize) -> i64 {
    let mut i = i + 1;
    let mut s = 0;
    while i > 0 {
        s += f[i - 1];
        i -= i & i.wrapping_neg();
    }
    s
}

/// Sorts and merges intervals in place (touching ones too).
fn merge(v: &mut Vec<(i64, i64)>) {
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

fn total(v: &[(i64, i64)]) -> i64 {
    v.iter().map(|(a, b)| b - a).sum()
}

/// `a \ b` into `out` (both sorted and merged); returns the size of `a ∩ b`.
fn subtract(a: &[(i64, i64)], b: &[(i64, i64)], out: &mut Vec<(i64, i64)>) -> i64 {
    out.clear();
    let mut j = 0;
    let mut removed = 0;
    for &(lo, hi) in a {
        let mut cur = lo;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while cur < hi && k < b.len() && b[k].0 < hi {
            if b[k].0 > cur {
                out.push((cur, b[k].0));
            }
            let end = b[k].1.min(hi);
            removed += end - b[k].0.max(cur);
            cur = cur.max(end);
            if b[k].1 > hi {
                break;
            }
            k += 1;
        }
        if cur < hi {
            out.push((cur, hi));
        }
    }
    removed
}

/// CDF of the triangular distribution on `[-1, 1]`.
fn tri_cdf(u: f64) -> f64 {
    if u <= -1.0 {
        0.0
    } else if u <= 0.0 {
        0.5 * (1.0 + u) * (1.0 + u)
    } else if u < 1.0 {
        1.0 - 0.5 * (1.0 - u) * (1.0 - u)
    } else {
        1.0
    }
}

/// Probability that data touched `delta` blocks earlier is still in an L2 of `c` wave footprints.
fn hit_probability(delta: i64, wave: f64, c: f64) -> f64 {
    let d = delta.unsigned_abs() as f64 / wave;
    let m = d.floor();
    let frac = d - m;
    let hit = |m: f64| tri_cdf(c - m) - tri_cdf(-c - m);
    (1.0 - frac) * hit(m) + frac * hit(m + 1.0)
}

impl BlockScratch {
    fn build(&mut self, prog: &MemoryProgram, ext: [usize; 3], kind: AccessKind, slot: usize) {
        self.raw.clear();
        for ins in prog.instructions.iter().filter(|i| i.kind == kind) {
            let l = &prog.layouts[ins.field];
            let e = l.elem_size as i64;
            let a = ins.access;
            let soa = prog.storage[ins.field] == Layout::Fzyx || l.components == 1;
            let q = if soa { a.index as u32 } else { 0 };
            let qoff = if soa {
                0
            } else {
                (a.index * l.stride_q) as i64 * e
            };
            let sx = l.stride[0] as i64 * e;
            for z in 0..ext[2] as i32 {
                for y in 0..ext[1] as i32 {
                    let key = RowKey {
                        field: ins.field as u32,
                        q,
                        z: z + a.offset[2],
                        y: y + a.offset[1],
                    };
                    let x0 = a.offset[0] as i64;
                    if soa && sx == e {
                        self.raw.push((key, x0 * e, (x0 + ext[0] as i64) * e));
                    } else {
                        for x in x0..x0 + ext[0] as i64 {
                            self.raw.push((key, x * sx + qoff, x * sx + qoff + e));
                        }
                    }
                }
            }
        }
        self.raw.sort_unstable_by_key(|a| (a.0, a.1));
        let t = &mut self.templates[slot];
        t.rows.clear();
        t.iv.clear();
        for &(key, lo, hi) in &self.raw {
            match t.rows.last_mut() {
                Some(r) if r.key == key => {
                    let last = t.iv.last_mut().expect("a row has an interval");
                    if lo <= last.1 {
                        last.1 = last.1.max(hi);
                    } else {
                        t.iv.push((lo, hi));
                        r.len += 1;
                    }
                    r.hi = r.hi.max(hi);
                }
                _ => {
                    t.rows.push(Row {
                        key,
                        start: t.iv.len() as u32,
                        len: 1,
                        lo,
                        hi,
                    });
                    t.iv.push((lo, hi));
                }
            }
        }
        t.groups.clear();
        let mut span = [(i32::MAX, i32::MIN); 2];
        for (i, r) in t.rows.iter().enumerate() {
            span[0] = (span[0].0.min(r.key.y), span[0].1.max(r.key.y));
            span[1] = (span[1].0.min(r.key.z), span[1].1.max(r.key.z));
            match t.groups.last_mut() {
                Some(g) if (g.0.field, g.0.q, g.0.z) == (r.key.field, r.key.q, r.key.z) => {
                    g.2 = i + 1
                }
                _ => t.groups.push((r.key, i, i + 1)),
            }
        }
        t.span = span;
    }

    pub(crate) fn run(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        classes: &SizeClasses,
        load_requests: &[f64; 8],
    ) -> BlockTotals {
        let s = p.sector_bytes as i64;
        if self.templates.len() < 16 {
            self.templates.resize_with(16, Template::default);
        }
        for c in 0..8 {
            if let Some(ext) = classes.extent(c) {
                self.build(prog, ext, AccessKind::Load, 2 * c);
                self.build(prog, ext, AccessKind::Store, 2 * c + 1);
            }
        }
        let grid = classes.grid;
        let tile = classes.tile;
        let nblocks: usize = grid.iter().product();
        // Position classes per axis: first, interior, last. Interior blocks differ in the
        // alignment of their rows to sectors, periodically in the block index: one sample per
        // residue class of that period (at most 4), each weighted by its share of blocks.
        let positions = |d: usize| -> Vec<(usize, f64)> {
            let l = prog
                .layouts
                .iter()
                .map(|l| (tile[d] * l.stride[d] * l.elem_size) as i64)
                .fold(0, |acc, b| {
                    acc.max(p.sector_bytes as i64 / gcd(b, p.sector_bytes as i64))
                });
            match grid[d] {
                1 => vec![(0, 1.0)],
                2 => vec![(0, 1.0), (1, 1.0)],
                // Long axes: the first and last blocks differ from the interior ones by well under
                // 1/32 of the axis's blocks, so all blocks take the interior sample (for speed).
                g if g >= MERGE_EDGES => {
                    let period = (l.max(1) as usize).min(4);
                    (0..period)
                        .map(|j| (g / 2 / period * period + j, g as f64 / period as f64))
                        .collect()
                }
                g => {
                    let mut v = vec![(0, 1.0)];
                    let inner = g - 2;
                    let period = (l.max(1) as usize).min(inner).min(4);
                    for j in 0..period {
                        let b = 1 + (inner / 2 / period) * period + j;
                        v.push((b, inner as f64 / period as f64));
                    }
                    v.push((g - 1, 1.0));
                    v
                }
            }
        };
        let (px, py, pz) = (positions(0), positions(1), positions(2));
        let resident = p.blocks_per_sm.min(nblocks.div_ceil(p.sms)).max(1) as f64;
        self.claims.clear();
        let mut tot = BlockTotals::default();
        let (mut footprint_total, mut owned_total, mut partial_total) = (0.0, 0.0, 0.0);
        for &(bz, cz) in &pz {
            for &(by, cy) in &py {
                for &(bx, cx) in &px {
                    let count = cx * cy * cz;
                    let b = [bx, by, bz];
                    for kind in [AccessKind::Load, AccessKind::Store] {
                        let r = self.block(prog, p, classes, b, kind, count);
                        match kind {
                            AccessKind::Load => {
                                let (f, lines) = (r.0 as f64, r.1 as f64);
                                let cls = classes.class_of(b);
                                let no_reuse = load_requests[cls].max(f);
                                let need = resident * lines * p.line_bytes as f64;
                                let refetch = if need > p.l1_bytes as f64 {
                                    self.l1_refetch(prog, p, classes, b, resident)
                                } else {
                                    0.0
                                };
                                tot.l2_load_sectors += count * (f + refetch).min(no_reuse);
                                footprint_total += count * f;
                            }
                            AccessKind::Store => {
                                owned_total += count * r.0 as f64;
                                partial_total += count * r.2 as f64;
                            }
                        }
                    }
                }
            }
        }
        let reused: f64 = self.claims.iter().map(|c| c.1).sum();
        let compulsory = footprint_total - reused;
        let per_block = (compulsory + owned_total) / nblocks as f64;
        let wave = (p.sms * p.blocks_per_sm).min(nblocks) as f64;
        let wave_bytes = (wave * per_block * s as f64).max(1.0);
        let c = p.l2_bytes as f64 / wave_bytes;
        let hits: f64 = self
            .claims
            .iter()
            .map(|(d, n)| n * hit_probability(*d, wave, c))
            .sum();
        tot.dram_load_sectors = footprint_total - hits + partial_total;
        tot.dram_store_sectors = owned_total;
        tot
    }

    /// Sectors a block loads again from L2 because L1 evicted them between two of its uses.
    ///
    /// The block's load instructions run in order (fold point by fold point), all resident blocks
    /// in lockstep; per row of the footprint, the line segments remember the instruction that
    /// touched them last. A reuse misses when the lines touched since then by the block, times the
    /// resident blocks, reach the L1 capacity (the LRU stack distance), so short-distance reuse
    /// (neighbours in x, the same row) survives an oversubscribed L1 and long-distance reuse (other
    /// rows and planes) does not.
    fn l1_refetch(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        classes: &SizeClasses,
        b: [usize; 3],
        resident: f64,
    ) -> f64 {
        let cls = classes.class_of(b);
        let Some(ext) = classes.extent(cls) else {
            return 0.0;
        };
        let tile = classes.tile;
        let cfg = &prog.config;
        let (s, line) = (p.sector_bytes as i64, p.line_bytes as i64);
        let spl = line / s;
        let cap = (p.l1_bytes / p.line_bytes) as f64;
        let t = &self.templates[2 * cls];
        let nrows = t.rows.len();
        if self.last.len() < nrows {
            self.last.resize_with(nrows, Vec::new);
        }
        self.last.iter_mut().for_each(Vec::clear);
        let loads = prog
            .instructions
            .iter()
            .filter(|i| i.kind == AccessKind::Load)
            .count();
        let steps = loads * cfg.points_per_thread();
        self.fenwick.clear();
        self.fenwick.resize(steps, 0);
        let mut touched: i64 = 0;
        let mut refetch = 0i64;
        let origin = [
            (b[0] * tile[0]) as i64,
            (b[1] * tile[1]) as i64,
            (b[2] * tile[2]) as i64,
        ];
        let mut step = 0usize;
        for f in prog.fold_points() {
            let x_lo = f[0] * cfg.block[0];
            let x_hi = ((f[0] + 1) * cfg.block[0]).min(ext[0]);
            for ins in prog
                .instructions
                .iter()
                .filter(|i| i.kind == AccessKind::Load)
            {
                let l = &prog.layouts[ins.field];
                let e = l.elem_size as i64;
                let a = ins.access;
                let soa = prog.storage[ins.field] == Layout::Fzyx || l.components == 1;
                let q = if soa { a.index as u32 } else { 0 };
                let qoff = if soa {
                    0
                } else {
                    (a.index * l.stride_q) as i64 * e
                };
                let sx = l.stride[0] as i64 * e;
                for tz in 0..cfg.block[2] {
                    let z = tz + f[2] * cfg.block[2];
                    for ty in 0..cfg.block[1] {
                        let y = ty + f[1] * cfg.block[1];
                        if x_lo >= x_hi || y >= ext[1] || z >= ext[2] {
                            continue;
                        }
                        let key = RowKey {
                            field: ins.field as u32,
                            q,
                            z: z as i32 + a.offset[2],
                            y: y as i32 + a.offset[1],
                        };
                        let Ok(ri) = t.rows.binary_search_by(|r| r.key.cmp(&key)) else {
                            continue;
                        };
                        let g = l.ghost;
                        let base = prog.bases[ins.field]
                            + ((origin[0] + g[0] as i64) * l.stride[0] as i64
                                + (origin[1] + key.y as i64 + g[1] as i64) * l.stride[1] as i64
                                + (origin[2] + key.z as i64 + g[2] as i64) * l.stride[2] as i64
                                + (q as usize * l.stride_q) as i64)
                                * e;
                        let ox = a.offset[0] as i64;
                        // The row's bytes of this instruction: one interval where elements are
                        // contiguous, one per element where they are strided (AoS).
                        self.tmp.clear();
                        if sx == e {
                            let lo = base + (x_lo as i64 + ox) * e;
                            self.tmp.push((lo, base + (x_hi as i64 + ox) * e));
                        } else {
                            for x in x_lo as i64..x_hi as i64 {
                                let lo = base + (x + ox) * sx + qoff;
                                self.tmp.push((lo, lo + e));
                            }
                        }
                        for &(lo, hi) in &self.tmp {
                            let (l0, l1) = (lo.div_euclid(line), (hi - 1).div_euclid(line) + 1);
                            let (s0, s1) = (lo.div_euclid(s), (hi - 1).div_euclid(s) + 1);
                            self.seg.clear();
                            let row = &mut self.last[ri];
                            for &(a0, a1, k0) in row.iter() {
                                if a1 <= l0 || a0 >= l1 {
                                    self.seg.push((a0, a1, k0));
                                    continue;
                                }
                                let (o0, o1) = (a0.max(l0), a1.min(l1));
                                let newer = touched - fen_prefix(&self.fenwick, k0 as usize);
                                if resident * newer as f64 >= cap {
                                    refetch += (s1.min(o1 * spl) - s0.max(o0 * spl)).max(0);
                                }
                                fen_add(&mut self.fenwick, k0 as usize, -(o1 - o0));
                                touched -= o1 - o0;
                                if a0 < l0 {
                                    self.seg.push((a0, l0, k0));
                                }
                                if a1 > l1 {
                                    self.seg.push((l1, a1, k0));
                                }
                            }
                            self.seg.push((l0, l1, step as u32));
                            fen_add(&mut self.fenwick, step, l1 - l0);
                            touched += l1 - l0;
                            self.seg.sort_unstable();
                            row.clear();
                            row.extend_from_slice(&self.seg);
                        }
                    }
                }
                step += 1;
            }
        }
        refetch as f64
    }

    /// Footprint of the block at `b` for `kind`: returns (sectors, lines, partial sectors); for
    /// loads, records the sectors reused from earlier blocks by distance; for stores, the sectors
    /// counted are those no earlier block wrote.
    fn block(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        classes: &SizeClasses,
        b: [usize; 3],
        kind: AccessKind,
        count: f64,
    ) -> (i64, i64, i64) {
        let s = p.sector_bytes as i64;
        let per_line = (p.line_bytes / p.sector_bytes) as i64;
        let k = usize::from(kind == AccessKind::Store);
        let cls = classes.class_of(b);
        let tile = classes.tile;
        let grid = classes.grid;
        let t = &self.templates[2 * cls + k];
        if t.rows.is_empty() {
            return (0, 0, 0);
        }
        let origin = [
            (b[0] * tile[0]) as i64,
            (b[1] * tile[1]) as i64,
            (b[2] * tile[2]) as i64,
        ];
        let row_base = |key: &RowKey| -> i64 {
            let f = key.field as usize;
            let l = &prog.layouts[f];
            let g = l.ghost;
            let idx = (origin[0] + g[0] as i64) * l.stride[0] as i64
                + (origin[1] + key.y as i64 + g[1] as i64) * l.stride[1] as i64
                + (origin[2] + key.z as i64 + g[2] as i64) * l.stride[2] as i64
                + (key.q as usize * l.stride_q) as i64;
            prog.bases[f] + idx * l.elem_size as i64
        };
        // Own sectors.
        self.own.clear();
        for r in &t.rows {
            let base = row_base(&r.key);
            for &(lo, hi) in &t.iv[r.start as usize..(r.start + r.len) as usize] {
                self.own
                    .push(((base + lo).div_euclid(s), (base + hi - 1).div_euclid(s) + 1));
            }
        }
        merge(&mut self.own);
        let sectors = total(&self.own);
        self.tmp.clear();
        self.tmp.extend(
            self.own
                .iter()
                .map(|(a, b)| (a.div_euclid(per_line), (b - 1).div_euclid(per_line) + 1)),
        );
        merge(&mut self.tmp);
        let lines = total(&self.tmp);
        // Size classes a neighbour within reach can have (partial tiles sit at the grid's end).
        let mut reachable = [false; 8];
        for (c2, re) in reachable.iter_mut().enumerate() {
            if classes.extent(c2).is_none() {
                continue;
            }
            *re = (1..3).all(|d| {
                let (lo, hi) = t.span[d - 1];
                let reach = ((hi - lo + 3) as usize).div_ceil(tile[d]) + 1;
                let partial = (c2 >> d) & 1 == 1;
                !partial || grid[d] - 1 - b[d] <= reach
            });
        }
        // Touchers: other blocks' rows that land on this block's rows.
        self.touch.clear();
        self.bytes.clear();
        for r in &t.rows {
            let base = row_base(&r.key);
            let l = &prog.layouts[r.key.field as usize];
            let tile_bytes = (tile[0] * l.stride[0] * l.elem_size) as i64;
            if k == 1 {
                for &(lo, hi) in &t.iv[r.start as usize..(r.start + r.len) as usize] {
                    self.bytes.push((base + lo, base + hi));
                }
            }
            for (c2, _) in reachable.iter().enumerate().filter(|(_, r)| **r) {
                let t2 = &self.templates[2 * c2 + k];
                for &(gk, g0, g1) in &t2.groups {
                    if gk.field != r.key.field || gk.q != r.key.q {
                        continue;
                    }
                    let ddz = r.key.z - gk.z;
                    if ddz % tile[2] as i32 != 0 {
                        continue;
                    }
                    let dz = (ddz / tile[2] as i32) as i64;
                    let bz = b[2] as i64 + dz;
                    if bz < 0 || bz >= grid[2] as i64 {
                        continue;
                    }
                    let rows = &t2.rows[g0..g1];
                    let (ymin, ymax) = (rows[0].key.y, rows[rows.len() - 1].key.y);
                    let ty = tile[1] as i32;
                    // The same row, and the rows just before and after it in memory, whose ends
                    // may share a sector with this one.
                    for ey in -1..=1 {
                        let target = r.key.y + ey;
                        let dy_min = (target - ymax).div_euclid(ty)
                            + i32::from((target - ymax).rem_euclid(ty) != 0);
                        let dy_max = (target - ymin).div_euclid(ty);
                        for dy in dy_min..=dy_max {
                            let y0 = target - dy * ty;
                            let Ok(j) = rows.binary_search_by(|x| x.key.y.cmp(&y0)) else {
                                continue;
                            };
                            let r0 = &rows[j];
                            let dy = dy as i64;
                            let by = b[1] as i64 + dy;
                            if by < 0 || by >= grid[1] as i64 {
                                continue;
                            }
                            let tbase = base + ey as i64 * (l.stride[1] * l.elem_size) as i64;
                            // Shifts dx·tile_bytes that bring r0's span within a sector of r's.
                            let dx_lo = (base + r.lo - s - (tbase + r0.hi)).div_euclid(tile_bytes);
                            let dx_hi =
                                (base + r.hi + s - (tbase + r0.lo)).div_euclid(tile_bytes) + 1;
                            for dx in dx_lo..=dx_hi {
                                let bx = b[0] as i64 + dx;
                                if bx < 0 || bx >= grid[0] as i64 || (dx == 0 && dy == 0 && dz == 0)
                                {
                                    continue;
                                }
                                let nb = [bx as usize, by as usize, bz as usize];
                                if classes.class_of(nb) != c2 {
                                    continue;
                                }
                                let delta = dx + grid[0] as i64 * (dy + grid[1] as i64 * dz);
                                let shift = tbase + dx * tile_bytes;
                                for &(lo, hi) in
                                    &t2.iv[r0.start as usize..(r0.start + r0.len) as usize]
                                {
                                    let (a, z) = (shift + lo, shift + hi);
                                    if k == 1 {
                                        self.bytes.push((a, z));
                                    }
                                    if delta < 0 {
                                        self.touch.push((
                                            -delta,
                                            a.div_euclid(s),
                                            (z - 1).div_euclid(s) + 1,
                                        ));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // Claim own sectors by the most recent earlier toucher first.
        self.touch.sort_unstable();
        self.rem.clear();
        self.rem.extend_from_slice(&self.own);
        let mut i = 0;
        while i < self.touch.len() {
            let d = self.touch[i].0;
            self.tmp.clear();
            while i < self.touch.len() && self.touch[i].0 == d {
                self.tmp.push((self.touch[i].1, self.touch[i].2));
                i += 1;
            }
            merge(&mut self.tmp);
            let got = subtract(&self.rem, &self.tmp, &mut self.out);
            std::mem::swap(&mut self.rem, &mut self.out);
            if got > 0 && k == 0 {
                match self.claims.iter_mut().find(|c| c.0 == d) {
                    Some(c) => c.1 += count * got as f64,
                    None => self.claims.push((d, count * got as f64)),
                }
            }
        }
        if k == 0 {
            return (sectors, lines, 0);
        }
        // Stores: sectors owned by this block, and those of them not fully written by anyone.
        merge(&mut self.bytes);
        let owned = total(&self.rem);
        let mut full = 0;
        let mut j = 0;
        for &(lo, hi) in &self.rem {
            while j < self.bytes.len() && self.bytes[j].1 <= lo * s {
                j += 1;
            }
            let mut k2 = j;
            while k2 < self.bytes.len() && self.bytes[k2].0 < hi * s {
                let a = (self.bytes[k2].0 + s - 1).div_euclid(s).max(lo);
                let z = self.bytes[k2].1.div_euclid(s).min(hi);
                full += (z - a).max(0);
                k2 += 1;
            }
        }
        (owned, lines, owned - full)
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}
