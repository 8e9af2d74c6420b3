//! Per-block volumes: L2 loads (L1 misses) and DRAM traffic.
//!
//! Exact totals come from region counts (`geometry`), without enumerating blocks or rows: the
//! footprint of every block (summed per size class over the blocks' alignments to sectors), the
//! union of all blocks' footprints (the compulsory DRAM load `G`), and the union of all stores
//! (the DRAM store, and the sectors no store covers fully, which cost a read). The grid unions
//! depend on the kernel and the domain only and are kept for the next configuration.
//!
//! Reuse is modelled from the row statistics of representative blocks (`rows`), in the time of
//! the machine's run: `W` blocks are resident (SMs × resident blocks). For L1 the blocks of an
//! SM run in lockstep, step by step (fold point by fold point, instruction by instruction). For
//! L2 the blocks start in launch order as others finish (measured,
//! `bench/results/h100/counters/block-placement/`): block `n`'s step `s` comes `n / W + s / S`
//! block durations after block 0's start (`rows::Clock`), and a window of L2 traffic holds the
//! wave's blocks at all steps of their runs (`LaunchWindow`).
//!
//! L2 load is each block's distinct sectors plus what L1 evicts between two uses. A line touched
//! again after `g` load steps has seen the lines all resident blocks touched in between: the
//! block's working set (Denning's, from the distribution of line-reuse gaps) over the window of
//! the `g - 1` steps between and parts of the two steps of its touches; replaying the line touches
//! with the resulting eviction probabilities gives the re-fetched sectors. Within the burst of
//! loads a warp issues back to back (up to its first fold point's last load), only the machine's
//! measured share of the SM's warps interleave with it, so those reuses see that share of the
//! window's lines. A warp reading AoS records waits an L2 latency for each load (one of its many
//! lines misses), so after its first burst its reuses of its own lines see the lines L1 serves
//! meanwhile (its queue and one L2 latency) instead of every resident warp's loads. Where the
//! program has the compiled code's issue order
//! (`MemoryProgram::with_compiled_order`), L1's steps follow it: ptxas interleaves the fold
//! points' loads, which stretches the reuses within a fold point.
//!
//! DRAM load is `G` counted in L2's fetches from DRAM (the aligned `dram_fetch_bytes` around a
//! missed sector), plus the reused sectors L2 no longer holds, plus re-fetches and re-writes that
//! miss L2, plus reads of partly written sectors. Every access of a sector after its first
//! is *linked* to the previous access in time, by any block, at its launch time. L2 ages whole
//! lines, so a read of another sector of the line in between splits the link, which takes the
//! longer part (`RowPass::renew_lines`). L2 does not see L1's hits, so a block's access is the
//! last of its first touch and its L1 re-fetches of the sector (as expected from the
//! representative block's re-fetches, found by a pass over its rows before the link search).
//! A link hits if the distinct sectors the machine moved through L2 in between stay below the L2
//! capacity (where the machine gives L2's measured misses by reuse distance, it hits with the
//! measured share instead, at the distance times `l2_reuse_distance_scale`). That volume is
//! counted from real positions: every resident block streams the average block's L2 accesses
//! (first touches, store instructions, re-fetches) at its mean rate; a sector accessed several
//! times inside the window counts once, so the links lying inside the window are subtracted. The
//! write pairs below keep windows of lockstep waves. A written sector counts as the
//! machine's `l2_store_weight` read ones (written data takes more of L2's room). A re-fetch is
//! linked to its block's previous touch, or, for the share of sectors an earlier-launched block
//! first touches at the same step (an x-neighbour sharing the sector, which re-fetches it as this
//! block does), to that block's re-fetch (`RowPass::mirrored`); re-fetches stream at the wave's
//! distinct share of the sectors. The
//! reuse total is exact (`Σ footprints - G`); the links of the sampled rows say how it splits by
//! distance. L2 holds whole lines, and each warp instruction on AoS records reads one word of
//! every record: a read within a wave sees at least the lines of the records the wave's accesses
//! touch between (`RecordWindow`), however few of their sectors were read.
//!
//! DRAM store is the distinct sectors written, plus a write for every sector L2 evicts between
//! two of its writes by different steps or blocks (each part partial, so also read: a sector
//! split `e` times is written back and filled in `e + 1` pieces), plus the
//! machine's measured share of the sectors a block's stores complete only together (AoS record
//! words) that L2 writes back before they are complete (a write and a fill each).

use super::geometry::{
    convolve, gcd, residues, Counter, ElemBox, IntHasher, Plane, PlaneAccess, Tally,
};
use super::rows::{
    boxes, load_boxes, sample_rows, Bands, BlockAt, Grid, Issue, Link, Part, Placement, RowPass,
    SampledRow, Shape,
};
use super::{CacheParams, MemoryProgram, SizeClasses};
use crate::ir::AccessKind;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Rows processed per representative block at most, where L1 may overflow (every one of them
/// is also a link row).
const ROW_BUDGET: usize = 64;
/// Rows of the representative's pass for L1's statistics, where L1 overflows: a sample of their
/// own, spread (`Placement::Spread`), apart from the link rows. An even sample of the link rows'
/// 64 aliases with the period of the fold points along y and z: star3d_r4 f64 1×16×8 fold 4×2×4
/// read 50 % more through L2 than with every row, 6 % more with this one
/// (bench/results/h100/counters/README.md, "The L1 cliff was the row sample").
const L1_ROW_BUDGET: usize = 128;
/// Rows processed otherwise, and per block sampled for its links only.
const LINK_ROWS: usize = super::rows::LINK_ROWS;
/// Axes with fewer blocks than this are sampled at their first block as well as inside.
const SMALL_GRID: usize = 16;

/// Totals over the grid, in sectors.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BlockTotals {
    pub l2_load_sectors: f64,
    pub dram_load_sectors: f64,
    pub dram_store_sectors: f64,
}

/// The unions over the whole grid, and what they were computed for.
#[derive(Debug, Clone)]
struct Unions {
    planes: Vec<Plane>,
    acc: Vec<PlaneAccess>,
    domain: [i64; 3],
    sector: i64,
    /// L2's DRAM fetch size the fetch union is counted in.
    fetch: i64,
    compulsory: f64,
    /// The compulsory load in DRAM fetches (of `fetch` bytes).
    compulsory_fetches: f64,
    stored: Tally,
    /// Sectors the stores complete only together, none of them alone (the words of AoS records).
    stored_together: f64,
}

/// What the footprint totals per size class give, for one tile: they depend on the tile (with the
/// kernel, domain and granularities of the unions), not on how threads and fold points cover it,
/// so configurations of the same tile share them.
#[derive(Debug, Clone, Default)]
struct TileTotals {
    footprint: [f64; 8],
    count: [f64; 8],
    rep_lines: f64,
    rep_store_lines: f64,
    regions: Vec<(i64, i64, i64, i64)>,
    plane_regions: Vec<(usize, usize, usize)>,
}

/// What [`BlockScratch::prepare`] finds for a configuration: the sampled positions along each axis
/// (the interior representative last), the exact footprint totals of its tile and the grid unions.
#[derive(Debug, Clone)]
struct Prepared {
    s: i64,
    fetch: i64,
    nblocks: usize,
    dom: [i64; 3],
    /// Places of a tile within a sector along x (see `sector_places`).
    places: usize,
    px: Vec<Sample>,
    py: Vec<Sample>,
    pz: Vec<Sample>,
    rep: [usize; 3],
    footprint: [f64; 8],
    count: [f64; 8],
    rep_lines: f64,
    /// The distinct lines the representative block's stores touch (L1 allocates a line for a
    /// store).
    rep_store_lines: f64,
    all_footprints: f64,
    compulsory: f64,
    compulsory_fetches: f64,
    stored: Tally,
    stored_together: f64,
    /// L2's fetches per sector requested where every x-fold point of a block fetches alone
    /// (see [`step_fetch_ratio`]); 0 where the partners of a fetch all belong to its step.
    step_fetch_ratio: f64,
    /// L2's room per sector accessed in a window of `n` consecutive x-fold points, at `n - 1`
    /// (see [`line_room`]).
    line_room: Vec<f64>,
    /// Whether the kernel stores in place into whole sectors
    /// (`MemoryProgram::stores_in_place_whole`): L2's windows hold the sectors it writes already.
    in_place: bool,
    /// Whether the kernel stores in place (`MemoryProgram::stores_in_place`): every sector it
    /// writes, it read, so none is partly written in L2 and none written back is filled.
    stores_read_sectors: bool,
    /// Whether the kernel's stores go to several cells (`MemoryProgram::stores_scattered`).
    stores_scattered: bool,
}

impl Prepared {
    /// The compulsory DRAM load in sectors: the grid's union counted in L2's fetches, at least
    /// its sectors.
    fn compulsory_fetched(&self) -> f64 {
        (self.compulsory_fetches * (self.fetch / self.s) as f64).max(self.compulsory)
    }
}

/// Scratch buffers, reused between calls.
#[derive(Debug, Default)]
pub(crate) struct BlockScratch {
    unions: Option<Unions>,
    /// [`step_fetch_ratio`] per block width and x-fold (valid for `unions`' key).
    step_ratios: HashMap<(usize, usize), f64>,
    /// [`line_room`] per block width, x-fold and line size (valid for `unions`' key).
    line_rooms: HashMap<(usize, usize, i64), Vec<f64>>,
    /// Per tile and line size (valid for `unions`' key).
    tiles: HashMap<([usize; 3], i64), TileTotals>,
    /// The regions of the accesses of a kind of a block at a place with an extent (valid for
    /// `unions`' key).
    #[allow(clippy::type_complexity)]
    sampled: HashMap<
        ([i64; 3], [i64; 3], AccessKind),
        (Vec<(i64, i64, i64, i64)>, Vec<(usize, usize, usize)>),
    >,
    planes: Vec<Plane>,
    acc: Vec<PlaneAccess>,
    /// The loads of `acc`.
    loads: Vec<PlaneAccess>,
    /// The stores of `acc`.
    stores: Vec<PlaneAccess>,
    /// Smallest and largest store offset per axis.
    store_reach: [(i64, i64); 3],
    /// Smallest and largest load offset per axis.
    reach: [(i64, i64); 3],
    shape_block: [i64; 3],
    shape_fold: [i64; 3],
    shape_tile: [i64; 3],
    counter: Counter,
    boxes: Vec<ElemBox>,
    shifts: Vec<(i64, f64)>,
    hx: Vec<(i64, f64)>,
    hy: Vec<(i64, f64)>,
    hz: Vec<(i64, f64)>,
    tmp: Vec<(i64, f64)>,
    regions: Vec<(i64, i64, i64, i64)>,
    plane_regions: Vec<(usize, usize, usize)>,
    ycuts: Vec<i64>,
    /// Origin and extent (along y, z) of the block whose cuts `ycuts` and `zcuts` hold, for
    /// this configuration.
    cut_memo: [Option<(i64, i64)>; 2],
    zcuts: Vec<i64>,
    cells: Vec<(i64, i64, i64, i64)>,
    plane_cells: Vec<(usize, usize, usize)>,
    /// Rows of the cells of each entry of `plane_cells`.
    plane_rows: Vec<i64>,
    rows: Vec<SampledRow>,
    pass: RowPass,
    ws: Vec<f64>,
    /// `ws` with the lines of the stores issued within each lockstep window.
    lock_ws: Vec<f64>,
    /// `ws` with the lines the interleaved warps' stores add to a first burst's windows.
    burst_ws: Vec<f64>,
    /// Per count of loads, the store steps a block issues after that many (see
    /// `RowPass::stores_after_loads`), then the sums of their prefix sums.
    store_steps: Vec<f64>,
    evict: Vec<f64>,
    /// Eviction by gap for the loads of a warp's first burst (see `RowPass::refetches`).
    burst_evict: Vec<f64>,
    /// Eviction by gap for a warp's reuse of its own lines after its first burst, where
    /// [`CacheParams::l1_queue`] sets that window.
    own_evict: Vec<f64>,
    cum: Vec<f64>,
    step_acc: Vec<f64>,
    share: Vec<LinkTable>,
    bin_of: Vec<u32>,
    /// Whether a re-fetch at a pair of steps hits L2 (per configuration).
    refetch_hits: HashMap<(u32, u32), f64, BuildHasherDefault<IntHasher>>,
    /// Starts of the cuts within a tile and their tile, `(ρ, q)` (see `cuts`).
    starts: Vec<(i64, i64)>,
    /// Process every sampled block in full, reusing nothing of the representative's (the
    /// reference the reuse is tested against).
    pub(crate) full_extra_passes: bool,
    /// Rows of the pass for L1's statistics, where not [`L1_ROW_BUDGET`] (the reference the
    /// sample is tested against takes every row).
    pub(crate) l1_row_budget: Option<usize>,
    /// The axes (bit 0 x, 1 y, 2 z) along which blocks reused the representative's parts, for
    /// every configuration so far (tests check that the reuse is exercised).
    pub(crate) reused_axes: usize,
}

/// Blocks sharing an SM with a block, on average over blocks: a full wave fills every SM; a grid
/// smaller than a wave is dealt round robin, some SMs getting one block more than others.
fn resident_blocks(nblocks: usize, sms: usize, per_sm: usize) -> f64 {
    if nblocks >= sms * per_sm {
        return per_sm.max(1) as f64;
    }
    let (q, r) = ((nblocks / sms) as f64, (nblocks % sms) as f64);
    ((r * (q + 1.0) * (q + 1.0) + (sms as f64 - r) * q * q) / nblocks.max(1) as f64).max(1.0)
}

/// CDF of the sum of two uniform variables on `[0, 1]`.
fn triangular_cdf(t: f64) -> f64 {
    if t <= 0.0 {
        0.0
    } else if t <= 1.0 {
        t * t / 2.0
    } else if t < 2.0 {
        1.0 - (2.0 - t) * (2.0 - t) / 2.0
    } else {
        1.0
    }
}

/// The window (in steps, interpolated between whole ones) whose working set `ws` (indexed by the
/// window's whole steps, increasing) reaches `lines`; infinite where no window does.
fn fill_window(ws: &[f64], lines: f64) -> f64 {
    for j in 1..ws.len() {
        let (a, b) = (ws[j - 1], ws[j]);
        if b >= lines && b > a {
            return (j - 1) as f64 + ((lines - a) / (b - a)).max(0.0);
        }
    }
    f64::INFINITY
}

/// The smallest and largest place along each axis (a fold point's place in its tile plus an
/// access's offset) of some accesses to AoS records; `None` where there are none.
type PlaceSpan = Option<([i64; 3], [i64; 3])>;

/// The union of two spans.
fn join_spans(a: PlaceSpan, b: PlaceSpan) -> PlaceSpan {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some((a0, a1)), Some((b0, b1))) => Some((
            std::array::from_fn(|d| a0[d].min(b0[d])),
            std::array::from_fn(|d| a1[d].max(b1[d])),
        )),
    }
}

/// The lines of AoS records a block's accesses touch in a window of its steps. L2 holds whole
/// lines, and a warp instruction on AoS records reads (or writes) one word of every record of its
/// cells, so a window of a few steps fills L2 with the records' lines, not with the sectors it
/// reads: the D3Q19 AoS tiles folded along y or z kept up to three times too many reuses
/// against the visitor's own simulator (an LRU of lines, with L1 out of the way,
/// `bench/l2-visitor-vs-sim.sh`). The records of a window are the cells of its fold points shifted
/// by its accesses' offsets; their union is taken as a box, the block's extent widened by the
/// spread of the places along each axis (at most the tile's period, past which the wave's
/// neighbouring tiles hold the same records), in runs along x of whole records.
#[derive(Debug, Clone)]
struct RecordWindow {
    /// Per step (fold point by fold point, slot by slot) and kind (load, store): its places.
    spans: Vec<[PlaceSpan; 2]>,
    /// Per step: the union from its fold point's first step to it, and from it to the last.
    prefix: Vec<[PlaceSpan; 2]>,
    suffix: Vec<[PlaceSpan; 2]>,
    /// Steps per fold point.
    slots: usize,
    /// Bytes per record of the AoS planes loaded, and of those stored.
    pitch: [f64; 2],
    /// Bytes of the smallest element of an AoS plane (where a run of records can start).
    elem: f64,
    block: [usize; 3],
    fold: [usize; 3],
    line: f64,
}

impl RecordWindow {
    /// The record window of a program whose planes and accesses are `planes` and `acc`; `None`
    /// where it accesses no AoS plane.
    fn new(
        prog: &MemoryProgram,
        planes: &[Plane],
        acc: &[PlaneAccess],
        line: usize,
    ) -> Option<Self> {
        let slots = prog.instructions.len().max(1);
        let folds: Vec<[usize; 3]> = prog.fold_points().collect();
        let (mut pitch, mut elem) = ([0.0f64; 2], f64::INFINITY);
        let mut counted: Vec<(usize, AccessKind)> = Vec::new();
        let mut offsets: Vec<Vec<[i64; 3]>> = vec![Vec::new(); slots];
        for a in acc {
            let pl = &planes[a.plane];
            if !pl.interleaved() || a.slot as usize >= slots {
                continue;
            }
            offsets[a.slot as usize].push(a.off);
            if !counted.contains(&(a.plane, a.kind)) {
                counted.push((a.plane, a.kind));
                pitch[usize::from(a.kind == AccessKind::Store)] += pl.pitch as f64;
                elem = elem.min(pl.elem as f64);
            }
        }
        if counted.is_empty() {
            return None;
        }
        let block = prog.config.block;
        let mut spans: Vec<[PlaceSpan; 2]> = vec![[None, None]; folds.len() * slots];
        for (st, sp) in spans.iter_mut().enumerate() {
            let (fp, slot) = (folds[st / slots], st % slots);
            let k = usize::from(prog.instructions[slot].kind == AccessKind::Store);
            for o in &offsets[slot] {
                let v: [i64; 3] = std::array::from_fn(|d| (fp[d] * block[d]) as i64 + o[d]);
                sp[k] = join_spans(sp[k], Some((v, v)));
            }
        }
        let (mut prefix, mut suffix) = (spans.clone(), spans.clone());
        for f in 0..folds.len() {
            for slot in 1..slots {
                let st = f * slots + slot;
                for k in 0..2 {
                    prefix[st][k] = join_spans(prefix[st - 1][k], spans[st][k]);
                }
            }
            for slot in (0..slots - 1).rev() {
                let st = f * slots + slot;
                for k in 0..2 {
                    suffix[st][k] = join_spans(suffix[st + 1][k], spans[st][k]);
                }
            }
        }
        Some(RecordWindow {
            spans,
            prefix,
            suffix,
            slots,
            pitch,
            elem,
            block,
            fold: prog.config.fold,
            line: line as f64,
        })
    }

    /// The lines of the records the block's loads and stores touch in its steps `a..=b`.
    fn lines(&self, a: u32, b: u32) -> f64 {
        let n = self.spans.len();
        if n == 0 {
            return 0.0;
        }
        let (a, b) = ((a as usize).min(n - 1), (b as usize).min(n - 1));
        let (a, b) = (a.min(b), a.max(b));
        let (fa, fb) = (a / self.slots, b / self.slots);
        (0..2)
            .map(|k| {
                let span = if fa == fb {
                    self.spans[a..=b]
                        .iter()
                        .fold(None, |u, sp| join_spans(u, sp[k]))
                } else {
                    let whole = (fa + 1..fb)
                        .fold(None, |u, f| join_spans(u, self.suffix[f * self.slots][k]));
                    join_spans(join_spans(self.suffix[a][k], whole), self.prefix[b][k])
                };
                span.map_or(0.0, |(lo, hi)| self.box_lines(lo, hi, self.pitch[k]))
            })
            .sum()
    }

    /// The lines of the records in the box of places `lo..=hi` (widened by the block's extent):
    /// its rows along y and z times the lines of a run along x, a run of `B` bytes starting at a
    /// whole element spanning `(B + line - elem) / line` lines on average, or exactly `B / line`
    /// where the run is a whole row of tiles.
    fn box_lines(&self, lo: [i64; 3], hi: [i64; 3], pitch: f64) -> f64 {
        let ext = |d: usize| -> f64 {
            let period = (self.block[d] * self.fold[d]) as f64;
            ((self.block[d] as i64 + hi[d] - lo[d]) as f64).min(period)
        };
        let run = ext(0) * pitch;
        let per_run = if ext(0) >= (self.block[0] * self.fold[0]) as f64 {
            run / self.line
        } else {
            (run + self.line - self.elem) / self.line
        };
        ext(1) * ext(2) * per_run
    }
}

/// The working set `ws` (indexed by whole steps) at a window of `w` steps, interpolated; the
/// whole run's beyond its end.
fn ws_at(ws: &[f64], w: f64) -> f64 {
    let last = ws.len() - 1;
    if w >= last as f64 {
        return ws[last];
    }
    let j = w.max(0.0) as usize;
    ws[j] + (ws[j + 1] - ws[j]) * (w - j as f64)
}

/// `P(N <= k)` for `N` Poisson with mean `lambda`.
fn poisson_cdf(lambda: f64, k: usize) -> f64 {
    if lambda > 600.0 {
        // e^-lambda underflows: add the terms by their logarithms, scaled to the largest so far.
        let (mut log_term, mut top, mut sum) = (-lambda, -lambda, 1.0);
        for i in 1..=k {
            log_term += (lambda / i as f64).ln();
            if log_term > top {
                sum = sum * (top - log_term).exp() + 1.0;
                top = log_term;
            } else {
                sum += (log_term - top).exp();
            }
        }
        return (top.exp() * sum).min(1.0);
    }
    let mut term = (-lambda).exp();
    let mut sum = term;
    for i in 1..=k {
        term *= lambda / i as f64;
        sum += term;
    }
    sum.min(1.0)
}

/// Chance that a line survives a window whose working set is `fill` times the L1 lines it may
/// use, in sets of `ways` ways filled at random: fewer than `ways` of the window's other lines
/// fell into its set (their number is Poisson with mean `ways * fill`). Fully associative LRU is
/// the limit of many ways (survival 1 below `fill` = 1, 0 above); one way is random replacement.
fn conflict_survival(fill: f64, ways: usize) -> f64 {
    poisson_cdf(ways as f64 * fill, ways - 1)
}

/// The chance that a line survives a window whose working set is `fill` times its L1 room: with
/// `ways`-way sets filled at random, [`conflict_survival`]; fully associative (`ways` = 0), an LRU
/// that keeps it until the room is full.
pub(crate) fn l1_survival(fill: f64, ways: usize) -> f64 {
    if ways == 0 {
        return f64::from(u8::from(fill < 1.0));
    }
    conflict_survival(fill, ways)
}

/// The fill of L1 below which set conflicts lose fewer than 1 line in 1,000 (1 for a fully
/// associative L1, which loses none until it is full).
fn conflict_free_fill(ways: usize) -> f64 {
    if ways == 0 {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..30 {
        let mid = 0.5 * (lo + hi);
        if conflict_survival(mid, ways) >= 0.999 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Eviction probability by reuse gap `g` (load steps) in an L1 of `ways`-way sets: the window of
/// a gap is the `g - 1` steps between and parts of the two end steps (each uniform, as in the
/// fully associative case); its working set over the block's `share` of L1 gives the survival of
/// [`conflict_survival`], averaged over the two parts. Only gaps that occur (`gaps[g] > 0`) are
/// evaluated.
fn conflict_evictions(ws: &[f64], gaps: &[f64], share: f64, ways: usize, evict: &mut Vec<f64>) {
    // Midpoints of the sum of the two parts, triangular on [0, 2].
    const PARTS: usize = 8;
    evict.clear();
    evict.push(0.0);
    for g in 1..ws.len() {
        if gaps.get(g).is_none_or(|&n| n == 0.0) {
            evict.push(0.0);
            continue;
        }
        let (mut kept, mut total) = (0.0, 0.0);
        for q in 0..PARTS {
            let t = 2.0 * (q as f64 + 0.5) / PARTS as f64;
            let density = if t < 1.0 { t } else { 2.0 - t };
            let fill = ws_at(ws, (g - 1) as f64 + t) / share;
            kept += density * conflict_survival(fill, ways);
            total += density;
        }
        evict.push(1.0 - kept / total);
    }
}

/// Eviction probability by reuse gap (load steps) in the block's `share` of L1 lines: with
/// `ways`-way sets, [`conflict_evictions`]; fully associative (`ways` = 0), an LRU that loses a
/// line once the window's working set fills the share.
fn l1_evictions(ws: &[f64], gaps: &[f64], share: f64, ways: usize, evict: &mut Vec<f64>) {
    if ways > 0 {
        conflict_evictions(ws, gaps, share, ways, evict);
        return;
    }
    let fill = fill_window(ws, share);
    evict.clear();
    evict.push(0.0);
    for g in 1..ws.len() {
        evict.push(1.0 - triangular_cdf(fill - (g - 1) as f64));
    }
}

/// Steps are binned into at most this many bins for the tables of links.
const MAX_BINS: usize = 64;

/// Distinct sectors through L2 in a window of the machine's run as the GPU runs it: blocks start
/// as others finish (`rows::Clock`), so the wave's blocks are at every step of their runs at
/// once and stream the average block's L2 accesses at its mean rate. A window of `len` steps
/// holds `len` steps of that stream less the reuses (links) lying inside it: a link `λ` steps
/// long ends inside and starts inside in `len - λ` of the block's steps (Denning's working set
/// of a stationary stream).
struct LaunchWindow {
    /// Links as `(steps apart, sectors per block)`, by length.
    links: Vec<(f64, f64)>,
    /// Prefix sums of the links' sectors and of their sectors times length.
    sectors: Vec<f64>,
    weighted: Vec<f64>,
    /// A block's L2 accesses per step, times the wave's blocks.
    per_step: f64,
    /// The wave's blocks over the steps of a block's run.
    wave_per_step: f64,
}

impl LaunchWindow {
    fn new(mut links: Vec<(f64, f64)>, stream: f64, steps: usize, wave: f64) -> LaunchWindow {
        links.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mut sectors, mut weighted) = (vec![0.0], vec![0.0]);
        for &(len, n) in &links {
            sectors.push(sectors[sectors.len() - 1] + n);
            weighted.push(weighted[weighted.len() - 1] + n * len);
        }
        let steps = steps.max(1) as f64;
        LaunchWindow {
            links,
            sectors,
            weighted,
            per_step: wave * stream / steps,
            wave_per_step: wave / steps,
        }
    }

    /// Distinct sectors in a window `len` steps long.
    fn distance(&self, len: f64) -> f64 {
        let len = len.max(0.0);
        let k = self.links.partition_point(|l| l.0 < len);
        let inside = len * self.sectors[k] - self.weighted[k];
        (self.per_step * len - self.wave_per_step * inside).max(0.0)
    }
}

/// Distinct sectors through L2 in windows of a run in lockstep waves (the write pairs'; reads
/// take [`LaunchWindow`]). Every block of a wave streams the
/// average block's L2 accesses (`cum`, cumulative by step); a sector accessed several times in a
/// window counts once, so the window's volume is the stream minus the links (time-consecutive
/// accesses of a sector) lying entirely inside it. Links are kept per wave distance `m` in 2D
/// prefix sums over the bins of their two steps.
struct Window<'a> {
    tables: &'a mut Vec<LinkTable>,
    used: usize,
    /// The table of the links within a wave (`m` = 0), once finished.
    zero_links: Option<usize>,
    cum: &'a [f64],
    steps: usize,
    bins: usize,
    /// The bin of every step `0..=steps` (a lookup: `bin` is called in the inner loops).
    bin_of: &'a [u32],
    wave: f64,
}

impl<'a> Window<'a> {
    fn new(
        tables: &'a mut Vec<LinkTable>,
        cum: &'a [f64],
        steps: usize,
        bins: usize,
        bin_of: &'a mut Vec<u32>,
        wave: f64,
    ) -> Window<'a> {
        bin_of.clear();
        bin_of.extend((0..=steps).map(|step| (step * bins / steps.max(1)) as u32));
        Window {
            tables,
            used: 0,
            zero_links: None,
            cum,
            steps,
            bins,
            bin_of,
            wave,
        }
    }

    fn bin(&self, step: usize) -> usize {
        self.bin_of[step] as usize
    }

    /// Records `w` sectors linked `m` waves apart, at steps `then` and `now`.
    fn add(&mut self, m: u32, then: usize, now: usize, w: f64) {
        let n = self.bins + 1;
        let t = match self.tables[..self.used].iter().position(|t| t.m == m) {
            Some(t) => t,
            None => {
                if self.used == self.tables.len() {
                    self.tables.push(LinkTable::default());
                }
                self.tables[self.used].reset(m, n);
                self.used += 1;
                self.used - 1
            }
        };
        let (i, j) = (self.bin(then) + 1, self.bin(now) + 1);
        self.tables[t].add(i, j, w, n);
    }

    /// Turns the tables into prefix sums.
    fn finish(&mut self) {
        let n = self.bins + 1;
        for (i, t) in self.tables[..self.used].iter_mut().enumerate() {
            t.zero_rows = prefix_sums(&mut t.cells, &t.band, n, t.zero_rows);
            if t.m == 0 {
                self.zero_links = Some(i);
            }
        }
    }

    /// The steps `[a, b)` as a range of bins, `None` where empty: the bins of the ranges a call
    /// of [`Window::distance`] asks about, looked up once for all its tables.
    fn span(&self, a: usize, b: usize) -> Option<(usize, usize)> {
        (b > a).then(|| (self.bin(a), self.bin(b)))
    }

    /// Links of table `t` with the earlier access in steps `then` and the later one in steps
    /// `now` (spans from [`Window::span`]).
    #[inline]
    fn links(&self, t: &[f64], then: Option<(usize, usize)>, now: Option<(usize, usize)>) -> f64 {
        let (Some((i1, i2)), Some((j1, j2))) = (then, now) else {
            return 0.0;
        };
        let n = self.bins + 1;
        t[i2 * n + j2] - t[i1 * n + j2] - t[i2 * n + j1] + t[i1 * n + j1]
    }

    /// Distinct sectors through L2 between an access at step `then` and one at step `now`, `m`
    /// waves later; `rest` is the share of the wave issuing step `then` after the first access,
    /// `part` the share issuing step `now` before the second. The window holds the rest of step
    /// `then`, whole steps, and part of step `now`; a link counts against it where both of its
    /// accesses fall inside (those in a partial step in proportion to its share).
    fn distance(&self, m: u32, then: usize, now: usize, rest: f64, part: f64) -> f64 {
        let (k, c) = (self.steps, self.cum);
        let step = |i: usize| c[i + 1] - c[i];
        let (rest, part) = (rest.clamp(0.0, 1.0), part.clamp(0.0, 1.0));
        let per_block = if m == 0 {
            if then == now {
                // The same step: the blocks issued between the two accesses.
                let share = (rest + part - 1.0).max(0.0);
                return self.wave * share * step(now);
            }
            let (a, b) = (then + 1, now);
            let (between, first, last) =
                (self.span(a, b), self.span(then, a), self.span(now, now + 1));
            let mut inside = 0.0;
            // Only the links within a wave lie inside.
            if let Some(t) = self.zero_links {
                let t = &self.tables[t].cells;
                inside += self.links(t, between, between)
                    + rest * self.links(t, first, between)
                    + part * self.links(t, between, last)
                    + rest * part * self.links(t, first, last);
            }
            rest * step(then) + (c[b] - c[a]) + part * step(now) - inside
        } else {
            // The rest of the earlier wave after `then`, m - 1 whole waves, the later wave
            // before `now`. A link `mc` waves long lies inside when it starts in the tail, in
            // one of the m - mc - 1 waves after it, or ends in the head.
            let tail = then + 1;
            let stream = rest * step(then)
                + (c[k] - c[tail])
                + (m - 1) as f64 * c[k]
                + c[now]
                + part * step(now);
            let (all, after, first) = (self.span(0, k), self.span(tail, k), self.span(then, tail));
            let (head, last) = (self.span(0, now), self.span(now, now + 1));
            let mut inside = 0.0;
            for LinkTable {
                m: mc, cells: t, ..
            } in &self.tables[..self.used]
            {
                let mc = *mc;
                if mc > m {
                    continue;
                }
                if mc == m {
                    inside += self.links(t, after, head)
                        + rest * self.links(t, first, head)
                        + part * self.links(t, after, last)
                        + rest * part * self.links(t, first, last);
                } else {
                    inside += (m - mc - 1) as f64 * self.links(t, all, all)
                        + self.links(t, after, all)
                        + rest * self.links(t, first, all)
                        + self.links(t, all, head)
                        + part * self.links(t, all, last);
                }
            }
            stream - inside
        };
        self.wave * per_block.max(0.0)
    }
}

/// The links of one wave distance `m`, by the bins of their two steps: an `n × n` table (row 0
/// and column 0 zero, for the prefix sums), and per row the columns its entries were added to.
/// Tables are reused from one configuration to the next without clearing: a row's cells are
/// zeroed as its band of entries reaches them, the others written by [`prefix_sums`].
#[derive(Debug, Default)]
struct LinkTable {
    m: u32,
    cells: Vec<f64>,
    /// Per row: the first and last column with an entry (`NO_BAND` where none).
    band: Vec<(usize, usize)>,
    /// The side `n` of the table as the cells are laid out now.
    n: usize,
    /// Leading rows known to be zero (rows above the first with entries, last time).
    zero_rows: usize,
}

/// The band of a row without entries.
const NO_BAND: (usize, usize) = (usize::MAX, 0);

impl LinkTable {
    /// Starts an `n × n` table of links `m` waves apart, without entries.
    fn reset(&mut self, m: u32, n: usize) {
        self.m = m;
        if self.n != n {
            // Rows of another side: nothing is known to be zero.
            self.n = n;
            self.zero_rows = 0;
        }
        self.cells.resize(n * n, 0.0);
        self.band.clear();
        self.band.resize(n, NO_BAND);
    }

    /// Adds `w` at row `i`, column `j`, zeroing the cells the row's band grows over first.
    fn add(&mut self, i: usize, j: usize, w: f64, n: usize) {
        let row = &mut self.cells[i * n..(i + 1) * n];
        let band = &mut self.band[i];
        let (first, last) = *band;
        if first > last {
            row[j] = 0.0;
            *band = (j, j);
        } else if j < first {
            row[j..first].fill(0.0);
            band.0 = j;
        } else if j > last {
            row[last + 1..=j].fill(0.0);
            band.1 = j;
        }
        row[j] += w;
    }
}

/// Turns the `n × n` table `t` (row 0 and column 0 zero) into its 2D prefix sums: running sums
/// along each row, then each row adds the finished row above. `band` says where a row has
/// entries: before them its running sum is zero, after them it stays the same, and a zero adds
/// nothing to the row above, so the sums are those of every cell, added in the same order
/// (no cell holds `-0.0`, which adding zero would turn into `0.0`). Every cell outside the bands
/// is written, but the `zero_rows` leading rows known to be zero. Returns the leading rows that
/// are zero after it.
fn prefix_sums(t: &mut [f64], band: &[(usize, usize)], n: usize, zero_rows: usize) -> usize {
    // Rows above the first with entries are zero (the cells are not cleared before the entries
    // are added, see `LinkTable`).
    let i0 = (1..n).find(|&i| band[i].0 <= band[i].1).unwrap_or(n);
    if i0 > zero_rows {
        t[zero_rows * n..i0 * n].fill(0.0);
    }
    for i in i0..n {
        let (above, row) = t[(i - 1) * n..(i + 1) * n].split_at_mut(n);
        let (first, last) = band[i];
        if first > last {
            row.copy_from_slice(above);
            continue;
        }
        let mut sum = row[first];
        for v in &mut row[first + 1..=last] {
            sum += *v;
            *v = sum;
        }
        row[last + 1..].fill(sum);
        row[..first].copy_from_slice(&above[..first]);
        for (v, u) in row[first..].iter_mut().zip(&above[first..]) {
            *v += u;
        }
    }
    i0
}

/// The sectors the stores of `acc` write over the whole domain `dom` (their union per plane),
/// and how many of the fully written ones no single store covers alone: the stores complete them
/// only together (the words of AoS records).
fn stored_sectors(
    counter: &mut Counter,
    boxes: &mut Vec<ElemBox>,
    planes: &[Plane],
    acc: &[PlaneAccess],
    dom: [i64; 3],
    s: i64,
) -> (Tally, f64) {
    let mut stored = Tally::default();
    let mut together = 0.0;
    for (pi, pl) in planes.iter().enumerate() {
        boxes.clear();
        for a in acc
            .iter()
            .filter(|a| a.plane == pi && a.kind == AccessKind::Store)
        {
            boxes.push(ElemBox {
                x: (a.off[0], a.off[0] + dom[0]),
                y: (a.off[1], a.off[1] + dom[1]),
                z: (a.off[2], a.off[2] + dom[2]),
                comp: a.comp,
            });
        }
        if boxes.is_empty() {
            continue;
        }
        let t = counter.count(pl, boxes, &[(0, 1.0)], s);
        stored.distinct += t.distinct;
        stored.full += t.full;
        if boxes.len() > 1 {
            let alone: f64 = boxes
                .iter()
                .map(|b| counter.count(pl, &[*b], &[(0, 1.0)], s).full)
                .sum();
            together += (t.full - alone).max(0.0);
        }
    }
    (stored, together)
}

/// The sectors of `prog`'s grid that its stores complete only together (see [`stored_sectors`]),
/// in sectors of `sector` bytes.
pub(crate) fn stores_completed_together(prog: &MemoryProgram, sector: usize) -> f64 {
    let (mut planes, mut acc) = (Vec::new(), Vec::new());
    super::geometry::planes(prog, &mut planes, &mut acc);
    let dom = prog.domain.size.map(|n| n as i64);
    stored_sectors(
        &mut Counter::default(),
        &mut Vec::new(),
        &planes,
        &acc,
        dom,
        sector as i64,
    )
    .1
}

/// The smallest and largest offset per axis of the accesses `acc`.
pub(crate) fn offset_range(acc: &[PlaneAccess]) -> [(i64, i64); 3] {
    std::array::from_fn(|d| {
        acc.iter().fold((i64::MAX, i64::MIN), |r, a| {
            (r.0.min(a.off[d]), r.1.max(a.off[d]))
        })
    })
}

/// A sampled block along one axis: its index, the blocks it stands for, and its share of the
/// link rows (see [`RowPass::block`]).
type Sample = (usize, f64, (usize, usize));

/// Samples along one axis of `g` blocks, the interior representative last. The interior blocks
/// are stood for by the `k` consecutive blocks ending at the representative (fewer where the axis
/// is short), equally weighted; they share the link rows (each searches the links of every
/// `k`-th), so that the search costs what one block's does.
fn positions(g: usize, k: usize) -> Vec<Sample> {
    let interior = |first: usize, rep: usize, n: usize| {
        let k = k.clamp(1, rep + 1 - first);
        (0..k).map(move |i| (rep + 1 - k + i, n as f64 / k as f64, (k, i)))
    };
    match g {
        1 => vec![(0, 1.0, (1, 0))],
        g if g < SMALL_GRID => std::iter::once((0, 1.0, (1, 0)))
            .chain(interior(1, (g / 2).max(1), g - 1))
            .collect(),
        g => interior(0, g / 2, g).collect(),
    }
}

/// The number of places within a sector at which tiles of `tile0` points start along x (on any
/// plane): so many consecutive blocks along x differ in how they share sectors with their
/// x-neighbours. Where tiles are narrower than a sector, the first block of a sector touches its
/// sectors before the others at the same step, so a representative of one place alone would
/// take all (or none) of the links to earlier waves.
fn sector_places(planes: &[Plane], tile0: usize, sector: i64) -> usize {
    planes
        .iter()
        .map(|pl| {
            let bytes = tile0 as i64 * pl.pitch;
            let common = 1i64 << bytes.trailing_zeros().min(sector.trailing_zeros());
            (sector / common) as usize
        })
        .max()
        .unwrap_or(1)
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

    /// Samples the rows of the footprint of a block at `at` into `self.rows`.
    fn sample(&mut self, at: &BlockAt, kind: AccessKind) {
        // The regions (in y and z) depend on the block's place along y and z and its extent
        // only: kept for configurations of the same tile and for the blocks beside it along x.
        let key = ([0, at.origin[1], at.origin[2]], at.ext, kind);
        if let Some((r, p)) = self.sampled.get(&key) {
            self.regions.clone_from(r);
            self.plane_regions.clone_from(p);
        } else {
            self.regions.clear();
            self.plane_regions.clear();
            for pi in 0..self.planes.len() {
                boxes(&self.acc, kind, pi, at, &mut self.boxes);
                if !self.boxes.is_empty() {
                    self.counter.decompose(&self.planes[pi], &self.boxes);
                }
                self.keep_regions(pi);
            }
            let kept = (self.regions.clone(), self.plane_regions.clone());
            self.sampled.insert(key, kept);
        }
        let (block, fold, tile) = (self.shape_block, self.shape_fold, self.shape_tile);
        self.cuts(at, block, fold, tile);
        self.sample_kept(LINK_ROWS);
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

    /// Rows where the loads of the block at `at`, or of a block whose tile is up to `reach`
    /// tiles away, start or end touching a row, per axis (1: y, 2: z), or a fold point's
    /// sub-tile begins: between two of them, rows are touched alike by every block around.
    fn cuts(&mut self, at: &BlockAt, block: [i64; 3], fold: [i64; 3], tile: [i64; 3]) {
        for (d, cuts) in [(1, &mut self.ycuts), (2, &mut self.zcuts)] {
            // The cuts of a block of the same extent (same configuration) are these translated.
            let memo = &mut self.cut_memo[d - 1];
            if let Some((origin, ext)) = *memo {
                if ext == at.ext[d] {
                    let shift = at.origin[d] - origin;
                    cuts.iter_mut().for_each(|c| *c += shift);
                    *memo = Some((at.origin[d], ext));
                    continue;
                }
            }
            *memo = Some((at.origin[d], at.ext[d]));
            cuts.clear();
            let span = self.reach[d].1 - self.reach[d].0 + at.ext[d];
            let r = span / tile[d] + 1;
            // The cuts are `origin + a + k·tile` for `k` in `-r..=r` and every start `a`: a load's
            // offset plus the start of a fold point's sub-tile (or the block's end). With
            // `a = q·tile + ρ`, the cuts of tile `Q = q + k` are `Q·tile + ρ`: tile by tile in the
            // order of `ρ`, so they are generated sorted and distinct rather than sorted.
            self.starts.clear();
            for a in &self.loads {
                for j in 0..=fold[d] {
                    let start = a.off[d] + (j * block[d]).min(at.ext[d]);
                    self.starts
                        .push((start.rem_euclid(tile[d]), start.div_euclid(tile[d])));
                }
            }
            self.starts.sort_unstable();
            self.starts.dedup();
            let q_lo = self.starts.iter().map(|s| s.1).min().unwrap_or(0);
            let q_hi = self.starts.iter().map(|s| s.1).max().unwrap_or(-1);
            for q_cut in q_lo - r..=q_hi + r {
                let mut last = None;
                for &(rho, q) in &self.starts {
                    if (q_cut - q).abs() <= r && last != Some(rho) {
                        cuts.push(at.origin[d] + q_cut * tile[d] + rho);
                        last = Some(rho);
                    }
                }
            }
        }
    }

    /// Samples rows from the kept regions into `self.rows`: the regions are split at the cuts
    /// into cells of rows touched alike; with at most `budget` cells, one row of each stands for
    /// the cell, else an even sample of `budget` rows is taken.
    fn sample_kept(&mut self, budget: usize) {
        self.cells.clear();
        self.plane_cells.clear();
        // Rows per plane: sums of integers, exact (as the sums of the cells' rows in `f64` they
        // replace).
        self.plane_rows.clear();
        for &(pi, a, b) in &self.plane_regions {
            let start = self.cells.len();
            let mut plane_rows = 0i64;
            // The cuts strictly inside each region: regions come z-major, then along y
            // (`Counter::decompose`), so the search along z is kept while z stays, and a region
            // starting where the last one ended starts from its end; ends are found by walking
            // on from the start (over cuts the cells below visit anyway).
            let mut last_y: Option<(i64, usize)> = None;
            let mut last_z: Option<((i64, i64), (usize, usize))> = None;
            for &(ya, yb, za, zb) in &self.regions[a..b] {
                plane_rows += (yb - ya) * (zb - za);
                let ys = match last_y {
                    Some((end, i)) if end == ya => i + usize::from(self.ycuts.get(i) == Some(&ya)),
                    _ => self.ycuts.partition_point(|v| *v <= ya),
                };
                let ye = ys + self.ycuts[ys..].iter().take_while(|v| **v < yb).count();
                last_y = Some((yb, ye));
                let (zs, ze) = match last_z {
                    Some((z, found)) if z == (za, zb) => found,
                    _ => {
                        let zs = self.zcuts.partition_point(|v| *v <= za);
                        let ze = zs + self.zcuts[zs..].iter().take_while(|v| **v < zb).count();
                        (zs, ze)
                    }
                };
                last_z = Some(((za, zb), (zs, ze)));
                let mut z0 = za;
                for zc in self.zcuts[zs..ze].iter().copied().chain([zb]) {
                    let mut y0 = ya;
                    for yc in self.ycuts[ys..ye].iter().copied().chain([yb]) {
                        self.cells.push((y0, yc, z0, zc));
                        y0 = yc;
                    }
                    z0 = zc;
                }
            }
            self.plane_cells.push((pi, start, self.cells.len()));
            self.plane_rows.push(plane_rows);
        }
        self.sample_cells(budget, Placement::Even);
    }

    /// Samples rows from the cells of the last [`BlockScratch::sample_kept`] into `self.rows`:
    /// one row of each cell where there are at most `budget`, else `budget` rows placed by
    /// `placement`.
    fn sample_cells(&mut self, budget: usize, placement: Placement) {
        self.rows.clear();
        let total_rows: i64 = self.plane_rows.iter().sum();
        let cell_rows = |c: &(i64, i64, i64, i64)| ((c.1 - c.0) * (c.3 - c.2)) as f64;
        if self.cells.len() <= budget {
            for &(pi, a, b) in &self.plane_cells {
                for c in &self.cells[a..b] {
                    self.rows.push(SampledRow {
                        plane: pi as u32,
                        y: c.0,
                        z: c.2,
                        weight: cell_rows(c),
                    });
                }
            }
            return;
        }
        let total = total_rows as f64;
        let mut offset = 0i64;
        for (&(pi, a, b), &rows) in self.plane_cells.iter().zip(&self.plane_rows) {
            sample_rows(
                &self.cells[a..b],
                pi as u32,
                (budget, placement),
                total,
                offset as f64,
                &mut self.rows,
            );
            offset += rows;
        }
    }

    /// The exact footprint totals per size class of `tile`: one block of the class (the
    /// representative `rep` where it belongs to the class), placed at every block's alignment
    /// to sectors (a histogram of byte shifts); the representative's decomposition also gives
    /// its distinct lines of `line` bytes and the regions its rows are sampled from.
    fn tile_totals(
        &mut self,
        classes: &SizeClasses,
        rep: [usize; 3],
        rep_class: usize,
        s: i64,
        line: i64,
    ) -> TileTotals {
        let tile = classes.tile;
        let mut footprint = [0.0f64; 8];
        let mut count = [0.0f64; 8];
        let mut rep_lines = 0.0;
        let mut rep_store_lines = 0.0;
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
                        rep_lines += self
                            .counter
                            .count_decomposed(&pl, &[(0, 1.0)], line)
                            .distinct;
                    }
                }
                if c == rep_class {
                    self.keep_regions(pi);
                    super::rows::boxes(&self.acc, AccessKind::Store, pi, &at, &mut self.boxes);
                    if !self.boxes.is_empty() {
                        self.counter.decompose(&pl, &self.boxes);
                        rep_store_lines += self
                            .counter
                            .count_decomposed(&pl, &[(0, 1.0)], line)
                            .distinct;
                    }
                }
            }
        }
        TileTotals {
            footprint,
            count,
            rep_lines,
            rep_store_lines,
            regions: self.regions.clone(),
            plane_regions: self.plane_regions.clone(),
        }
    }

    /// What the estimate and its lower bounds share: the planes and accesses, the sampled
    /// positions and the representative block, the exact footprint totals of the tile and the
    /// grid unions (both kept for the next configuration while kernel, domain and sizes are).
    fn prepare(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        classes: &SizeClasses,
    ) -> Prepared {
        let s = p.sector_bytes as i64;
        let fetch = p.fetch_bytes() as i64;
        super::geometry::planes(prog, &mut self.planes, &mut self.acc);
        self.loads.clear();
        self.loads
            .extend(self.acc.iter().filter(|a| a.kind == AccessKind::Load));
        self.stores.clear();
        self.stores
            .extend(self.acc.iter().filter(|a| a.kind == AccessKind::Store));
        self.store_reach = offset_range(&self.stores);
        self.reach = offset_range(&self.loads);
        let grid = classes.grid;
        let tile = classes.tile;
        let nblocks: usize = grid.iter().product();
        let dom = prog.domain.size.map(|n| n as i64);

        // The representative block inside the grid, and on small axes the first block too (it has
        // no earlier neighbour along that axis); along x, the interior stood for by as many
        // blocks as there are places of a tile within a sector.
        let places = sector_places(&self.planes, classes.tile[0], s);
        let (px, py, pz) = (
            positions(grid[0], places),
            positions(grid[1], 1),
            positions(grid[2], 1),
        );
        let rep = [
            px.last().expect("an axis has a block").0,
            py.last().expect("an axis has a block").0,
            pz.last().expect("an axis has a block").0,
        ];
        let rep_class = classes.class_of(rep);

        // Exact footprint totals per size class (see `tile_totals`). They and the grid unions
        // are kept while kernel, domain and sector size are; the totals per tile.
        let key_matches = self.unions.as_ref().is_some_and(|u| {
            u.planes == self.planes
                && u.acc == self.acc
                && u.domain == dom
                && u.sector == s
                && u.fetch == fetch
        });
        if !key_matches {
            self.step_ratios.clear();
            self.line_rooms.clear();
            self.tiles.clear();
            self.sampled.clear();
            self.pass.forget_patterns();
        }
        let line = p.line_bytes as i64;
        let t = match self.tiles.remove(&(tile, line)) {
            Some(t) => t,
            None => self.tile_totals(classes, rep, rep_class, s, line),
        };
        let (footprint, count, rep_lines, rep_store_lines) =
            (t.footprint, t.count, t.rep_lines, t.rep_store_lines);
        self.regions.clone_from(&t.regions);
        self.plane_regions.clone_from(&t.plane_regions);
        self.tiles.insert((tile, line), t);
        let all_footprints: f64 = footprint.iter().sum();

        // The unions over the whole grid: every point of the domain is updated once, so they are
        // the domain shifted by each access's offset.
        if !key_matches {
            let whole = BlockAt {
                origin: [0; 3],
                ext: dom,
            };
            let mut compulsory = 0.0;
            let mut compulsory_fetches = 0.0;
            for pi in 0..self.planes.len() {
                let pl = self.planes[pi];
                load_boxes(&self.acc, pi, &whole, &mut self.boxes);
                if !self.boxes.is_empty() {
                    let sectors = self
                        .counter
                        .count(&pl, &self.boxes, &[(0, 1.0)], s)
                        .distinct;
                    compulsory += sectors;
                    compulsory_fetches += if fetch > s {
                        self.counter
                            .count_decomposed(&pl, &[(0, 1.0)], fetch)
                            .distinct
                    } else {
                        sectors
                    };
                }
            }
            let (stored, stored_together) = stored_sectors(
                &mut self.counter,
                &mut self.boxes,
                &self.planes,
                &self.acc,
                dom,
                s,
            );
            self.unions = Some(Unions {
                planes: self.planes.clone(),
                acc: self.acc.clone(),
                domain: dom,
                sector: s,
                fetch,
                compulsory,
                compulsory_fetches,
                stored,
                stored_together,
            });
        }
        let (compulsory, compulsory_fetches, stored, stored_together) = self
            .unions
            .as_ref()
            .map(|u| {
                (
                    u.compulsory,
                    u.compulsory_fetches,
                    u.stored,
                    u.stored_together,
                )
            })
            .expect("computed above");
        let (bx, fx) = (prog.config.block[0], prog.config.fold[0]);
        let step_fetch_ratio = if fx > 1 && fetch > s {
            let (planes, acc) = (&self.planes, &self.acc);
            *self
                .step_ratios
                .entry((bx, fx))
                .or_insert_with(|| step_fetch_ratio(planes, acc, bx, fx, s, fetch))
        } else {
            0.0
        };
        let line_room = {
            let (planes, acc) = (&self.planes, &self.acc);
            self.line_rooms
                .entry((bx, fx, line))
                .or_insert_with(|| line_room(planes, acc, bx, fx, dom[0], s, line))
                .clone()
        };
        Prepared {
            step_fetch_ratio,
            line_room,
            in_place: prog.stores_in_place_whole(p.sector_bytes),
            stores_read_sectors: prog.stores_in_place(),
            stores_scattered: prog.stores_scattered(),
            s,
            fetch,
            nblocks,
            dom,
            places,
            px,
            py,
            pz,
            rep,
            footprint,
            count,
            rep_lines,
            rep_store_lines,
            all_footprints,
            compulsory,
            compulsory_fetches,
            stored,
            stored_together,
        }
    }

    /// Lower bounds of the per-block totals, from the exact parts of [`BlockScratch::run`]'s
    /// estimate alone: L2 load is at least every block's footprint, DRAM load at least the
    /// compulsory load, the reads of partly written sectors and the early write-backs, DRAM
    /// store at least the distinct sectors written and the early write-backs. Reuse that L1 or
    /// L2 misses only adds to them.
    pub(crate) fn bounds(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        classes: &SizeClasses,
        load_requests: &[f64; 8],
    ) -> BlockTotals {
        let t = self.prepare(prog, p, classes);
        // Without re-fetches: the same sum as `run`'s, so never above it by rounding either.
        let (l2_load, _) = Self::l2_load(&t, load_requests, 0.0);
        // The early write-backs at the share `run` takes.
        let share = partial_store_share(prog, p);
        Self::totals(&t, share, l2_load, 0.0, 0.0, (0.0, 0.0), 0.0)
    }

    /// L2 load in sectors, and the re-fetches in it, where L1 re-fetches `refetch_ratio` of each
    /// block's distinct sectors: at most what the block's warps request (`load_requests`, per
    /// size class).
    fn l2_load(t: &Prepared, load_requests: &[f64; 8], refetch_ratio: f64) -> (f64, f64) {
        let mut l2_load = 0.0;
        let mut refetch_total = 0.0;
        for ((&n, &footprint), &requests) in t.count.iter().zip(&t.footprint).zip(load_requests) {
            if n == 0.0 {
                continue;
            }
            let per_block = footprint / n;
            let with = (per_block * (1.0 + refetch_ratio)).min(requests.max(per_block));
            l2_load += n * with;
            refetch_total += n * (with - per_block);
        }
        (l2_load, refetch_total)
    }

    /// The totals of a configuration that writes back `early_share` of the sectors its stores
    /// complete only together before they are complete (`partial_store_share`), whose L2 load
    /// is `l2_load` sectors, whose reuses (between blocks, and L1's re-fetches) miss L2 for
    /// `reuse_missed` and `refetch_missed` sectors, that rewrites `rewrites.0` sectors and fills
    /// `rewrites.1` partly written pieces, and whose fetches lose `partners_missed` sectors.
    fn totals(
        t: &Prepared,
        early_share: f64,
        l2_load: f64,
        reuse_missed: f64,
        refetch_missed: f64,
        rewrites: (f64, f64),
        partners_missed: f64,
    ) -> BlockTotals {
        let (rewritten, filled) = rewrites;
        // L2 reads the aligned fetch of `fetch` bytes around a sector it misses: the compulsory
        // load is the union counted in fetches. A missed reuse is charged its sector only: its
        // fetch's other sectors are mostly missed at the same time (whole rows) or shared with
        // the blocks beside it in the wave.
        // The warps of a block store together; L2 writes back a share of the sectors they
        // complete only together before the last word arrives (measured by warps per block,
        // bench/l2-traffic.py): each costs a second write and a fill (HBM has no byte mask).
        let written_early = t.stored_together * early_share;
        BlockTotals {
            l2_load_sectors: l2_load,
            dram_load_sectors: t.compulsory_fetched()
                + reuse_missed
                + refetch_missed
                // A kernel storing in place read every sector it writes in part (measured on
                // the H200, `oos63/`-`oos65/`: the AA tiles narrower than a sector, whose
                // sectors L2 writes back in pieces, read no more than their loads miss).
                + if t.stores_read_sectors {
                    0.0
                } else {
                    t.stored.distinct - t.stored.full + written_early
                }
                + filled
                + partners_missed,
            dram_store_sectors: t.stored.distinct + rewritten + written_early,
        }
    }

    /// The sectors of the average block that L2 writes back early, between the two stores of a
    /// pair, by its limit on partly written sectors (`CacheParams::partial_sector_limit`). The
    /// pairs within one wave hold `count` sectors partly written at a time over the GPU
    /// (Little's law: each pair's sectors for the share of the block's steps between its two
    /// stores, at every resident block); above the limit L2 fills and writes back
    /// `1 - limit / count` of those whose two stores are steps apart (one thread's fold points,
    /// or a neighbour's and then the thread's next one), each once, beyond what it splits by
    /// evicting them (`missed`, per write pair), in a kernel storing several arrays per point
    /// only. A sector whose pieces blocks beside each other write at one step (tiles narrower
    /// than a sector, rows not aligned to sectors; in AoS records, at one fold point: a record's
    /// words go out store by store) is partly written for as long as the blocks drift apart
    /// (`CacheParams::neighbour_drift_share` of the run) and lost so too, once per sector, in
    /// every kernel; a block's own pieces at one step are complete within it. Measured
    /// (`bench/partial-occupancy.py`, H200): D3Q19 SoA tiles folded along x lose 0.02, 0.08,
    /// 0.25 and 0.52 of such sectors at 1, 2, 4 and 8 blocks per SM, whatever order their
    /// stores are compiled in; star3d_r4's, at as many sectors, 0.00-0.06 (one output array:
    /// partly written lines far apart reach L2's limit earlier, `bench/l2-traffic.py` set
    /// `pstride`); D3Q19 SoA tiles narrower than a sector 0.30-0.82 of their sectors (`oos60/`),
    /// star3d_r4's 0.16-0.45 (`partial-occupancy/narrow`, at the driver's carve-out); D3Q19 AoS
    /// tiles one or two records wide wrote 4.5-17.4 % more than estimated without it. A push
    /// kernel (`MemoryProgram::stores_scattered`) loses each of the block's share of
    /// `Prepared::stored_together` once.
    fn pairs_written_early(
        &self,
        prog: &MemoryProgram,
        p: &CacheParams,
        t: &Prepared,
        missed: &[f64],
        steps: usize,
        wave: f64,
    ) -> f64 {
        // Stores in place find their sectors whole in L2: none is partly written.
        if p.partial_sector_limit <= 0.0 || steps == 0 || t.stores_read_sectors {
            return 0.0;
        }
        // A push kernel's threads each write one word into many neighbours' records: its pairs
        // count as a kernel's storing several arrays do, and besides, each sector it stores
        // together stays partly written from its first writer to its last, as far apart in
        // launch order as the stores' offsets reach (a plane of cells per step along z; see
        // `scattered_count`).
        let scattered = t.stores_scattered;
        let stored_together = t.stored_together / t.nblocks as f64;
        // A kernel storing one array keeps its pairs steps apart (star3d_r4, `pstride`); the
        // sectors its blocks share at one step it loses as the others do.
        let stepped = prog.stores_several_arrays() || scattered;
        let pairs = &self.pass.write_pairs;
        let across = &self.pass.write_pairs_across;
        let st = steps as f64;
        // Two blocks' pieces of a sector at one step go out as far apart as the blocks drift.
        let drift = (p.neighbour_drift_share * st).min(st);
        let count = pairs
            .iter()
            .zip(across)
            .filter(|(c, _)| c.m == 0)
            .map(|(c, a)| {
                let apart = if stepped {
                    c.sectors * c.steps_apart(steps).clamp(0.0, st)
                } else {
                    0.0
                };
                (apart + a * drift) / st
            })
            .sum::<f64>()
            * wave
            + if scattered {
                scattered_count(prog, self.store_reach, stored_together)
            } else {
                0.0
            };
        // Sectors blocks beside each other complete at one step where the tile is a sector wide
        // or more are the row ends of rows not aligned to sectors: a kernel storing several
        // arrays loses at least the machine's share of them, below the limit too (measured: the
        // H200's D3Q19, D3Q27 and D2Q9 SoA tiles with one ghost layer lose 0.2-0.45 of them at 1
        // to 25 blocks per SM, where the count is below the limit; tiles narrower than a sector
        // lose none at one or two blocks per SM, `partial-occupancy/narrow`).
        let row_ends = if stepped && prog.stored_row_bytes() >= p.sector_bytes {
            p.row_end_write_back_share
        } else {
            0.0
        };
        if count <= p.partial_sector_limit && row_ends <= 0.0 {
            return 0.0;
        }
        let share = (1.0 - p.partial_sector_limit / count).max(0.0);
        // A push kernel's sectors: L2 fills each it writes back early once (whole in L2
        // after), not once per pair of its pieces (measured: D3Q19 push AoS writes each sector
        // twice and reads it once more at 256³ at 1 to 32 blocks per SM, `top63/`, `top64/`).
        if scattered {
            return share * stored_together;
        }
        pairs
            .iter()
            .zip(across)
            .zip(missed)
            .map(|((c, a), m)| {
                let lost = (share - m).max(0.0);
                match (c.m, c.now != c.then) {
                    (0, true) if stepped => c.sectors * lost,
                    // Each sector once, over its pairs of two blocks (at one step, or an AoS
                    // record's words at one fold point: `a` is 0 otherwise).
                    (0, _) if drift > 0.0 || row_ends > 0.0 => {
                        a * (share.max(row_ends) - m).max(0.0)
                    }
                    _ => 0.0,
                }
            })
            .sum()
    }

    /// The sectors (weighted) the representative block fetches from L2 again after L1 evicted
    /// them, from its line touches; `RowPass::refetches` keeps them by step.
    ///
    /// A line touched again after `g` load steps has seen what the resident blocks touched in
    /// between: the `g - 1` steps between and parts of the two steps it is touched in, whose sum
    /// is spread as that of two uniform positions (triangular on 0..2 steps). Their distinct
    /// lines are the working set of that window (Denning's, interpolated between whole steps),
    /// not the steps' lines added up: the lines of the two parts are mostly those of the steps
    /// between too. The line is evicted where the window is longer than the one whose working
    /// set fills the block's share of L1. With set conflicts (`ways` > 0) the line is lost where
    /// `ways` of the window's lines fell into its set (see `conflict_evictions`). A window also
    /// holds the lines of the stores in it (`store_lines` the block's distinct ones): L1
    /// allocates a line for a store.
    fn l1_refetches(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        is_load: &[bool],
        rep_weight: f64,
        resident: f64,
        store_lines: f64,
    ) -> f64 {
        let cfg = &prog.config;
        let load_steps = self.pass.load_steps();
        let cap = (p.l1_bytes / p.line_bytes) as f64;
        let ways = p.l1_conflict_ways;
        let share = rep_weight * cap / resident;
        self.pass.working_set(load_steps, &mut self.ws);
        let gaps = &self.pass.gaps;
        // In lockstep a fold point's stores go out between its loads and the next fold point's,
        // each allocating its lines in L1 as a load does: a window of `g` load steps holds the
        // lines of the stores issued within it (none where every store follows the last load).
        self.pass.stores_after_loads(is_load, &mut self.store_steps);
        let stores: f64 = self.store_steps.iter().sum();
        self.lock_ws.clone_from(&self.ws);
        if stores > 0.0 {
            let per_store = store_lines * rep_weight / stores;
            // `p[c]`: the stores after fewer than `c` loads; `q[k]`: the sum of `p[..k]`.
            let (mut p_sum, mut q_sum) = (0.0, 0.0);
            let q = &mut self.store_steps;
            for v in q.iter_mut() {
                let n = *v;
                (*v, q_sum) = (q_sum, q_sum + p_sum);
                p_sum += n;
            }
            q.push(q_sum);
            let l = load_steps;
            for (g, w) in self.lock_ws.iter_mut().enumerate().take(l).skip(1) {
                // Reuses from load `a` to load `a + g` see the stores after `a + 1` to `a + g`
                // loads: p[a + g + 1] - p[a + 1], summed over a = 0..l - g.
                let inside = (q[l + 1] - q[g + 1]) - (q[l - g + 1] - q[1]);
                *w += per_store * inside / (l - g) as f64;
            }
        }
        l1_evictions(&self.lock_ws, gaps, share, ways, &mut self.evict);
        // The first fold point's loads go out back to back (the compiled kernels issue them
        // before their first arithmetic), and between two of them L1 sees the loads of only
        // the measured share of the SM's warps, not all of them as in lockstep
        // (`bench/l1-interleave.py`): their window holds that share of the lines. Later loads
        // wait on their operands and take turns with every warp, as the steps do. In a
        // compiled order the burst runs to the first fold point's last load, with the later
        // fold points' loads the compiler placed among them.
        let warps_per_block = cfg.threads().div_ceil(p.warp_size.max(1)) as f64;
        let lines_per_load = self
            .ws
            .get(1)
            .map_or(1.0, |l| l / rep_weight / warps_per_block);
        let interleaved = p.l1_interleave.share(lines_per_load);
        let burst_loads = if interleaved < 1.0 {
            // L1 allocates a line for a store as for a load (`l1-policy` `writes`, H100 README),
            // and the warps interleaved with a burst are at any point of their runs: a window of
            // `g` load steps holds their stores' distinct lines at the block's rate per load step
            // too. Push kernels store about nine lines per line they load, enough to evict a
            // record's lines between its loads; in lockstep, stores come after the loads.
            let store_rate = store_lines * rep_weight / load_steps as f64;
            self.burst_ws.clear();
            self.burst_ws.extend(
                self.ws
                    .iter()
                    .enumerate()
                    .map(|(g, w)| w + g as f64 * store_rate),
            );
            l1_evictions(
                &self.burst_ws,
                gaps,
                share / interleaved,
                ways,
                &mut self.burst_evict,
            );
            self.pass.first_burst_loads(is_load)
        } else {
            0
        };
        // A warp reading AoS records waits for the slowest of the many lines each load touches,
        // so its next load goes out about an L2 latency after the last one, behind the L1's
        // queue. Between two of its loads after the first burst, L1 then serves the queued
        // instructions' lines and those of one L2 latency, not a load of every resident warp
        // as in lockstep: its reuses of its own lines see that share (measured: the simulator's
        // timed order fits the AoS L2 loads, `issue-order/d3q19_srt_pull-aos-timed-128.md`).
        let own = if p.l1_queue > 0.0 && self.planes.iter().any(|pl| pl.interleaved()) {
            let resident = warps_per_block * p.blocks_per_sm as f64;
            let lpl = lines_per_load.max(1.0);
            let served = p.l1_queue * lpl + p.l2_latency_lines;
            let s = served / ((resident - 1.0).max(1.0) * lpl);
            (s < 1.0).then(|| {
                l1_evictions(&self.ws, gaps, share / s, ways, &mut self.own_evict);
                &self.own_evict[..]
            })
        } else {
            None
        };
        self.pass
            .refetches(&self.evict, &self.burst_evict, own, burst_loads)
    }

    /// The per-block totals of a configuration: the exact footprints, and what reuse L1 and L2
    /// miss, from the row statistics of the sampled blocks.
    pub(crate) fn run(
        &mut self,
        prog: &MemoryProgram,
        p: &CacheParams,
        classes: &SizeClasses,
        load_requests: &[f64; 8],
        l2_store_sectors: f64,
    ) -> BlockTotals {
        let t = self.prepare(prog, p, classes);
        let (s, nblocks, dom, places, rep) = (t.s, t.nblocks, t.dom, t.places, t.rep);
        let (px, py, pz) = (&t.px, &t.py, &t.pz);
        let rep_lines = t.rep_lines;
        let (all_footprints, compulsory) = (t.all_footprints, t.compulsory);
        let (grid, tile) = (classes.grid, classes.tile);

        // Row statistics: the representative block inside the grid, and on small axes the first
        // block too (it has no earlier neighbour along that axis).
        let cfg = &prog.config;
        let sh = Shape::new(
            cfg.block.map(|v| v as i64),
            cfg.fold.map(|v| v as i64),
            prog.instructions.len() as u32,
            s,
            p.line_bytes as i64,
        );
        let steps = sh.steps();
        self.pass.reset(steps);
        self.pass.warp_size = p.warp_size;
        self.cut_memo = [None; 2];
        let is_load: Vec<bool> = prog
            .instructions
            .iter()
            .map(|i| i.kind == AccessKind::Load)
            .collect();
        self.pass
            .set_loads(&is_load, &prog.issued, prog.compiled_order.as_deref());
        let wave_blocks = (p.sms * p.blocks_per_sm).min(nblocks).max(1) as i64;
        let issue = Issue::new(wave_blocks, p.sms as i64);
        let lattice = Grid {
            blocks: grid.map(|g| g as i64),
            tile: tile.map(|t| t as i64),
            domain: dom,
        };
        let index = |b: [usize; 3]| b.map(|v| v as i64);
        let rep_weight = px.last().map_or(1.0, |v| v.1)
            * py.last().map_or(1.0, |v| v.1)
            * pz.last().map_or(1.0, |v| v.1);
        // L1 can only overflow if the resident blocks' distinct lines exceed it; only then are
        // more rows needed than those the links are found on.
        let resident = resident_blocks(nblocks, p.sms, p.blocks_per_sm);
        let cap = (p.l1_bytes / p.line_bytes) as f64;
        let ways = p.l1_conflict_ways;
        let l1_full = resident * rep_lines > cap;
        let l1_overflows = resident * rep_lines > cap * conflict_free_fill(ways);
        self.shape_block = cfg.block.map(|v| v as i64);
        self.shape_fold = cfg.fold.map(|v| v as i64);
        self.shape_tile = tile.map(|v| v as i64);
        let rep_at = Self::at(classes, rep);
        self.cuts(&rep_at, self.shape_block, self.shape_fold, self.shape_tile);
        // Only where the resident blocks overflow L1 do its statistics need more rows than the
        // links are found on (where set conflicts alone lose lines, the link rows gave the same
        // volumes on every counter sweep).
        self.sample_kept(if l1_full { ROW_BUDGET } else { LINK_ROWS });

        // The other sampled blocks: the first along small axes (and, where tiles start at
        // several places within a sector, the interior blocks sharing the link rows). Where
        // tiles start at one place (the representative then searches every link row itself), a
        // first block of the representative's extent whose rows start at the same places
        // within sectors takes the representative's rows, translated; where, along each axis
        // it is first on, the blocks after it within reach are as full as the representative's
        // (`mirrors`), it touches and shares sectors as the representative does outside its
        // bands (`Bands`), and reuses its first touches and links there (`Part::Reuse`).
        let mut extra = Vec::new();
        for &(bz, wz, _) in pz {
            for &(by, wy, _) in py {
                for &(bx, wx, share) in px {
                    if [bx, by, bz] != rep {
                        extra.push(([bx, by, bz], wx * wy * wz, share));
                    }
                }
            }
        }
        let spread = self
            .planes
            .iter()
            .map(|pl| (s + pl.pitch - 1) / pl.pitch)
            .max()
            .unwrap_or(1);
        let mirrors: [bool; 3] = std::array::from_fn(|d| {
            let (g, t, rep_d) = (grid[d] as i64, tile[d] as i64, rep[d] as i64);
            // The blocks after one whose loads can land on its rows, or along x on its sectors
            // (a sector's points beyond its last point touched may be theirs).
            let slack = if d == 0 { spread } else { 0 };
            let after = (t - 1 + self.reach[d].1 - self.reach[d].0 + slack) / t;
            if dom[d] % t == 0 {
                rep_d + after < g
            } else {
                rep_d + after < g - 1
            }
        });
        let translatable = |b: [usize; 3]| {
            let shift: [i64; 3] =
                std::array::from_fn(|d| (b[d] as i64 - rep[d] as i64) * tile[d] as i64);
            places == 1
                && Self::at(classes, b).ext == rep_at.ext
                && self.planes.iter().all(|pl| {
                    (shift[0] * pl.pitch) % s == 0
                        && (shift[1] * pl.row + shift[2] * pl.layer) % s == 0
                })
        };
        // Per extra block, where it takes the representative's rows: the axes it is first on
        // (it reuses the representative's parts outside its bands along them).
        let reuse: Vec<Option<usize>> = extra
            .iter()
            .map(|&(b, _, _)| {
                let first = (0..3)
                    .filter(|&d| b[d] != rep[d])
                    .fold(0, |m, d| m | 1 << d);
                let mirrored = (0..3).all(|d| first >> d & 1 == 0 || (b[d] == 0 && mirrors[d]));
                (mirrored && translatable(b)).then_some(first)
            })
            .collect();
        let full = self.full_extra_passes;
        let record = !full && reuse.iter().any(Option::is_some);
        let rep_bands = Bands::of(&rep_at, self.reach);
        // L2 sees a block's sector at its first touch and again at each L1 re-fetch of it, not
        // at L1's hits: another block's reuse of the sector is linked from the last of those.
        // Where L1 overflows, a first pass over a sample of the representative's rows finds its
        // re-fetches (without links), and the link search moves each first touch to where L2
        // last sees it, as expected (`RowPass::last_seen_steps`). Found on the H100's 512³ star3d_r4
        // tiles folded 1×2×4, whose z-halo rows, read at every other fold point, are
        // re-fetched late, so the tile above still finds them in L2 (those folded 1×1×4 keep
        // theirs in L1, and lose the reuse): bench/results/h100/counters/README.md, "L2 last
        // sees a sector at its last re-fetch".
        self.pass.last_seen.clear();
        // The representative's re-fetches (total, by step), from its L1 sample (`L1_ROW_BUDGET`
        // rows of their own): they are per block and per step, so the search's pass over the
        // link rows takes them as they are.
        let mut l1_found = None;
        if l1_overflows {
            let link_rows = std::mem::take(&mut self.rows);
            self.sample_cells(
                self.l1_row_budget.unwrap_or(L1_ROW_BUDGET),
                Placement::Spread,
            );
            let rows = std::mem::take(&mut self.rows);
            self.pass.skip_links = true;
            self.pass.block(
                &self.planes,
                &self.loads,
                &sh,
                &lattice,
                index(rep),
                self.reach,
                &rows,
                issue,
                true,
                px.last().map_or((1, 0), |v| v.2),
                rep_weight,
                Part::All,
            );
            self.pass.skip_links = false;
            self.rows = link_rows;
            let refetched =
                self.l1_refetches(prog, p, &is_load, rep_weight, resident, t.rep_store_lines);
            if let Some(seen) = self.pass.last_seen_steps() {
                self.pass.last_seen = seen;
            }
            l1_found = Some((refetched, std::mem::take(&mut self.pass.refetched)));
            self.pass.reset(steps);
        }
        let rows = std::mem::take(&mut self.rows);
        self.pass.block(
            &self.planes,
            &self.loads,
            &sh,
            &lattice,
            index(rep),
            self.reach,
            &rows,
            issue,
            l1_overflows,
            px.last().map_or((1, 0), |v| v.2),
            rep_weight,
            if record {
                Part::Record(rep_bands)
            } else {
                Part::All
            },
        );
        let rep_rows = rows;
        let rep_sectors: f64 = self.pass.first_touch.iter().sum::<f64>() / rep_weight;
        // The rows sampled are those of every block of the same extent and place along y and
        // z: the representative's where it was sampled for its links only.
        let rep_key = (rep_at.origin[1], rep_at.origin[2], rep_at.ext);
        let mut sampled = None;
        for (&(b, weight, share), &first) in extra.iter().zip(&reuse) {
            let at = Self::at(classes, b);
            let key = (at.origin[1], at.origin[2], at.ext);
            let part = match first {
                Some(first) if !full => {
                    self.reused_axes |= first;
                    Part::Reuse {
                        bands: Bands::of(&at, self.reach),
                        first,
                        ratio: weight / rep_weight,
                    }
                }
                _ => Part::All,
            };
            if first.is_some() {
                let (dy, dz) = (
                    at.origin[1] - rep_at.origin[1],
                    at.origin[2] - rep_at.origin[2],
                );
                self.rows.clear();
                self.rows.extend(rep_rows.iter().map(|r| SampledRow {
                    y: r.y + dy,
                    z: r.z + dz,
                    ..*r
                }));
                sampled = None;
            } else if sampled != Some(key) {
                if key == rep_key && !l1_full {
                    self.rows.clone_from(&rep_rows);
                } else {
                    self.sample(&at, AccessKind::Load);
                }
                sampled = Some(key);
            }
            let rows = std::mem::take(&mut self.rows);
            self.pass.block(
                &self.planes,
                &self.loads,
                &sh,
                &lattice,
                index(b),
                self.reach,
                &rows,
                issue,
                false,
                share,
                weight,
                part,
            );
            self.rows = rows;
        }
        self.rows = rep_rows;

        // Sectors written more than once: consecutive writes of the representative block.
        if !self.stores.is_empty() {
            let at = Self::at(classes, rep);
            self.sample(&at, AccessKind::Store);
            let rows = std::mem::take(&mut self.rows);
            self.pass.writes(
                &self.planes,
                &self.stores,
                &sh,
                &lattice,
                index(rep),
                self.store_reach,
                &rows,
                issue,
                1.0,
            );
            self.rows = rows;
        }

        // L1: the representative's re-fetches, found before the link search (`l1_refetches`).
        let mut refetch_ratio = 0.0;
        if let Some((refetched, found)) = l1_found {
            self.pass.refetched = found;
            if rep_sectors > 0.0 {
                refetch_ratio = refetched / rep_weight / rep_sectors;
            }
        }
        let (l2_load, refetch_total) = Self::l2_load(&t, load_requests, refetch_ratio);

        // L2: the stream of L2 accesses of the average block, per step: first touches, store
        // instructions' sectors and re-fetches.
        let avg_loads = all_footprints / nblocks as f64;
        // Every store instruction's sectors go to L2; a sector written again is a link. A
        // written sector takes the room of `l2_store_weight` read ones in L2 (measured: reused
        // data is lost as much earlier as written data weighs more, `bench/l2-traffic.py` set
        // `wcapacity`), so the window's volume counts it so. A kernel storing in place writes the
        // sectors it read, which the window holds already: only the written data's extra room
        // counts (on the H200's AA kernels the whole weight puts DRAM load 15-250 % over).
        let store_weight = if t.in_place {
            (p.l2_store_weight - 1.0).max(0.0)
        } else {
            p.l2_store_weight
        };
        let avg_stores = store_weight * l2_store_sectors / nblocks as f64;
        let first_total: f64 = self.pass.first_touch.iter().sum();
        let store_slots = prog
            .instructions
            .iter()
            .filter(|i| i.kind == AccessKind::Store)
            .count();
        let points = cfg.points_per_thread();
        self.step_acc.clear();
        self.step_acc.resize(steps, 0.0);
        // Steps run through the instructions in turn.
        let kinds = prog.instructions.iter().map(|i| i.kind).cycle();
        for ((k, v), kind) in self.step_acc.iter_mut().enumerate().zip(kinds) {
            if first_total > 0.0 {
                *v += self.pass.first_touch[k] / first_total * avg_loads;
            }
            if kind == AccessKind::Store {
                *v += avg_stores / (points * store_slots) as f64;
            }
        }
        // A sector first touched by several blocks of a wave is one sector in L2, and they
        // re-fetch it alike. A re-fetch is linked only to its own block's previous touch, so a
        // window would count such a sector once per block re-fetching it, where their first
        // touches count once (linked within the wave). The stream of re-fetches therefore counts
        // the wave's distinct share of the sectors (without it, narrow tiles lost their L2 reuse:
        // star3d_r4 2×1×32 fold 4×1×1 on the agreement machine, 101.5 B/LUP DRAM load estimated
        // against 11.9 simulated).
        let reused = (all_footprints - compulsory).max(0.0);
        let linked = self.pass.linked;
        let within_wave: f64 = self
            .pass
            .links
            .iter()
            .filter(|c| c.m == 0)
            .map(|c| c.sectors)
            .sum();
        let refetch_distinct = if linked > 0.0 && all_footprints > 0.0 {
            1.0 - reused * within_wave / linked / all_footprints
        } else {
            1.0
        };
        let refetch_stream = refetch_total * refetch_distinct;
        let refetched_sampled: f64 = self.pass.refetched.iter().map(|r| r.sectors).sum();
        if refetched_sampled > 0.0 {
            for r in &self.pass.refetched {
                self.step_acc[r.now as usize] +=
                    r.sectors / refetched_sampled * refetch_stream / nblocks as f64;
            }
        }
        self.cum.clear();
        self.cum.push(0.0);
        let mut sum = 0.0;
        for v in &self.step_acc {
            sum += v;
            self.cum.push(sum);
        }
        // Time-ordered links (previous access of each reused sector), per block, scaled to the
        // exact reuse total; L1 re-fetches are links within the block.
        let wave = wave_blocks as f64;
        let scale = if linked > 0.0 {
            reused / linked / nblocks as f64
        } else {
            0.0
        };
        let refetch_scale = if refetched_sampled > 0.0 {
            refetch_stream / refetched_sampled / nblocks as f64
        } else {
            0.0
        };
        let bins = steps.min(MAX_BINS);
        let mut win = Window::new(
            &mut self.share,
            &self.cum,
            steps,
            bins,
            &mut self.bin_of,
            wave,
        );
        for c in &self.pass.links {
            win.add(c.m, c.then as usize, c.now as usize, c.sectors * scale);
        }
        for r in &self.pass.refetched {
            win.add(
                0,
                r.then as usize,
                r.now as usize,
                r.sectors * refetch_scale,
            );
        }
        for c in &self.pass.write_pairs {
            win.add(
                c.m,
                c.then as usize,
                c.now as usize,
                c.sectors * store_weight,
            );
        }
        win.finish();
        // Reads take their windows from the blocks' launch times; the write pairs keep the
        // lockstep waves' (with launch-time windows the H100's DRAM store within ±10 % falls
        // from 601 to 588 of 661 entries).
        let mut reads: Vec<(f64, f64)> = self
            .pass
            .links
            .iter()
            .map(|c| (c.steps_apart(steps), c.sectors * scale))
            .collect();
        reads.extend(self.pass.refetched.iter().map(|r| {
            (
                f64::from(r.now) - f64::from(r.then),
                r.sectors * refetch_scale,
            )
        }));
        reads.extend(
            self.pass
                .write_pairs
                .iter()
                .map(|c| (c.steps_apart(steps), c.sectors * store_weight)),
        );
        let launched = LaunchWindow::new(reads, self.cum[steps], steps, wave);
        // L2 holds whole lines (measured: a buffer read one sector per line is lost at the same
        // MiB of lines as one read whole, `bench/l2-traffic.py` set `lines`), so a window takes
        // the room of the lines its sectors lie in. A window of whole waves holds whole tiles; one
        // of `L` steps within a wave holds each instruction at `L / slots` consecutive fold points
        // (at least one; between whole numbers some once, some once more), and where that is
        // fewer than the tile's x-fold points, the other sectors of their lines lie outside it.
        let (slots, rooms) = (sh.slots.max(1) as f64, &t.line_room);
        let room = |c: &Link| -> f64 {
            if c.m > 0 || rooms.is_empty() {
                return 1.0;
            }
            // `rooms` is indexed by fold points less one, as `ws_at` by steps.
            let n = (c.now.saturating_sub(c.then) as f64 / slots).max(1.0);
            ws_at(rooms, n - 1.0)
        };
        let distance = |c: &Link| -> f64 { launched.distance(c.steps_apart(steps)) * room(c) };
        let written_distance = |c: &Link| -> f64 {
            win.distance(
                c.m,
                c.then as usize,
                c.now as usize,
                c.rest as f64,
                c.part as f64,
            ) * room(c)
        };
        // A reuse hits with the machine's measured share at its distance, where known (reads of
        // clean sectors, `bench/l2-traffic.py` set `capacity`); else L2 is an LRU of its
        // effective capacity.
        let written_hit = |c: &Link| -> f64 { 1.0 - p.l2_miss_at(written_distance(c) * s as f64) };
        // A read within a wave sees at least the lines of the AoS records the wave touched in
        // between (see `RecordWindow`), in sectors; at most the grid's data (the boxes of a
        // small domain's clipped tiles overlap).
        let records = RecordWindow::new(prog, &self.planes, &self.acc, p.line_bytes);
        let sectors_per_line = (p.line_bytes / p.sector_bytes) as f64;
        let grid_room = compulsory + t.stored.distinct;
        let record_room = |c: &Link| -> f64 {
            match &records {
                Some(r) if c.m == 0 => {
                    (wave_blocks as f64 * r.lines(c.then, c.now) * sectors_per_line).min(grid_room)
                }
                _ => 0.0,
            }
        };
        let hit =
            |c: &Link| -> f64 { 1.0 - p.l2_miss_at(distance(c).max(record_room(c)) * s as f64) };
        let h = if linked > 0.0 {
            self.pass
                .links
                .iter()
                .map(|c| c.sectors * hit(c))
                .sum::<f64>()
                / linked
        } else {
            1.0
        };
        // Re-fetches repeat their pairs of steps: each pair's hit is found once.
        let refetch_hits = &mut self.refetch_hits;
        refetch_hits.clear();
        let refetch_hit = if refetched_sampled > 0.0 {
            self.pass
                .refetched
                .iter()
                .map(|r| {
                    let c = Link {
                        m: 0,
                        then: r.then,
                        now: r.now,
                        rest: 0.5,
                        part: 0.5,
                        sectors: r.sectors,
                    };
                    let own = *refetch_hits
                        .entry((r.then, r.now))
                        .or_insert_with(|| hit(&c));
                    // The share an earlier-launched neighbour re-fetched just before keeps
                    // the later of the two links.
                    let h = match self.pass.mirrored(r.first) {
                        Some((share, apart)) => {
                            let near = 1.0 - p.l2_miss_at(launched.distance(apart) * s as f64);
                            share * near.max(own) + (1.0 - share) * own
                        }
                        _ => own,
                    };
                    r.sectors * h
                })
                .sum::<f64>()
                / refetched_sampled
        } else {
            1.0
        };
        // A sector L2 evicts between two of its writes is written twice; both parts are partial,
        // so each costs a read as well. Nothing measured how long L2 keeps a sector between two
        // writes of it, so it is kept as a reuse is (the measured curve where known): with the
        // step at the effective capacity and written data weighted, the H100's unfolded D3Q19
        // AoS blocks were charged 28 B/LUP of rewrites the counters do not show.
        let missed: Vec<f64> = self
            .pass
            .write_pairs
            .iter()
            .map(|c| 1.0 - written_hit(c))
            .collect();
        let pairs_early =
            self.pairs_written_early(prog, p, &t, &missed, steps, wave) * nblocks as f64;
        // A push kernel's sectors L2 filled at its limit are whole in L2 after: one it evicts
        // between two later pieces costs a second write but no fill.
        let filled_at_limit = t.stores_scattered && pairs_early > 0.0;
        let rewritten = self
            .pass
            .write_pairs
            .iter()
            .zip(&missed)
            .map(|(c, q)| c.sectors * q)
            .sum::<f64>()
            * nblocks as f64;
        // Each partly written piece L2 writes back is filled first: a sector whose pairs L2
        // splits `e` times is written back in `e + 1` pieces, each filled. A sector of two
        // writes costs two fills where split; one of three or more `e + 1` (expected: the
        // splits plus the chance of any), not two per split pair.
        let fewer_fills = self
            .pass
            .chains
            .iter()
            .map(|&(w, start, len)| {
                let pairs = &self.pass.chain_pairs[start as usize..(start + len) as usize];
                let splits: f64 = pairs.iter().map(|&k| missed[k as usize]).sum();
                let none: f64 = pairs.iter().map(|&k| 1.0 - missed[k as usize]).product();
                w * (splits - (1.0 - none))
            })
            .sum::<f64>()
            * nblocks as f64;
        let (reuse_missed, refetch_missed) =
            (reused * (1.0 - h), refetch_total * (1.0 - refetch_hit));
        // A fetch's partner sectors first requested at the thread's next x-fold point are lost
        // where L2 misses a reuse from one x-fold point to the next (measured: D3Q19 SoA tiles
        // folded along x read whole fetches per fold point, and with 32-byte fetches what the
        // visitor says; bench/results/h100/counters/README.md, "The other half of a 64-byte
        // fetch"); its window, from a load to the same load at the next x-fold point, takes the
        // room of that fold point's lines: a fold point of steps as emitted, fewer where the
        // compiled code interleaves the fold points (`next_x_fold_steps`).
        let partners_missed = if t.step_fetch_ratio > 0.0 {
            let next_fold = Link {
                m: 0,
                then: 0,
                now: next_x_fold_steps(prog, &sh),
                rest: 0.5,
                part: 0.5,
                sectors: 1.0,
            };
            let charged = t.compulsory_fetched() + reuse_missed + refetch_missed;
            let requested = compulsory + reuse_missed + refetch_missed;
            (requested * t.step_fetch_ratio - charged).max(0.0) * (1.0 - hit(&next_fold))
        } else {
            0.0
        };
        Self::totals(
            &t,
            partial_store_share(prog, p),
            l2_load,
            reuse_missed,
            refetch_missed,
            (
                rewritten + pairs_early,
                // A sector a kernel storing in place writes in pieces it read: evicted between
                // two writes it is written twice, never filled.
                if t.stores_read_sectors {
                    0.0
                } else if filled_at_limit {
                    pairs_early
                } else {
                    2.0 * rewritten - fewer_fills + pairs_early
                },
            ),
            partners_missed,
        )
    }
}

/// Sectors a push kernel (`MemoryProgram::stores_scattered`) keeps partly written at a time over
/// the GPU for the spread of each stored sector's writers in launch order (Little's law: blocks
/// `n` launches apart start `n / wave` of a run apart, so a sector stays open for the launches
/// between its first writer and its last): its sectors stored together per cell (of a block's
/// `stored_together`) times the cells the stores' offsets (`store_reach`, see `offset_range`)
/// span in launch order, a plane of the domain per step along z and a row per step along y.
/// D3Q19 push AoS at 256³: about 300 k sectors, 5.4 times the H200's limit; at 64³, 19 k, below
/// it.
pub(crate) fn scattered_count(
    prog: &MemoryProgram,
    store_reach: [(i64, i64); 3],
    stored_together: f64,
) -> f64 {
    if store_reach[0].0 > store_reach[0].1 {
        return 0.0;
    }
    let n = prog.domain.size;
    let span = |a: usize| (store_reach[a].1 - store_reach[a].0) as f64;
    let cells = span(2) * (n[0] * n[1]) as f64 + span(1) * n[0] as f64 + span(0);
    let points = (prog.config.threads() * prog.config.points_per_thread()) as f64;
    stored_together / points * cells
}

/// The share of the sectors a block completes in several stores that L2 writes back before they
/// are complete: the machine's share for the block's warps (`CacheParams::partial_store_loss`),
/// or, where the compiled code stores into two fold points' records at once, the share for all
/// the SM's resident warps (`partial_store_loss_sm`); where its stores span most of each fold
/// point (a record partly written throughout, [`RECORDS_OPEN_SPAN`]) that share also beyond the
/// measured warps (`partial_store_loss_sm_open`). Measured on the H100 (`bench/aos-reads.py`
/// set `fence`): folded D3Q19 AoS tiles whose compiled code interleaves fold points' stores lose
/// 0.79-0.90 of their record sectors at 16 warps per block, 0.24 (the share for 16 warps) with a
/// fence between fold points; a thread's records then stay partly written across its fold points
/// and the SM's blocks no longer store apart. Up to the machine's measured warps only (32): at
/// 40-48 warps per SM interleaved tiles lose what the block's share says (`bench/aos-store-share.py`).
/// A block that stores one record at a time, each store needing every load (an LBM collision),
/// takes the share measured with stores that wait for all the loads
/// (`partial_store_loss_after_loads`): on the H100 0.51 at 32 warps against the copy's 0.60,
/// whose stores go out as their loads return (`bench/l2-traffic.py`, sets `partial` and
/// `afterloads`). Fold points whose compiled code issues their stores back to back
/// (`MemoryProgram::stores_back_to_back`) take the share measured so
/// (`partial_store_loss_back_to_back`): on the H100 0.008 at 4 warps and 0.11 at 16 against
/// 0.03 and 0.19 (set `storegap`); the D3Q19 AoS twins with the float options store so and
/// lose 0.02 and 0.05, the same code spread at 32 registers 0.08 and 0.2 (`bench/aos-reads.py`,
/// set `options`). A kernel storing in place (`MemoryProgram::stores_in_place`) loses none:
/// each thread stores into sectors it read just before, whole in L2 when the stores arrive.
pub(crate) fn partial_store_share(prog: &MemoryProgram, p: &CacheParams) -> f64 {
    if prog.stores_in_place() {
        return 0.0;
    }
    if prog
        .store_span_share
        .is_some_and(|s| s >= RECORDS_OPEN_SPAN)
    {
        return p.partial_store_loss.max(p.partial_store_loss_sm_open);
    }
    if stores_interleaved(prog) {
        return p.partial_store_loss.max(p.partial_store_loss_sm);
    }
    let spread = if prog.stores_need_every_load {
        p.partial_store_loss_after_loads
            .unwrap_or(p.partial_store_loss)
    } else {
        p.partial_store_loss
    };
    match (p.partial_store_loss_back_to_back, prog.stores_back_to_back) {
        (Some(together), Some(b)) => b * together + (1.0 - b) * spread,
        _ => spread,
    }
}

/// The share of a fold point's compiled instructions its stores span (see
/// [`MemoryProgram::store_span_share`]) from which a thread keeps a record partly written
/// throughout its run, so that all the SM's resident warps hold one at once. In the counter
/// sweeps' compiled D3Q19 AoS code the spans are 0.68 or less or 0.79 or more, none between;
/// above 32 warps per SM the tiles of the second group lose 0.64-0.94 of their record sectors,
/// as the SM's share says, not the block's 0.10-0.31 (one, 4x2x8 fold 2x1x4 at 36 warps, loses
/// 0.49); and the record copy whose stores wait on FMA chains in a loop loses 0.49-0.56 at
/// blocks of 4 warps filling the SM (`bench/l2-traffic.py` set `storegap`). See
/// bench/results/h100/counters/README.md, "Records partly written throughout a fold point".
const RECORDS_OPEN_SPAN: f64 = 0.75;

/// Whether the compiled order has a thread store into two fold points' records at once (a fold
/// point's stores begun before an earlier one's are done).
fn stores_interleaved(prog: &MemoryProgram) -> bool {
    prog.store_spans(None).windows(2).any(|w| w[1].0 < w[0].1)
}

/// Steps from a load at one x-fold point to the same load at the thread's next x-fold point:
/// one fold point of steps in the emitted order; in the compiled order (which interleaves the fold
/// points) the mean distance of those pairs in its sequence, scaled to the block's steps.
fn next_x_fold_steps(prog: &MemoryProgram, sh: &Shape) -> u32 {
    let Some(order) = prog.compiled_order.as_deref() else {
        return sh.slots;
    };
    let fx = prog.config.fold[0];
    let mut at = HashMap::new();
    for (q, &(f, i)) in order.iter().enumerate() {
        at.insert((f, i), q);
    }
    let (mut sum, mut n) = (0.0, 0usize);
    for (&(f, i), &q) in &at {
        if f % fx + 1 < fx && prog.instructions[i].kind == AccessKind::Load {
            if let Some(&q2) = at.get(&(f + 1, i)) {
                sum += (q2 as f64 - q as f64).abs();
                n += 1;
            }
        }
    }
    if n == 0 {
        return sh.slots;
    }
    let steps = sh.steps() as f64;
    ((sum / n as f64) * steps / order.len() as f64)
        .round()
        .max(1.0) as u32
}

/// Sectors L2 reads from DRAM per sector requested where each x-fold point of a block fetches
/// alone, i.e. a fetch's other sectors are used only by requests of the same fold point of the
/// blocks running together: `Σ fetched / Σ requested` over the fold points of a row of tiles, for
/// the loads of every plane whose elements are contiguous (AoS planes are left out), averaged over
/// a few rows. 0 where no plane qualifies.
fn step_fetch_ratio(
    planes: &[Plane],
    acc: &[PlaneAccess],
    bx: usize,
    fx: usize,
    s: i64,
    fetch: i64,
) -> f64 {
    // Enough tiles that their starts take every place within a fetch (rows not cut at the
    // domain's edge).
    let tiles = |pl: &Plane| {
        let period = (bx * fx) as i64 * pl.elem;
        4 * (fetch / gcd(period, fetch)).max(1)
    };
    let fold_points = FoldPoints {
        bx,
        fx,
        nx: i64::MAX,
        kinds: &[AccessKind::Load],
        interleaved: false,
    };
    let (requested, fetched) = fold_points.covered(planes, acc, 1, &tiles, s, fetch);
    if requested > 0.0 {
        fetched / requested
    } else {
        0.0
    }
}

/// L2's room per sector accessed in windows of `n` consecutive x-fold points of blocks `bx`
/// threads wide folded `fx` times along x, relative to whole tiles' (at least 1), at `n - 1` for
/// `n` in `1..=fx`: the lines of `line` bytes the accesses of those fold points touch over the
/// sectors of `s` bytes they touch, divided by the same for all `fx` fold points. Loads and stores
/// count alike, over a few rows of tiles within the domain's `nx` points (a wave's window covers
/// whole rows of tiles, so lines are partial only at the fold points outside it); AoS planes
/// word by word.
pub(crate) fn line_room(
    planes: &[Plane],
    acc: &[PlaneAccess],
    bx: usize,
    fx: usize,
    nx: i64,
    s: i64,
    line: i64,
) -> Vec<f64> {
    if fx <= 1 {
        return vec![1.0];
    }
    // Enough tiles that their starts take every place within a line (the lines partly covered
    // at the ends are so in every window, and whole tiles are the unit).
    let tx = (bx * fx) as i64;
    let tiles = |pl: &Plane| {
        let cells = (4 * line / gcd(tx * pl.pitch, line)).max(16) * tx;
        ((cells.min(nx) + tx - 1) / tx).max(1)
    };
    let fold_points = FoldPoints {
        bx,
        fx,
        nx,
        kinds: &[AccessKind::Load, AccessKind::Store],
        interleaved: true,
    };
    let ratio: Vec<f64> = (1..=fx)
        .map(|n| fold_points.covered(planes, acc, n, &tiles, s, line))
        .map(|(sc, ln)| if sc > 0.0 { ln / sc } else { 1.0 })
        .collect();
    // Relative to whole tiles: the lines a row's ends share with the rows next to it are full in
    // a window of whole waves.
    let full = ratio[fx - 1];
    ratio.iter().map(|r| (r / full).max(1.0)).collect()
}

/// The x-fold points of blocks `bx` threads wide folded `fx` times, in rows of tiles cut at the
/// domain's `nx` points: what [`step_fetch_ratio`] and [`line_room`] count the units of.
struct FoldPoints<'a> {
    bx: usize,
    fx: usize,
    nx: i64,
    /// The accesses counted.
    kinds: &'a [AccessKind],
    /// Whether AoS planes count (word by word); else they are left out.
    interleaved: bool,
}

impl FoldPoints<'_> {
    /// The sectors of `s` bytes and the units of `unit` bytes (counted in sectors) the accesses
    /// touch in windows of `n` consecutive x-fold points (cyclically, from every start), summed
    /// over the windows, a few rows and `tiles(plane)` tiles per row.
    fn covered(
        &self,
        planes: &[Plane],
        acc: &[PlaneAccess],
        n: usize,
        tiles: &impl Fn(&Plane) -> i64,
        s: i64,
        unit: i64,
    ) -> (f64, f64) {
        let (fx, bx, nx) = (self.fx.max(1), self.bx as i64, self.nx);
        let tx = bx * fx as i64;
        let (mut sectors, mut units) = (0.0, 0.0);
        let mut iv: Vec<(i64, i64)> = Vec::new();
        for (pi, pl) in planes.iter().enumerate() {
            if pl.interleaved() && !self.interleaved {
                continue;
            }
            let tiles = tiles(pl);
            for &kind in self.kinds {
                // (y, z) offset, x offset, component.
                let mut rows: Vec<((i64, i64), i64, i64)> = acc
                    .iter()
                    .filter(|a| a.plane == pi && a.kind == kind)
                    .map(|a| ((a.off[1], a.off[2]), a.off[0], a.comp))
                    .collect();
                rows.sort_unstable();
                rows.dedup();
                for row in rows.chunk_by(|a, b| a.0 == b.0) {
                    let (dy, dz) = row[0].0;
                    for (y, z) in [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1)] {
                        let base = pl.row_base(y + dy, z + dz);
                        for i0 in 0..fx {
                            iv.clear();
                            for i in (i0..i0 + n).map(|i| (i % fx) as i64) {
                                for &(_, dx, comp) in row {
                                    for tile in 0..tiles {
                                        // The fold point's points within the domain.
                                        let x0 = (tile * tx + i * bx).min(nx);
                                        let x1 = x0.saturating_add(bx).min(nx);
                                        if !pl.interleaved() {
                                            if x1 > x0 {
                                                let lo = base + (x0 + dx) * pl.elem;
                                                iv.push((lo, lo + (x1 - x0) * pl.elem));
                                            }
                                            continue;
                                        }
                                        for x in x0..x1 {
                                            let lo = base + (x + dx) * pl.pitch + comp * pl.elem;
                                            iv.push((lo, lo + pl.elem));
                                        }
                                    }
                                }
                            }
                            sectors += units_covered(&mut iv, s) as f64;
                            units += (units_covered(&mut iv, unit) * (unit / s)) as f64;
                        }
                    }
                }
            }
        }
        (sectors, units)
    }
}

/// Distinct aligned units of `unit` bytes the byte intervals `[lo, hi)` touch (sorts `iv`).
fn units_covered(iv: &mut [(i64, i64)], unit: i64) -> i64 {
    iv.sort_unstable();
    let (mut n, mut last) = (0, i64::MIN);
    for &(lo, hi) in iv.iter() {
        let (first, end) = (lo.div_euclid(unit), (hi - 1).div_euclid(unit));
        let from = first.max(last + 1);
        if end >= from {
            n += end - from + 1;
            last = end;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::{
        conflict_evictions, conflict_free_fill, conflict_survival, fill_window, LaunchWindow,
    };

    #[test]
    fn a_launch_window_holds_the_stream_less_the_links_inside() {
        // 10 steps of 5 sectors per block, waves of 4 blocks; links of 2 and 6 steps, 3 and 1
        // sectors per block. A window of `len` steps streams 2 · len sectors of the wave, less
        // each link in `len - λ` of 10 steps times the wave's blocks.
        let w = LaunchWindow::new(vec![(6.0, 1.0), (2.0, 3.0)], 50.0, 10, 4.0);
        assert!((w.distance(1.0) - 20.0).abs() < 1e-12);
        assert!((w.distance(4.0) - (80.0 - 0.4 * 3.0 * 2.0)).abs() < 1e-12);
        assert!((w.distance(8.0) - (160.0 - 0.4 * (3.0 * 6.0 + 2.0))).abs() < 1e-12);
        assert_eq!(w.distance(-1.0), 0.0);
    }

    #[test]
    fn fill_window_interpolates_between_whole_steps() {
        let ws = [0.0, 100.0, 150.0, 180.0, 200.0];
        assert_eq!(fill_window(&ws, 50.0), 0.5);
        assert_eq!(fill_window(&ws, 100.0), 1.0);
        assert_eq!(fill_window(&ws, 165.0), 2.5);
        assert_eq!(fill_window(&ws, 200.0), 4.0);
        // A share no window fills: nothing is evicted.
        assert_eq!(fill_window(&ws, 201.0), f64::INFINITY);
        assert_eq!(fill_window(&[0.0, 0.0, 0.0], 1.0), f64::INFINITY);
    }

    #[test]
    fn set_conflicts_lie_between_random_replacement_and_lru() {
        // One way: a line survives as under random replacement, e^-fill.
        for fill in [0.1, 0.5, 1.0, 2.0] {
            assert!((conflict_survival(fill, 1) - (-fill).exp()).abs() < 1e-12);
        }
        // Many ways: LRU's step at a full L1.
        assert!(conflict_survival(0.8, 1024) > 0.999);
        assert!(conflict_survival(1.2, 1024) < 0.001);
        // 4 ways, the probe's layer pitch on the H100 (hit 0.96, 0.88, 0.77 at 0.25, 0.4, 0.55).
        let four: Vec<f64> = [0.25, 0.4, 0.55]
            .iter()
            .map(|&f| conflict_survival(f, 4))
            .collect();
        assert!(
            (four[0] - 0.981).abs() < 1e-3 && (four[2] - 0.819).abs() < 1e-3,
            "{four:?}"
        );
        // Below the conflict-free fill fewer than 1 line in 1,000 is lost.
        assert_eq!(conflict_free_fill(0), 1.0);
        let f = conflict_free_fill(4);
        assert!(f > 0.1 && f < 0.2, "{f}");
        assert!(conflict_survival(f, 4) >= 0.999 && conflict_survival(f * 1.1, 4) < 0.999);
    }

    #[test]
    fn conflict_evictions_grow_with_the_gap_and_skip_absent_gaps() {
        let ws = [0.0, 100.0, 150.0, 180.0, 200.0];
        let gaps = [0.0, 1.0, 0.0, 1.0, 1.0];
        let mut evict = Vec::new();
        conflict_evictions(&ws, &gaps, 400.0, 4, &mut evict);
        assert_eq!(evict.len(), ws.len());
        assert_eq!((evict[0], evict[2]), (0.0, 0.0));
        assert!(
            evict[1] > 0.0 && evict[1] < evict[3] && evict[3] < evict[4],
            "{evict:?}"
        );
        // A share far above every window's working set loses almost nothing.
        conflict_evictions(&ws, &gaps, 1e6, 4, &mut evict);
        assert!(evict.iter().all(|&e| e < 1e-6), "{evict:?}");
    }
}
