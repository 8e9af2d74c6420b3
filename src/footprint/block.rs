//! Per-block volumes: L2 loads (L1 misses) and DRAM traffic.
//!
//! Exact totals come from region counts (`geometry`), without enumerating blocks or rows: the
//! footprint of every block (summed per size class over the blocks' alignments to sectors), the
//! union of all blocks' footprints (the compulsory DRAM load `G`), and the union of all stores
//! (the DRAM store, and the sectors no store covers fully, which cost a read).
//!
//! Reuse is modelled from the row statistics of representative blocks (`rows`), all in the time
//! of the machine's run: blocks start in launch order in waves of `W` (SMs × resident blocks), the
//! blocks of a wave run in lockstep, step by step (fold point by fold point, instruction by
//! instruction).
//!
//! * L2 load = each block's distinct sectors, plus what L1 evicts between two uses. A line touched
//!   again after a gap of `g` steps is still in L1 if the lines all resident blocks touched in
//!   between fit; that volume is the block's working set over `g` steps (Denning's, from the
//!   distribution of line-reuse gaps) times the resident blocks. Replaying the line touches with
//!   that threshold gives the re-fetched sectors.
//! * DRAM load = `G` + the reuse between blocks that L2 no longer holds + re-fetches that miss L2
//!   + reads of partly written sectors. A sector of a block that an earlier block (`Δ` blocks back
//!   in launch order) touched is a hit if the distinct data the machine moved through L2 between
//!   the two first touches is below the L2 capacity. That volume is counted from real positions:
//!   the two blocks run `m = ⌊Δ/W⌋` or `m + 1` waves apart (in proportion to `Δ mod W`); within a
//!   wave every block streams its sectors into L2 in first-touch order, so the volume is `W` times
//!   the block's sectors first touched between the two steps (same wave), or the rest of the
//!   earlier block's run, `m - 1` whole waves and the start of this block's run (later waves).
//!   The reuse total is exact (`Σ footprints - G`); the row statistics give how it splits by
//!   distance.
//! * DRAM store = the distinct sectors written.

use super::geometry::{convolve, residues, Counter, ElemBox, Plane, PlaneAccess, Tally};
use super::rows::{load_boxes, sample_rows, BlockAt, Neighbour, RowPass, SampledRow, Shape};
use super::{CacheParams, MemoryProgram, SizeClasses};
use crate::ir::AccessKind;

/// Rows processed per representative block at most.
const ROW_BUDGET: usize = 64;
/// Axes with fewer blocks than this are sampled at their first block as well as inside.
const SMALL_GRID: usize = 16;

/// Totals over the grid, in sectors.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BlockTotals {
    pub l2_load_sectors: f64,
    pub dram_load_sectors: f64,
    pub dram_store_sectors: f64,
}

/// Scratch buffers, reused between calls.
#[derive(Debug, Default)]
pub(crate) struct BlockScratch {
    planes: Vec<Plane>,
    acc: Vec<PlaneAccess>,
    /// The loads of `acc`.
    loads: Vec<PlaneAccess>,
    /// Smallest and largest load offset per axis.
    reach: [(i64, i64); 3],
    counter: Counter,
    boxes: Vec<ElemBox>,
    shifts: Vec<(i64, f64)>,
    hx: Vec<(i64, f64)>,
    hy: Vec<(i64, f64)>,
    hz: Vec<(i64, f64)>,
    tmp: Vec<(i64, f64)>,
    regions: Vec<(i64, i64, i64, i64)>,
    plane_regions: Vec<(usize, usize, usize)>,
    rows: Vec<SampledRow>,
    pass: RowPass,
    neighbours: Vec<Neighbour>,
    ws: Vec<f64>,
    cum: Vec<f64>,
}

/// Samples along one axis of `g` blocks: `(block index, blocks it stands for)`.
fn positions(g: usize) -> Vec<(usize, f64)> {
    match g {
        1 => vec![(0, 1.0)],
        g if g < SMALL_GRID => vec![(0, 1.0), ((g / 2).max(1), (g - 1) as f64)],
        g => vec![(g / 2, g as f64)],
    }
}

impl BlockScratch {
    /// Position and extent of block `b`.
    fn at(classes: &SizeClasses, b: [usize; 3]) -> BlockAt {
        let ext = classes
            .extent(classes.class_of(b))
            .expect("a block's class exists");
        BlockAt {
            origin: std::array::from_fn(|d| (b[d] * classes.tile[d]) as i64),
            ext: ext.map(|e| e as i64),
        }
    }

    /// Footprint bounding box of the loads of a block at `at`.
    fn bbox(&self, at: &BlockAt) -> [(i64, i64); 3] {
        std::array::from_fn(|d| {
            (
                at.origin[d] + self.reach[d].0,
                at.origin[d] + at.ext[d] + self.reach[d].1,
            )
        })
    }

    /// Earlier blocks whose footprint may share sectors with that of block `b`, closest first.
    fn find_neighbours(&mut self, classes: &SizeClasses, b: [usize; 3], slack: i64) {
        self.neighbours.clear();
        let own = self.bbox(&Self::at(classes, b));
        let grid = classes.grid;
        let reach = |d: usize| -> i64 {
            let span = own[d].1 - own[d].0 + if d == 0 { 2 * slack } else { 0 };
            span / classes.tile[d] as i64 + 1
        };
        let (rx, ry, rz) = (reach(0), reach(1), reach(2));
        let id = |v: [i64; 3]| v[0] + grid[0] as i64 * (v[1] + grid[1] as i64 * v[2]);
        let me = [b[0] as i64, b[1] as i64, b[2] as i64];
        for dz in -rz..=0 {
            for dy in -ry..=ry {
                for dx in -rx..=rx {
                    let n = [me[0] + dx, me[1] + dy, me[2] + dz];
                    if (0..3).any(|d| n[d] < 0 || n[d] >= grid[d] as i64) {
                        continue;
                    }
                    let delta = id(me) - id(n);
                    if delta <= 0 {
                        continue;
                    }
                    let nb = [n[0] as usize, n[1] as usize, n[2] as usize];
                    let at = Self::at(classes, nb);
                    let bb = self.bbox(&at);
                    let overlaps = (0..3).all(|d| {
                        let sl = if d == 0 { slack } else { 0 };
                        bb[d].0 < own[d].1 + sl && own[d].0 - sl < bb[d].1
                    });
                    if overlaps {
                        self.neighbours.push(Neighbour {
                            delta,
                            at,
                            bbox: bb,
                        });
                    }
                }
            }
        }
        self.neighbours.sort_unstable_by_key(|n| n.delta);
    }

    /// Samples the rows of the footprint of a block at `at` into `self.rows`.
    fn sample(&mut self, at: &BlockAt) {
        self.regions.clear();
        self.plane_regions.clear();
        for pi in 0..self.planes.len() {
            load_boxes(&self.acc, pi, at, &mut self.boxes);
            if !self.boxes.is_empty() {
                self.counter.decompose(&self.planes[pi], &self.boxes);
            }
            self.keep_regions(pi);
        }
        self.sample_kept();
    }

    /// Keeps the regions of the last decomposition, those of plane `pi`, for sampling.
    fn keep_regions(&mut self, pi: usize) {
        let start = self.regions.len();
        if !self.boxes.is_empty() {
            for r in &self.counter.regions {
                self.regions.push((r.y.0, r.y.1, r.z.0, r.z.1));
            }
        }
        self.plane_regions.push((pi, start, self.regions.len()));
    }

    /// Samples rows from the kept regions into `self.rows`.
    fn sample_kept(&mut self) {
        self.rows.clear();
        let total: f64 = self
            .regions
            .iter()
            .map(|r| ((r.1 - r.0) * (r.3 - r.2)) as f64)
            .sum();
        let mut offset = 0.0;
        for &(pi, a, b) in &self.plane_regions {
            sample_rows(
                &self.regions[a..b],
                pi as u32,
                ROW_BUDGET,
                total,
                offset,
                &mut self.rows,
            );
            offset += self.regions[a..b]
                .iter()
                .map(|r| ((r.1 - r.0) * (r.3 - r.2)) as f64)
                .sum::<f64>();
        }
    }

    pub(crate) fn run(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        classes: &SizeClasses,
        load_requests: &[f64; 8],
        l2_store_sectors: f64,
    ) -> BlockTotals {
        let s = p.sector_bytes as i64;
        super::geometry::planes(prog, &mut self.planes, &mut self.acc);
        self.loads.clear();
        self.loads
            .extend(self.acc.iter().filter(|a| a.kind == AccessKind::Load));
        self.reach = std::array::from_fn(|d| {
            self.loads.iter().fold((i64::MAX, i64::MIN), |r, a| {
                (r.0.min(a.off[d]), r.1.max(a.off[d]))
            })
        });
        let grid = classes.grid;
        let tile = classes.tile;
        let nblocks: usize = grid.iter().product();
        let dom = prog.domain.size.map(|n| n as i64);

        // The representative block inside the grid, and on small axes the first block too (it has
        // no earlier neighbour along that axis).
        let (px, py, pz) = (positions(grid[0]), positions(grid[1]), positions(grid[2]));
        let rep = [
            px.last().expect("an axis has a block").0,
            py.last().expect("an axis has a block").0,
            pz.last().expect("an axis has a block").0,
        ];
        let rep_at = Self::at(classes, rep);
        let rep_class = classes.class_of(rep);

        // Exact footprint totals per size class: one block of the class (the representative where
        // it belongs to the class), placed at every block's alignment to sectors (a histogram of
        // byte shifts). The representative's decomposition also gives its distinct lines and the
        // regions its rows are sampled from.
        let mut footprint = [0.0f64; 8];
        let mut count = [0.0f64; 8];
        let mut rep_lines = 0.0;
        self.regions.clear();
        self.plane_regions.clear();
        for c in 0..8 {
            if classes.extent(c).is_none() {
                continue;
            }
            let range = |d: usize| classes.axes[d][(c >> d) & 1];
            let first = [range(0).1, range(1).1, range(2).1];
            let one = if c == rep_class { rep } else { first };
            count[c] = (0..3).map(|d| range(d).2 - range(d).1).product::<usize>() as f64;
            let at = Self::at(classes, one);
            for pi in 0..self.planes.len() {
                let pl = self.planes[pi];
                load_boxes(&self.acc, pi, &at, &mut self.boxes);
                if !self.boxes.is_empty() {
                    let rel = |d: usize| {
                        let (_, lo, hi) = range(d);
                        (lo as i64 - one[d] as i64, hi as i64 - one[d] as i64)
                    };
                    let (x, y, z) = (rel(0), rel(1), rel(2));
                    residues(tile[0] as i64 * pl.pitch, x.0, x.1, 0, s, &mut self.hx);
                    residues(tile[1] as i64 * pl.row, y.0, y.1, 0, s, &mut self.hy);
                    residues(tile[2] as i64 * pl.layer, z.0, z.1, 0, s, &mut self.hz);
                    convolve(&self.hx, &self.hy, s, &mut self.tmp);
                    convolve(&self.tmp, &self.hz, s, &mut self.shifts);
                    self.counter.decompose(&pl, &self.boxes);
                    footprint[c] += self.counter.count_decomposed(&pl, &self.shifts, s).distinct;
                    if c == rep_class {
                        let line = p.line_bytes as i64;
                        rep_lines += self.counter.count_decomposed(&pl, &[(0, 1.0)], line).distinct;
                    }
                }
                if c == rep_class {
                    self.keep_regions(pi);
                }
            }
        }
        let all_footprints: f64 = footprint.iter().sum();

        // The unions over the whole grid: every point of the domain is updated once, so they are
        // the domain shifted by each access's offset.
        let whole = BlockAt {
            origin: [0; 3],
            ext: dom,
        };
        let mut compulsory = 0.0;
        let mut stored = Tally::default();
        for pi in 0..self.planes.len() {
            let pl = self.planes[pi];
            load_boxes(&self.acc, pi, &whole, &mut self.boxes);
            if !self.boxes.is_empty() {
                compulsory += self.counter.count(&pl, &self.boxes, &[(0, 1.0)], s).distinct;
            }
            self.boxes.clear();
            for a in self
                .acc
                .iter()
                .filter(|a| a.plane == pi && a.kind == AccessKind::Store)
            {
                self.boxes.push(ElemBox {
                    x: (a.off[0], a.off[0] + dom[0]),
                    y: (a.off[1], a.off[1] + dom[1]),
                    z: (a.off[2], a.off[2] + dom[2]),
                    comp: a.comp,
                });
            }
            if !self.boxes.is_empty() {
                let t = self.counter.count(&pl, &self.boxes, &[(0, 1.0)], s);
                stored.distinct += t.distinct;
                stored.full += t.full;
            }
        }

        // Row statistics: the representative block inside the grid, and on small axes the first
        // block too (it has no earlier neighbour along that axis).
        let cfg = &prog.config;
        let sh = Shape {
            block: cfg.block.map(|v| v as i64),
            fold: cfg.fold.map(|v| v as i64),
            slots: prog.instructions.len() as u32,
            sector: s,
            line: p.line_bytes as i64,
        };
        let steps = sh.steps();
        self.pass.reset(steps);
        let slack = self
            .planes
            .iter()
            .map(|pl| s / pl.pitch + 1)
            .max()
            .unwrap_or(1);
        let rep_weight = px.last().map_or(1.0, |v| v.1)
            * py.last().map_or(1.0, |v| v.1)
            * pz.last().map_or(1.0, |v| v.1);
        self.find_neighbours(classes, rep, slack);
        self.sample_kept();
        let rows = std::mem::take(&mut self.rows);
        let neighbours = std::mem::take(&mut self.neighbours);
        // L1 can only overflow if the resident blocks' distinct lines exceed it.
        let resident = p.blocks_per_sm.min(nblocks.div_ceil(p.sms)).max(1) as f64;
        let cap = (p.l1_bytes / p.line_bytes) as f64;
        let l1_overflows = resident * rep_lines > cap;
        self.pass.block(
            &self.planes,
            &self.loads,
            &sh,
            &rep_at,
            &rows,
            &neighbours,
            l1_overflows,
            rep_weight,
        );
        self.rows = rows;
        self.neighbours = neighbours;
        let rep_sectors: f64 = self.pass.first_touch.iter().sum::<f64>() / rep_weight;
        for &(bz, wz) in &pz {
            for &(by, wy) in &py {
                for &(bx, wx) in &px {
                    let b = [bx, by, bz];
                    if b == rep {
                        continue;
                    }
                    let at = Self::at(classes, b);
                    self.find_neighbours(classes, b, slack);
                    self.sample(&at);
                    let rows = std::mem::take(&mut self.rows);
                    let neighbours = std::mem::take(&mut self.neighbours);
                    let w = wx * wy * wz;
                    self.pass.block(
                        &self.planes,
                        &self.loads,
                        &sh,
                        &at,
                        &rows,
                        &neighbours,
                        false,
                        w,
                    );
                    self.rows = rows;
                    self.neighbours = neighbours;
                }
            }
        }

        // L1: the working set of the representative block decides which reuse gaps evict.
        let mut refetch_ratio = 0.0;
        if l1_overflows {
            self.pass.working_set(steps, &mut self.ws);
            let threshold = self
                .ws
                .iter()
                .position(|w| resident * w / rep_weight >= cap)
                .map_or(u32::MAX, |g| g.max(1) as u32);
            let refetched = self.pass.refetches(threshold);
            if rep_sectors > 0.0 {
                refetch_ratio = refetched / rep_weight / rep_sectors;
            }
        }
        let mut l2_load = 0.0;
        let mut refetch_total = 0.0;
        for c in 0..8 {
            if count[c] == 0.0 {
                continue;
            }
            let per_block = footprint[c] / count[c];
            let bound = load_requests[c].max(per_block);
            let with = (per_block * (1.0 + refetch_ratio)).min(bound);
            l2_load += count[c] * with;
            refetch_total += count[c] * (with - per_block);
        }

        // L2: the stream of first touches of the average block, per step, stores included.
        let avg_loads = all_footprints / nblocks as f64;
        // A sector written several times (partial stores) occupies L2 once.
        let avg_stores = stored.distinct.min(l2_store_sectors) / nblocks as f64;
        let first_total: f64 = self.pass.first_touch.iter().sum();
        let store_slots: Vec<usize> = prog
            .instructions
            .iter()
            .enumerate()
            .filter(|(_, i)| i.kind == AccessKind::Store)
            .map(|(j, _)| j)
            .collect();
        let points = cfg.points_per_thread();
        self.cum.clear();
        self.cum.push(0.0);
        let mut acc_sum = 0.0;
        for k in 0..steps {
            if first_total > 0.0 {
                acc_sum += self.pass.first_touch[k] / first_total * avg_loads;
            }
            if store_slots.contains(&(k % sh.slots as usize)) {
                acc_sum += avg_stores / (points * store_slots.len()) as f64;
            }
            self.cum.push(acc_sum);
        }
        let per_block = acc_sum.max(1e-30);
        let wave = (p.sms * p.blocks_per_sm).min(nblocks).max(1) as f64;
        let reused = (all_footprints - compulsory).max(0.0);
        let claimed: f64 = self.pass.claims.iter().map(|c| c.sectors).sum();
        // Sharing inside a wave: the share of the reuse whose blocks run in the same wave.
        let same_wave = |delta: i64| (1.0 - delta as f64 / wave).max(0.0);
        let intra = if claimed > 0.0 {
            reused / nblocks as f64
                * self
                    .pass
                    .claims
                    .iter()
                    .map(|c| c.sectors * same_wave(c.delta))
                    .sum::<f64>()
                / claimed
        } else {
            0.0
        };
        let new_per_wave = (per_block - intra).max(0.0);
        let kappa = new_per_wave / per_block;
        let l2 = p.l2_bytes as f64 / s as f64;
        let cum = &self.cum;
        let hit = |m: f64, then: u32, now: u32| -> f64 {
            let (t, n) = (then as usize, now as usize);
            let d = if m == 0.0 {
                wave * kappa * (cum[n] - cum[t]).abs()
            } else {
                wave * kappa * (per_block - cum[t + 1] + cum[n]) + wave * (m - 1.0) * new_per_wave
            };
            f64::from(u8::from(d < l2))
        };
        let h = if claimed > 0.0 {
            self.pass
                .claims
                .iter()
                .map(|c| {
                    let d = c.delta as f64 / wave;
                    let m = d.floor();
                    let frac = d - m;
                    c.sectors
                        * ((1.0 - frac) * hit(m, c.then, c.now) + frac * hit(m + 1.0, c.then, c.now))
                })
                .sum::<f64>()
                / claimed
        } else {
            1.0
        };
        let refetch_total_sampled: f64 = self.pass.refetched.iter().map(|r| r.sectors).sum();
        let refetch_hit = if refetch_total_sampled > 0.0 {
            self.pass
                .refetched
                .iter()
                .map(|r| r.sectors * hit(0.0, r.then, r.now))
                .sum::<f64>()
                / refetch_total_sampled
        } else {
            1.0
        };
        BlockTotals {
            l2_load_sectors: l2_load,
            dram_load_sectors: compulsory
                + reused * (1.0 - h)
                + refetch_total * (1.0 - refetch_hit)
                + (stored.distinct - stored.full),
            dram_store_sectors: stored.distinct,
        }
    }
}
