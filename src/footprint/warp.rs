//! Per-warp volumes: L1 load requests, L1 wavefronts and L2 stores.
//!
//! A warp instruction's count depends only on the set of its active lanes' byte offsets (its
//! *shape*, relative to the lowest lane) and on the lowest lane's address modulo the line size.
//! Every block of a size class has the same shapes; block base addresses differ, so their residues
//! modulo the line size are counted per axis (periodic, so without iterating the grid) and combined.
//! The total over all blocks is then `Σ shape, residue: instructions × blocks × count(shape, residue)`,
//! exact for the whole grid, partial edge tiles included.

use super::geometry::gcd;
use super::{CacheParams, MemoryProgram, SizeClasses};
use crate::address::Var;
use crate::ir::AccessKind;

/// Totals of the per-warp volumes over the whole grid.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WarpTotals {
    /// Sectors of load instructions.
    pub load_sectors: f64,
    /// Wavefronts of all instructions.
    pub wavefronts: f64,
    /// Sectors of store instructions.
    pub store_sectors: f64,
    /// Load-request sectors of one block, per size class (the L1 no-reuse bound).
    pub load_sectors_per_block: [f64; 8],
}

#[derive(Debug, Clone, Copy)]
struct ShapeInfo {
    start: usize,
    len: usize,
    elem: usize,
}

/// Scratch buffers, reused between calls.
#[derive(Debug, Default)]
pub(crate) struct WarpScratch {
    offs: Vec<i64>,
    shape_data: Vec<i64>,
    shapes: Vec<ShapeInfo>,
    /// Per shape: `line` sector counts, `line` bank-pass counts and `line` line counts (by residue),
    /// `u32::MAX` until computed.
    tables: Vec<u32>,
    /// Per shape: `line` load-instruction counts then `line` store-instruction counts.
    g: Vec<f64>,
    hist: [Vec<f64>; 4],
    nz: Vec<(usize, f64)>,
    lane_off: Vec<i64>,
    lanes: Vec<[usize; 3]>,
    fold_off: Vec<i64>,
    /// Per instruction of the field: address constant, kind and index in the program.
    instr: Vec<(i64, AccessKind, usize)>,
    words: Vec<i64>,
    /// Per fold point (from `fold_at[fi]` to `fold_at[fi + 1]`): the field's instructions issued
    /// there as `(kind, residue, count)`: their address constants plus the fold point's offset,
    /// modulo the line; kind 0 loads, 1 stores.
    fold_residues: Vec<(usize, usize, f64)>,
    fold_at: Vec<usize>,
    /// The same over all fold points.
    all_residues: Vec<(usize, usize, f64)>,
    residue_counts: ResidueCounts,
}

/// Instruction counts by kind and residue modulo the line, listing the entries it makes non-zero.
#[derive(Debug, Default)]
struct ResidueCounts {
    /// Per `kind · line + residue`.
    counts: Vec<f64>,
    touched: Vec<usize>,
}

impl ResidueCounts {
    /// Zero counts for lines of `line` bytes.
    fn reset(&mut self, line: usize) {
        self.counts.clear();
        self.counts.resize(2 * line, 0.0);
        self.touched.clear();
    }

    /// Adds `n` instructions of kind `k` at `residue`.
    fn add(&mut self, k: usize, residue: usize, n: f64, line: usize) {
        let i = k * line + residue;
        if self.counts[i] == 0.0 {
            self.touched.push(i);
        }
        self.counts[i] += n;
    }

    /// Moves the non-zero counts to `out` as `(kind, residue, count)`, leaving all counts zero.
    fn drain_into(&mut self, out: &mut Vec<(usize, usize, f64)>, line: usize) {
        for &i in &self.touched {
            out.push((i / line, i % line, self.counts[i]));
            self.counts[i] = 0.0;
        }
        self.touched.clear();
    }
}

impl WarpScratch {
    fn intern(&mut self, elem: usize, line: usize) -> usize {
        let base = self.offs[0];
        let n = self.offs.len();
        for (i, s) in self.shapes.iter().enumerate().rev() {
            if s.len == n
                && s.elem == elem
                && self.shape_data[s.start..s.start + n]
                    .iter()
                    .zip(&self.offs)
                    .all(|(a, b)| *a == b - base)
            {
                return i;
            }
        }
        let start = self.shape_data.len();
        self.shape_data.extend(self.offs.iter().map(|o| o - base));
        self.shapes.push(ShapeInfo {
            start,
            len: n,
            elem,
        });
        self.tables.extend(std::iter::repeat_n(u32::MAX, 3 * line));
        self.g.extend(std::iter::repeat_n(0.0, 2 * line));
        self.shapes.len() - 1
    }

    /// Sectors and wavefronts of shape `s` whose lowest lane sits at residue `r` of a line.
    fn counts(&mut self, s: usize, r: usize, p: &CacheParams) -> (u32, f64) {
        let line = p.line_bytes;
        let t = 3 * line * s;
        if self.tables[t + r] == u32::MAX {
            let sh = self.shapes[s];
            let data = &self.shape_data[sh.start..sh.start + sh.len];
            let sectors = distinct_units(data, r as i64, p.sector_bytes);
            let lines = distinct_units(data, r as i64, line);
            let banks = bank_passes(data.iter().map(|o| r as i64 + o), sh.elem, &mut self.words);
            self.tables[t + r] = sectors;
            self.tables[t + line + r] = banks;
            self.tables[t + 2 * line + r] = lines;
        }
        let (banks, lines) = (self.tables[t + line + r], self.tables[t + 2 * line + r]);
        (self.tables[t + r], wavefronts(banks, lines))
    }

    /// Residue histogram (modulo `line`) of `c·B` for `B` in `lo..hi`, into `hist[slot]`.
    fn axis_hist(&mut self, slot: usize, c: i64, lo: usize, hi: usize, line: usize) {
        let h = &mut self.hist[slot];
        h.clear();
        h.resize(line, 0.0);
        let l = line as i64;
        let step = c.rem_euclid(l);
        let period = if step == 0 {
            1
        } else {
            (l / gcd(step, l)) as usize
        };
        let n = hi - lo;
        for k in 0..n.min(period) {
            let count = (n - k).div_ceil(period);
            let r = (((lo + k) as i64 % l) * step).rem_euclid(l) as usize;
            h[r] += count as f64;
        }
    }

    /// `hist[dst] = hist[a] ⊛ hist[b]` (cyclic convolution modulo `line`).
    fn convolve(&mut self, a: usize, b: usize, dst: usize, line: usize) {
        let mut out = std::mem::take(&mut self.hist[dst]);
        out.clear();
        out.resize(line, 0.0);
        self.nz.clear();
        self.nz.extend(
            self.hist[b]
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0.0)
                .map(|(i, v)| (i, *v)),
        );
        for (i, va) in self.hist[a].iter().enumerate() {
            if *va == 0.0 {
                continue;
            }
            for (j, vb) in &self.nz {
                out[(i + j) & (line - 1)] += va * vb;
            }
        }
        self.hist[dst] = out;
    }

    pub(crate) fn run(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        classes: &SizeClasses,
    ) -> WarpTotals {
        let line = p.line_bytes;
        self.shapes.clear();
        self.shape_data.clear();
        self.tables.clear();
        self.g.clear();
        let cfg = &prog.config;
        let threads = cfg.threads();
        let nwarps = threads.div_ceil(p.warp_size);
        let folds: Vec<[usize; 3]> = prog.fold_points().collect();
        let mut tot = WarpTotals::default();
        // Thread indices by linear id (`prog.thread`, without its divisions per lane).
        self.lanes.clear();
        let [bx, by, bz] = cfg.block;
        for tz in 0..bz {
            for ty in 0..by {
                self.lanes.extend((0..bx).map(|tx| [tx, ty, tz]));
            }
        }
        for field in 0..prog.layouts.len() {
            self.instr.clear();
            let mut coeffs = None;
            for (n, ins) in prog.instructions.iter().enumerate() {
                if ins.field == field {
                    coeffs = Some(ins.address.coeffs);
                    self.instr.push((ins.address.constant, ins.kind, n));
                }
            }
            let Some(coeffs) = coeffs else { continue };
            let elem = prog.layouts[field].elem_size;
            let co = |v: Var| coeffs[v.slot()];
            self.lane_off.clear();
            for &t in &self.lanes {
                self.lane_off.push(
                    (0..3)
                        .map(|d| co(Var::of_dim(d).0) * t[d] as i64)
                        .sum::<i64>(),
                );
            }
            self.fold_off.clear();
            for f in &folds {
                self.fold_off.push(
                    (0..3)
                        .map(|d| co(Var::of_dim(d).2) * f[d] as i64)
                        .sum::<i64>(),
                );
            }
            // The residues of the instructions issued at each fold point, and over all of them:
            // the same for every warp and size class, so counted once (every count is a whole
            // number, so adding it at once sums exactly what adding its ones did).
            let mask = line as i64 - 1;
            self.residue_counts.reset(line);
            self.fold_residues.clear();
            self.fold_at.clear();
            for (fi, off) in self.fold_off.iter().enumerate() {
                self.fold_at.push(self.fold_residues.len());
                for &(c, kind, n) in &self.instr {
                    if prog.issues(fi, n) {
                        // `line` is a power of two: the mask is the Euclidean remainder.
                        let r = ((off + c) & mask) as usize;
                        let k = usize::from(kind == AccessKind::Store);
                        self.residue_counts.add(k, r, 1.0, line);
                    }
                }
                self.residue_counts
                    .drain_into(&mut self.fold_residues, line);
            }
            self.fold_at.push(self.fold_residues.len());
            for &(k, r, n) in &self.fold_residues {
                self.residue_counts.add(k, r, n, line);
            }
            self.all_residues.clear();
            self.residue_counts.drain_into(&mut self.all_residues, line);
            for class in 0..8 {
                let Some(ext) = classes.extent(class) else {
                    continue;
                };
                let range = |d: usize| classes.axes[d][(class >> d) & 1];
                for d in 0..3 {
                    let (_, lo, hi) = range(d);
                    self.axis_hist(d, co(Var::of_dim(d).1), lo, hi, line);
                }
                self.convolve(0, 1, 3, line);
                self.hist.swap(0, 3);
                self.convolve(0, 2, 3, line);
                self.g.iter_mut().for_each(|v| *v = 0.0);
                let full = ext == classes.tile;
                for w in 0..nwarps {
                    let lanes = w * p.warp_size..((w + 1) * p.warp_size).min(threads);
                    if full {
                        // Every lane is active at every fold point: one shape, at the same base
                        // plus each fold point's offset (in the residues).
                        self.offs.clear();
                        self.offs.extend(lanes.map(|l| self.lane_off[l]));
                        self.offs.sort_unstable();
                        let sid = self.intern(elem, line);
                        let (g0, b0) = (2 * line * sid, self.offs[0]);
                        for &(k, r, n) in &self.all_residues {
                            self.g[g0 + k * line + ((b0 + r as i64) & mask) as usize] += n;
                        }
                        continue;
                    }
                    for (fi, f) in folds.iter().enumerate() {
                        self.offs.clear();
                        for l in lanes.clone() {
                            let t = self.lanes[l];
                            if (0..3).all(|d| t[d] + f[d] * cfg.block[d] < ext[d]) {
                                self.offs.push(self.lane_off[l]);
                            }
                        }
                        if self.offs.is_empty() {
                            continue;
                        }
                        self.offs.sort_unstable();
                        let sid = self.intern(elem, line);
                        // Lane offsets exclude the fold point's: the residues hold it.
                        let (g0, b0) = (2 * line * sid, self.offs[0]);
                        for &(k, r, n) in
                            &self.fold_residues[self.fold_at[fi]..self.fold_at[fi + 1]]
                        {
                            self.g[g0 + k * line + ((b0 + r as i64) & mask) as usize] += n;
                        }
                    }
                }
                // Combine instruction residues with block residues.
                self.nz.clear();
                let h = &self.hist[3];
                self.nz.extend(
                    h.iter()
                        .enumerate()
                        .filter(|(_, v)| **v != 0.0)
                        .map(|(i, v)| (i, *v)),
                );
                let nz = std::mem::take(&mut self.nz);
                let count: f64 = nz.iter().map(|x| x.1).sum();
                let mut class_loads = 0.0;
                for sid in 0..self.shapes.len() {
                    for k in 0..2 {
                        for r in 0..line {
                            let gv = self.g[2 * line * sid + k * line + r];
                            if gv == 0.0 {
                                continue;
                            }
                            for (rb, nb) in &nz {
                                let (sec, wf) = self.counts(sid, (r + rb) & (line - 1), p);
                                let m = gv * nb;
                                tot.wavefronts += m * wf;
                                if k == 0 {
                                    class_loads += m * sec as f64;
                                } else {
                                    tot.store_sectors += m * sec as f64;
                                }
                            }
                        }
                    }
                }
                self.nz = nz;
                tot.load_sectors += class_loads;
                if count > 0.0 {
                    tot.load_sectors_per_block[class] += class_loads / count;
                }
            }
        }
        tot
    }
}

/// Distinct `unit`-byte units (sectors, lines; a power of two) the ascending byte offsets `data`
/// (not negative), shifted by `r` (not negative), fall in.
fn distinct_units(data: &[i64], r: i64, unit: usize) -> u32 {
    // A shift, not a division (the divisor is not known to be a power of two where it is used).
    let shift = unit.trailing_zeros();
    let mut n = 0u32;
    let mut last = i64::MIN;
    for o in data {
        let u = (r + o) >> shift;
        if u != last {
            n += 1;
            last = u;
        }
    }
    n
}

/// Banks of the L1 data array: 32 banks of 4-byte words.
const BANKS: i64 = 32;
const WORD: i64 = 4;
/// Wavefronts per line an instruction touches beyond its first, on top of its bank passes: the
/// least-squares fit (relative error) to the H200 wavefront counters of all committed sweeps,
/// 0.199 (`bench/results/h200/counters`, "After the visitor fixes").
pub const WAVEFRONTS_PER_EXTRA_LINE: f64 = 0.2;

/// L1 wavefronts of a warp instruction with `banks` bank passes ([`bank_passes`]) over `lines`
/// distinct lines. The data stage delivers one 4-byte word per bank per pass, so bank conflicts,
/// not lines, set the count (an H200 serves 32 lanes in 32 rows whose words fall on two banks in
/// ~20 wavefronts, 32 contiguous f64 over 3 lines in 2.3); every further line costs a fraction.
pub fn wavefronts(banks: u32, lines: u32) -> f64 {
    banks as f64 + WAVEFRONTS_PER_EXTRA_LINE * lines.saturating_sub(1) as f64
}

/// Bank passes of one warp instruction whose lanes access `elem` bytes at each byte address of
/// `addrs`: the most distinct 4-byte words any bank holds, at least one pass per 128 bytes.
pub fn bank_passes(addrs: impl Iterator<Item = i64>, elem: usize, words: &mut Vec<i64>) -> u32 {
    words.clear();
    for a in addrs {
        let first = a.div_euclid(WORD);
        let last = (a + elem as i64 - 1).div_euclid(WORD);
        words.extend(first..=last);
    }
    words.sort_unstable();
    words.dedup();
    let mut per_bank = [0u32; BANKS as usize];
    for w in words.iter() {
        per_bank[w.rem_euclid(BANKS) as usize] += 1;
    }
    let min = (words.len() as u32).div_ceil(BANKS as u32);
    per_bank.into_iter().max().unwrap_or(0).max(min)
}
