//! Row statistics of one representative block: when each of its sectors is touched, how long L1
//! lines wait between touches, and which earlier block last touched the same sectors.
//!
//! Rows are independent in everything counted here, so a block is processed row by row: the
//! accesses to one row are a few *touches* (an instruction at a fold point covers an x-range of
//! the row), at known steps of the block's run (fold point by fold point, instruction by
//! instruction, as the emitted code issues them). Per row, small arrays over its lines and sectors
//! record the last step each line was touched (the reuse gap, for the L1 model) and the first step
//! each sector was touched (when the block brings it into L2, for the L2 model). Blocks with many
//! rows are represented by a stratified sample of rows (every region of the footprint, spread
//! over its rows), each weighted by the rows it stands for.

use super::geometry::{ElemBox, IntHasher, Plane, PlaneAccess};
use crate::ir::AccessKind;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const NONE: u32 = u32::MAX;
/// Positions of the representative block within its wave at which links are sampled.
const POSITIONS: usize = 4;
/// Rows on which links are found, at most (a systematic subsample of the sampled rows). 64: on
/// the 512³ star3d_r4 tiles the DRAM load is then within 12 % of what 1024 rows give; with 32 it
/// was up to 31 % off, with whichever rows' links across waves the sample caught
/// (`bench/prototypes/README.md`, "Fewer sampled rows").
pub(crate) const LINK_ROWS: usize = 64;
/// Entries of the caches of write pairs last found (by earlier step and own position).
const RECENT_PAIRS: usize = 256;
/// The patterns of first steps kept between configurations are forgotten beyond these sectors.
const MAX_PATTERN_SECTORS: usize = 1 << 22;

/// Position and valid extent of a block, in lattice points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockAt {
    /// First point of the tile.
    pub origin: [i64; 3],
    /// Valid extent (partial at the grid's end).
    pub ext: [i64; 3],
}

/// The grid of blocks: where each block is and when it is launched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grid {
    /// Blocks per axis.
    pub blocks: [i64; 3],
    /// Tile per axis.
    pub tile: [i64; 3],
    /// Domain extent per axis.
    pub domain: [i64; 3],
}

impl Grid {
    /// Position and valid extent of block `b`.
    pub fn at(&self, b: [i64; 3]) -> BlockAt {
        let origin = std::array::from_fn(|d| b[d] * self.tile[d]);
        BlockAt {
            origin,
            ext: std::array::from_fn(|d| self.tile[d].min(self.domain[d] - origin[d])),
        }
    }

    /// Launch index of block `b`.
    pub fn id(&self, b: [i64; 3]) -> i64 {
        b[0] + self.blocks[0] * (b[1] + self.blocks[1] * b[2])
    }

    /// The block along axis `d` holding point `v` (a shift where the tile is a power of two, as
    /// in the enumerated space: this is in the inner loops of the link search).
    #[inline]
    fn block_along(&self, d: usize, v: i64) -> i64 {
        floor_div(v, self.tile[d])
    }

    /// The blocks along x (first, last; a block of margin each side) whose accesses, at offsets
    /// `reach` along x, can touch points `xlo..=xhi` of a row.
    fn blocks_reaching(&self, xlo: i64, xhi: i64, reach: (i64, i64)) -> (i64, i64) {
        (
            (floor_div(xlo - reach.1, self.tile[0]) - 1).max(0),
            (floor_div(xhi - reach.0, self.tile[0]) + 1).min(self.blocks[0] - 1),
        )
    }
}

/// Sectors whose previous access in time (by any block) lay `m` waves of steps and the steps
/// from `then` to `now` before the representative block's access at step `now` (for a link
/// found at the blocks' launch times, the nearest whole step: [`Clock::lockstep`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Link {
    /// Whole waves (block durations) between the two accesses, less the steps from `then` to
    /// `now`.
    pub m: u32,
    /// Step of the previous access in its block's run.
    pub then: u32,
    /// Step of this access.
    pub now: u32,
    /// Share of the wave's blocks issuing step `then` after the previous access.
    pub rest: f32,
    /// Share of the wave's blocks issuing step `now` before this access.
    pub part: f32,
    /// Sectors (weighted).
    pub sectors: f64,
}

impl Link {
    /// Steps of a block's run between the two accesses (whole waves of `steps` each, and the
    /// share of a step the wave's issue order puts between accesses at one step).
    pub fn steps_apart(&self, steps: usize) -> f64 {
        f64::from(self.m) * steps as f64 + f64::from(self.now) - f64::from(self.then)
            + f64::from(self.rest + self.part)
            - 1.0
    }
}

/// What makes links of the same class within a configuration: the previous access's time (launch
/// time, step, issue position, as [`Clock`] packs them), this access's step and its issue
/// position (all of [`Link`] but its sectors follows from these).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
struct LinkClass {
    then: i64,
    now: u32,
    ord: u32,
}

impl LinkClass {
    /// No class of a link found (no previous access is at `i64::MIN`: that marks none).
    const NONE: LinkClass = LinkClass {
        then: i64::MIN,
        now: 0,
        ord: 0,
    };
}

/// Two consecutive writes of a sector the representative block writes (its share of them): if L2
/// evicts the sector in between, it is written to DRAM twice (and, being partly written, read).
pub(crate) type WritePair = Link;

/// What makes write pairs of the same class: waves apart, the two steps and the issue positions
/// of the two writers (all of [`WritePair`] but its sectors follows from these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PairClass {
    m: u32,
    then: u32,
    now: u32,
    ord_then: u32,
    ord_now: u32,
}

impl PairClass {
    /// No class (no pair is `u32::MAX` waves long).
    const NONE: PairClass = PairClass {
        m: u32::MAX,
        then: 0,
        now: 0,
        ord_then: 0,
        ord_now: 0,
    };
}

/// Floor division by a fixed positive divisor through a floating-point reciprocal and one
/// correction (exact for the magnitudes of launch offsets): a 64-bit division costs tens of
/// cycles, and the link search divides by the wave and SM counts for every neighbour.
#[derive(Debug, Clone, Copy)]
struct FloorDiv {
    d: i64,
    inv: f64,
}

impl FloorDiv {
    fn new(d: i64) -> FloorDiv {
        debug_assert!(d > 0);
        FloorDiv {
            d,
            inv: 1.0 / d as f64,
        }
    }

    /// `x.div_euclid(d)`.
    #[inline]
    fn of(&self, x: i64) -> i64 {
        // Truncated (no call to `floor`), so one or two steps off for negative `x`.
        let mut q = (x as f64 * self.inv) as i64;
        while q * self.d > x {
            q -= 1;
        }
        while (q + 1) * self.d <= x {
            q += 1;
        }
        debug_assert_eq!(q, x.div_euclid(self.d));
        q
    }
}

/// Where the blocks of a wave issue each step: SM by SM, an SM's blocks in launch order (the
/// order of the cache simulator).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Issue {
    /// Blocks per wave.
    pub wave: i64,
    /// SMs.
    pub sms: i64,
    /// Blocks per SM in a wave, rounded up (kept: it is needed per neighbour in the link search).
    per_sm: i64,
    /// Division by `wave` and by `sms`.
    by_wave: FloorDiv,
    by_sms: FloorDiv,
}

impl Issue {
    pub fn new(wave: i64, sms: i64) -> Issue {
        Issue {
            wave,
            sms,
            per_sm: (wave + sms - 1) / sms,
            by_wave: FloorDiv::new(wave.max(1)),
            by_sms: FloorDiv::new(sms.max(1)),
        }
    }

    /// Position in the issue order of a step of the block at position `p` of its wave.
    fn order(&self, p: i64) -> i64 {
        (p % self.sms) * self.per_sm + p / self.sms
    }

    /// The positions in its wave at which the representative block is sampled, spread over the
    /// wave in launch order (which neighbours ran in the previous wave). A block on one of the
    /// first or last SMs of its round has x-neighbours on one side only in the issue order of a
    /// step: on the first SM it precedes every wave-mate touching a sector at the same step, and
    /// so takes the links to the previous wave that they share. Where the blocks per SM are a
    /// multiple of 8 every position falls on the first SM; such positions move, within their
    /// round, to SMs spread over the round.
    fn own_positions(&self) -> [i64; POSITIONS] {
        // Target SMs in bit-reversed order, so that launch position and SM are not correlated.
        const SM_SLOT: [i64; POSITIONS] = [0, 2, 1, 3];
        let n = 2 * POSITIONS as i64;
        let margin = (self.sms / 16).max(1);
        std::array::from_fn(|j| {
            let p = (2 * j as i64 + 1) * self.wave / n;
            let sm = p % self.sms;
            if self.per_sm > 1 && (sm < margin || sm >= self.sms - margin) {
                let target = (2 * SM_SLOT[j] + 1) * self.sms / n;
                (p - sm + target).min(self.wave - 1)
            } else {
                p
            }
        })
    }
}

/// The position in its wave and the issue position of the block at launch offset `q`, kept for
/// `q`, `q + 1`, ... without a division per step (neighbours along x are consecutive launches).
#[derive(Debug, Clone, Copy)]
struct Walk {
    pos: i64,
    pos_mod_sms: i64,
    pos_div_sms: i64,
}

impl Walk {
    fn new(q: i64, issue: Issue) -> Walk {
        let wave = issue.by_wave.of(q);
        let pos = q - wave * issue.wave;
        let pos_div_sms = issue.by_sms.of(pos);
        Walk {
            pos,
            pos_mod_sms: pos - pos_div_sms * issue.sms,
            pos_div_sms,
        }
    }

    /// Moves to `q + 1`.
    fn next(&mut self, issue: Issue) {
        self.pos += 1;
        self.pos_mod_sms += 1;
        if self.pos_mod_sms == issue.sms {
            self.pos_mod_sms = 0;
            self.pos_div_sms += 1;
        }
        if self.pos == issue.wave {
            *self = Walk {
                pos: 0,
                pos_mod_sms: 0,
                pos_div_sms: 0,
            };
        }
    }

    /// `issue.order(pos)`.
    fn order(&self, issue: Issue) -> i64 {
        self.pos_mod_sms * issue.per_sm + self.pos_div_sms
    }
}

/// Entries of the cache of walks (see [`RowPass::walks_at`]).
const WALK_CACHE: usize = 64;

/// Blocks launched more than this many waves before the representative count as launched this
/// many waves before (L2 keeps nothing that long; it bounds the clock's fields).
const LAUNCH_HORIZON: i64 = 64;

/// Times of the machine's run, packed into bit fields of an `i64` so that they compare in time
/// order and unpack with shifts. Blocks start as others finish, not in lockstep waves
/// (measured: blocks a launch offset `d` apart start about `d / wave` block durations apart,
/// `bench/results/h100/counters/block-placement/`), so step `step` of the block launched `n`
/// blocks after the representative comes `n / wave + step / steps` block durations after the
/// representative's start: the time's first field is that in units of `1 / (steps · wave)`,
/// `n · steps + step · wave`; the step and the issue position (which orders a wave's blocks at
/// the same time, as they are dealt to the SMs) follow.
#[derive(Debug, Clone, Copy)]
struct Clock {
    /// Bits of the step field.
    step_bits: u32,
    /// Bits of the issue-position field.
    pos_bits: u32,
    /// Steps of a block's run.
    steps: i64,
    /// Blocks of a wave.
    wave: i64,
    /// The time field's unit, in `1 / (steps · wave)` block durations: 1 but where a block's
    /// steps are so many that the field would not fit in its bits.
    quantum: i64,
}

impl Clock {
    fn new(steps: i64, wave: i64) -> Clock {
        let bits = |n: i64| 64 - (n.max(1) - 1).leading_zeros();
        let (step_bits, pos_bits) = (bits(steps), bits(wave));
        let (steps, wave) = (steps.max(1), wave.max(1));
        // The time field holds `n · steps + step · wave` (either sign, up to the horizon and a
        // wave after it) in what the other fields leave of 62 bits.
        let room = 1i128 << 61u32.saturating_sub(step_bits + pos_bits).max(1);
        let span = i128::from(LAUNCH_HORIZON + 2) * i128::from(steps) * i128::from(wave);
        Clock {
            step_bits,
            pos_bits,
            steps,
            wave,
            quantum: i64::try_from((span + room - 1) / room)
                .unwrap_or(i64::MAX)
                .max(1),
        }
    }

    /// The time of step `step` at issue position `ord` of the block launched `n` blocks after
    /// the representative (negative: before it).
    #[inline]
    fn at(&self, n: i64, step: i64, ord: i64) -> i64 {
        let n = n.max(-LAUNCH_HORIZON * self.wave);
        let when = (n * self.steps + step * self.wave).div_euclid(self.quantum);
        self.packed(when, step, ord)
    }

    /// The time whose first field is `when` (see [`Clock`]).
    #[inline]
    fn packed(&self, when: i64, step: i64, ord: i64) -> i64 {
        (((when << self.step_bits) + step) << self.pos_bits) + ord
    }

    /// `(first field, step, issue position)` of a time.
    #[inline]
    fn parts(&self, t: i64) -> (i64, i64, i64) {
        let ws = t >> self.pos_bits;
        (
            ws >> self.step_bits,
            ws & ((1 << self.step_bits) - 1),
            t & ((1 << self.pos_bits) - 1),
        )
    }

    /// The earlier access at time `t` as the lockstep waves' windows take it: `(waves back,
    /// step, issue position)` of the access as far back from the representative's start, in
    /// block durations, as `t` (a window of whole waves and steps of the representative's run
    /// as long as the time between the two accesses; the nearest step).
    fn lockstep(&self, t: i64) -> (u32, u32, i64) {
        let (when, _, ord) = self.parts(t);
        // In steps of the representative's run (negative: before its start).
        let start = (when * self.quantum) as f64 / self.wave as f64;
        let m = (-start / self.steps as f64).ceil().max(0.0);
        let step = (start + m * self.steps as f64).round() as i64;
        if step >= self.steps {
            (m as u32 - 1, 0, ord)
        } else {
            (m as u32, step as u32, ord)
        }
    }
}

/// A re-fetch from L2 after an L1 eviction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Refetch {
    /// Step of the previous touch of the line.
    pub then: u32,
    /// Step of this touch.
    pub now: u32,
    /// Step of the block's first touch of the line.
    pub first: u32,
    /// Sectors (weighted).
    pub sectors: f64,
}

/// The launch configuration in the terms the row pass needs.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    /// Threads per block.
    pub block: [i64; 3],
    /// Fold factors.
    pub fold: [i64; 3],
    /// Instructions per point (loads and stores).
    pub slots: u32,
    /// Sector and line size.
    pub sector: i64,
    pub line: i64,
    /// Per row of a tile along y: the step base `fold[0]·f1` of the fold point covering it (a
    /// lookup: rows are mapped to fold points per access in the inner loops).
    fold_y: Vec<i64>,
    /// Per layer of a tile along z: the step base `fold[0]·fold[1]·f2`.
    fold_z: Vec<i64>,
}

impl Shape {
    /// The shape of a configuration of `block` threads folded by `fold`.
    pub fn new(block: [i64; 3], fold: [i64; 3], slots: u32, sector: i64, line: i64) -> Shape {
        let bases = |d: usize, unit: i64| -> Vec<i64> {
            (0..fold[d])
                .flat_map(|f| std::iter::repeat_n(f * unit, block[d] as usize))
                .collect()
        };
        Shape {
            block,
            fold,
            slots,
            sector,
            line,
            fold_y: bases(1, fold[0]),
            fold_z: bases(2, fold[0] * fold[1]),
        }
    }

    /// Steps of one block's run.
    pub fn steps(&self) -> usize {
        (self.fold.iter().product::<i64>() as usize) * self.slots as usize
    }
}

#[derive(Debug, Clone, Copy)]
struct Touch {
    step: u32,
    /// Linear index of the block's first thread of the touch (its thread row's `tx = 0`).
    tid0: u32,
    /// Bytes between the elements of consecutive threads along x.
    xpitch: i64,
    /// First byte (absolute).
    start: i64,
    /// Elements.
    n: i64,
    /// Bytes between elements.
    pitch: i64,
    /// Bytes per element.
    len: i64,
}

#[derive(Debug, Clone, Copy)]
struct Event {
    /// The warp (of the block) whose lane touched the line first in this touch.
    warp: u32,
    line: u32,
    step: u32,
    prev: u32,
    mask: u64,
    weight: f64,
}

/// A pattern of first steps per sector (see [`RowPass::group_first`]).
#[derive(Debug, Clone, Copy)]
struct Pattern {
    /// Range of the key in `pat_keys`.
    key: (usize, usize),
    /// Threads and fold points of a block along x.
    x_shape: (i64, i64),
    /// Valid extent along x.
    ext0: i64,
    /// Byte of the sector the block's part of the row starts at.
    res: i64,
    /// First sector, relative to the one that part starts in.
    rel: i64,
    /// Range in `grp_first`.
    start: usize,
    len: usize,
}

/// A row to process: plane, y, z and the rows it stands for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SampledRow {
    pub plane: u32,
    pub y: i64,
    pub z: i64,
    pub weight: f64,
}

/// Where the loads of the blocks before a block (along each axis) reach into its rows: rows
/// `y < y_end`, rows `z < z_end` and, on every row, points `x < x_end` (absolute). Outside them
/// the first block along an axis touches and shares sectors as an interior block does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bands {
    pub y_end: i64,
    pub z_end: i64,
    pub x_end: i64,
}

impl Bands {
    /// The bands of the block at `at` whose loads reach offsets `reach` per axis.
    pub fn of(at: &BlockAt, reach: [(i64, i64); 3]) -> Bands {
        Bands {
            x_end: at.origin[0] + reach[0].1,
            y_end: at.origin[1] + reach[1].1,
            z_end: at.origin[2] + reach[2].1,
        }
    }

    /// The bands row `r` lies in: bit 1 along y, bit 2 along z.
    fn row_bits(&self, r: &SampledRow) -> usize {
        (usize::from(r.y < self.y_end) << 1) | (usize::from(r.z < self.z_end) << 2)
    }

    /// The first sector (of `s` bytes) of the row at `base` of `plane` beyond the band along x,
    /// rounded up to a line of `line` bytes: a sector's link depends on its line's other
    /// sectors (see [`RowPass::renew_lines`]), so the band holds whole lines.
    fn x_sector_end(&self, plane: &Plane, base: i64, s: i64, line: i64) -> i64 {
        -floor_div(-(base + self.x_end * plane.pitch), line) * (line / s)
    }
}

/// Which parts of a block's rows a pass of [`RowPass::block`] processes. The parts are indexed
/// by the bands (see [`Bands`]) a first touch or link lies in: bit 0 along x (its sector), bit 1
/// along y and bit 2 along z (its row).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part {
    /// Everything.
    All,
    /// Everything, the first touches and links also kept per part (the representative block).
    Record(Bands),
    /// The first block along the axes of `first` (bits as the parts'), whose rows are the
    /// recorded block's translated: only the parts in its bands along those axes; the others
    /// are the recorded block's, scaled by `ratio` (the weights' ratio).
    Reuse {
        bands: Bands,
        first: usize,
        ratio: f64,
    },
}

/// The writes of a sector and the pairs they gave (see `RowPass::patterns`).
#[derive(Debug, Clone, Copy)]
struct SectorPattern {
    writes: (usize, usize),
    /// The steps of one store time (see [`RowPass::sector_pairs`]'s `unit`).
    unit: u32,
    writers: usize,
    pairs: (usize, usize),
    /// The sectors written so, summed over the rows (each a writer's share, as its pairs).
    weight: f64,
}

/// Parts of a block's rows (see [`Part`]).
const PARTS: usize = 8;

/// One write of a sector as [`RowPass::sector_pairs`] orders them: `(time, wave, step, issue
/// position, writer's launch offset)`.
type GroupWrite = (i64, i64, u32, i64, i64);

/// Scratch buffers and results of the row pass.
#[derive(Debug, Default)]
pub(crate) struct RowPass {
    touches: Vec<Touch>,
    /// The accesses of a row in step order (see [`touches`]).
    order: Vec<(i64, u32, u32)>,
    nb: Vec<Touch>,
    ranges: Vec<(i64, i64)>,
    lines: Vec<(i64, u64)>,
    last: Vec<u32>,
    first: Vec<u32>,
    /// First steps per sector of the patterns of [`RowPass::group_first`], one after another.
    grp_first: Vec<u32>,
    /// The patterns of this configuration, their keys one after another, and their index by
    /// the hash of the key.
    pat: Vec<Pattern>,
    pat_keys: Vec<(i64, u32)>,
    pat_index: HashMap<u64, u32, BuildHasherDefault<IntHasher>>,
    key: Vec<(i64, u32)>,
    best: Vec<Latest>,
    /// The accesses of one line's sectors per own position (see [`RowPass::renew_lines`]).
    line_times: Vec<i64>,
    /// Per step: issued loads before it (the L1 model's clock).
    load_before: Vec<u32>,
    /// Whether `load_before` follows a compiled order, not the steps' (a row's touches are then
    /// replayed through L1 in clock order, `by_clock`).
    compiled: bool,
    /// Scratch: a row's touches in clock order.
    by_clock: Vec<Touch>,
    /// Per step: whether the threads issue it (a load of an element an earlier fold point of the
    /// thread loaded is not issued: it is in a register).
    issued: Vec<bool>,
    rows_yz: Vec<(i64, i64)>,
    /// The loads landing on a row: their block (index in `yz_blocks`) and index in `acc`.
    yz_acc: Vec<(u32, u32)>,
    /// The distinct blocks (along y and z) of `yz_acc`, in order of first appearance.
    yz_blocks: Vec<(i64, i64)>,
    /// Where each block's loads end in `group_acc`.
    yz_ends: Vec<usize>,
    /// The loads of `yz_acc` grouped by block, in `acc` order within each block.
    group_acc: Vec<PlaneAccess>,
    events: Vec<Event>,
    ever: Vec<u64>,
    present: Vec<u64>,
    line_count: usize,
    /// Line touches by reuse gap in steps (index = gap).
    pub gaps: Vec<f64>,
    /// Lines touched (first touches).
    pub lines_touched: f64,
    /// Sectors first touched, per step.
    pub first_touch: Vec<f64>,
    /// Links found, one per class (wave distance, steps and shares of the wave), in order of
    /// first appearance, each link's sectors added as it is found.
    pub links: Vec<Link>,
    /// Their weighted sectors, summed in the order found.
    pub linked: f64,
    /// Per step, per link (parallel to `links`) and in all, the sectors of the recorded block
    /// (see [`Part::Record`]) by part.
    first_parts: Vec<[f64; PARTS]>,
    link_parts: Vec<[f64; PARTS]>,
    linked_parts: [f64; PARTS],
    /// Index in `links` of each class.
    link_index: HashMap<LinkClass, usize, BuildHasherDefault<IntHasher>>,
    /// Per own position, the class of its last link and its index in `links`: the next sector's
    /// link is often of the same class.
    recent: [(LinkClass, usize); POSITIONS],
    /// Consecutive writes found by [`RowPass::writes`], one per class.
    pub write_pairs: Vec<WritePair>,
    /// Per pair of `write_pairs`, the sectors of its pairs whose two pieces two blocks write at
    /// one store time, of sectors all of whose pieces go out at one store time (one step; in
    /// AoS records one fold point): each sector once, shared among its pairs of two blocks (see
    /// `BlockScratch::pairs_written_early`).
    pub write_pairs_across: Vec<f64>,
    /// Sectors written in three or more pieces: the sectors (weighted as their pairs) and the
    /// range in `chain_pairs` of their consecutive pairs' indices in `write_pairs`, in time
    /// order. A sector L2 evicts partly written is filled before it is written back, once per
    /// partly written piece of it, not twice per pair (see `BlockScratch::run`).
    pub chains: Vec<(f64, u32, u32)>,
    pub chain_pairs: Vec<u32>,
    /// Per pair of `own_pairs`, its index in `write_pairs` at each own position.
    own_at: Vec<[u32; POSITIONS]>,
    /// Patterns whose hash another pattern of `patterns` holds: their weight is final.
    shadowed: Vec<SectorPattern>,
    /// Index in `write_pairs` of each class.
    pair_index: HashMap<PairClass, usize, BuildHasherDefault<IntHasher>>,
    /// The class last found per earlier step and own position (modulo [`RECENT_PAIRS`]), and
    /// its index.
    recent_pairs: Vec<(PairClass, usize)>,
    /// Pairs of consecutive writes of sectors the block alone writes, `(then, now, sectors)`
    /// for every own position alike; their index by steps and the last found per `then`.
    own_pairs: Vec<(u32, u32, f64)>,
    own_index: HashMap<(u32, u32), usize, BuildHasherDefault<IntHasher>>,
    recent_own: Vec<(u32, u32, usize)>,
    /// The pairs a sector's writes gave, by the writes `(step, writer)` in the order bucketed
    /// (sectors written alike recur along a row and from row to row): the hash of the writes to
    /// their range in `pattern_writes`, their writers (0: the block alone) and the range in
    /// `pattern_pairs` of the indices of their pairs (in `own_pairs` for the block alone, else
    /// in `write_pairs`), in the order the sectors were added. For this configuration's
    /// `writes`.
    patterns: HashMap<u64, SectorPattern, BuildHasherDefault<IntHasher>>,
    pattern_writes: Vec<(u32, i64)>,
    pattern_pairs: Vec<u32>,
    /// Per entry of `pattern_pairs`, the share of a sector its pair adds to
    /// `write_pairs_across` (0 where its pieces are not two blocks' at one store time).
    pattern_across: Vec<f32>,
    /// The writes of a row's sectors, `(sector, step, writer's launch offset)`, and the same
    /// bucketed by sector (`bucket` holds where each sector's writes end).
    writes: Vec<(i64, u32, i64)>,
    by_sector: Vec<(i64, u32, i64)>,
    bucket: Vec<usize>,
    /// One sector's writes at an own position: `(time, wave, step, issue position, writer's
    /// launch offset)`.
    group: Vec<GroupWrite>,
    /// The distinct writers (launch offsets) of one sector.
    deltas: Vec<i64>,
    /// Re-fetches found by [`RowPass::refetches`].
    pub refetched: Vec<Refetch>,
    /// Per line of the sampled rows, the step of its first touch (see [`RowPass::refetches`]).
    first_of: Vec<u32>,
    /// Per line: the warp of its last touch.
    warp_of: Vec<u32>,
    /// Threads per warp (which warp of the block a lane is in).
    pub warp_size: usize,
    /// Sectors first touched per step (index), and re-fetched per (first step, step), as
    /// [`RowPass::refetches`] finds them: what [`RowPass::last_seen_steps`] is made of.
    first_sectors: Vec<f64>,
    refetched_since: HashMap<(u32, u32), f64, BuildHasherDefault<IntHasher>>,
    /// Per step of a first touch, the step L2 last sees the sector at (its block's last
    /// re-fetch of it, as expected); empty: the first touch itself. Set by the caller for the
    /// link search (see [`RowPass::last_seen_steps`]).
    pub last_seen: Vec<u32>,
    /// Per step of a first touch: the sectors first touched, those whose previous access is an
    /// earlier-launched block's at the same step (a neighbour that touches them as this block
    /// does), and those times the steps between the two (see [`RowPass::mirrored`]).
    mirror: Vec<[f64; 3]>,
    /// Whether [`RowPass::block`] leaves out the link search and the first touches (a pass for
    /// L1's statistics only).
    pub skip_links: bool,
    /// The walks of the sampled own positions to neighbours at a launch distance, in
    /// [`WALK_CACHE`] slots by a hash of the distance, tagged with the call of
    /// [`RowPass::block`] and the distance: each costs divisions, and the rows of a block meet
    /// the same neighbours.
    walk_cache: Vec<(u64, i64, [Walk; POSITIONS])>,
    /// The calls of [`RowPass::block`] so far (the tag of the walk cache).
    block_calls: u64,
    /// The sampled own positions of the block in its wave, and their issue positions.
    own_pos: [i64; POSITIONS],
    own_ord: [i64; POSITIONS],
}

/// The touch of access `a` at fold point `f0` along x of the row at `base`, whose fold points
/// along y and z give step base `fp` (`f0` is added); `None` past the block's valid extent.
#[inline]
fn touch_at(
    plane: &Plane,
    a: &PlaneAccess,
    at: &BlockAt,
    sh: &Shape,
    base: i64,
    fp: i64,
    f0: i64,
) -> Option<Touch> {
    let b0 = sh.block[0];
    let xa = f0 * b0;
    if xa >= at.ext[0] {
        return None;
    }
    let xb = (xa + b0).min(at.ext[0]);
    let x0 = at.origin[0] + xa + a.off[0];
    let step = (fp + f0) as u32 * sh.slots + a.slot;
    let start = base + x0 * plane.pitch + a.comp * plane.elem;
    Some(if plane.interleaved() {
        Touch {
            step,
            tid0: 0,
            xpitch: plane.pitch,
            start,
            n: xb - xa,
            pitch: plane.pitch,
            len: plane.elem,
        }
    } else {
        Touch {
            step,
            tid0: 0,
            xpitch: plane.pitch,
            start,
            n: 1,
            pitch: 0,
            len: (xb - xa) * plane.pitch,
        }
    })
}

/// The accesses of `acc` to plane `pi` that block `at` makes on row `(y, z)`, as
/// `(step of fold point (0, f1, f2) without the slot, slot, index in acc)` into `out`.
#[allow(clippy::too_many_arguments)]
fn row_accesses(
    out: &mut Vec<(i64, u32, u32)>,
    pi: usize,
    acc: &[PlaneAccess],
    at: &BlockAt,
    sh: &Shape,
    y: i64,
    z: i64,
) {
    out.clear();
    for (i, a) in acc.iter().enumerate() {
        if a.plane != pi {
            continue;
        }
        let t1 = y - at.origin[1] - a.off[1];
        let t2 = z - at.origin[2] - a.off[2];
        if t1 < 0 || t1 >= at.ext[1] || t2 < 0 || t2 >= at.ext[2] {
            continue;
        }
        let fp = sh.fold_y[t1 as usize] + sh.fold_z[t2 as usize];
        out.push((fp, a.slot, i as u32));
    }
}

/// Builds the touches of row `r` (of `plane`) by the block `at` into `out`, in step order if
/// `sorted`; `acc` holds the accesses (those of other planes are skipped), `order` is scratch.
///
/// The step order is generated, not sorted: the accesses are ordered by (fold point along y and
/// z, slot), a few dozen at most; those of one such fold point are issued fold point by fold
/// point along x, and different ones are whole rows of fold points apart. Steps are distinct (one
/// access per slot), so the order is the sorted one.
#[allow(clippy::too_many_arguments)]
fn touches(
    out: &mut Vec<Touch>,
    order: &mut Vec<(i64, u32, u32)>,
    plane: &Plane,
    acc: &[PlaneAccess],
    at: &BlockAt,
    sh: &Shape,
    r: &SampledRow,
    sorted: bool,
) {
    row_accesses(order, r.plane as usize, acc, at, sh, r.y, r.z);
    if sorted {
        order.sort_unstable();
    }
    touches_of(out, order, plane, acc, at, sh, r);
}

/// The touches of the accesses `order` of row `r` (as [`row_accesses`] gives them, with `acc`)
/// by the block `at` into `out`: those of one fold point along y and z (consecutive in `order`)
/// fold point by fold point along x.
fn touches_of(
    out: &mut Vec<Touch>,
    order: &[(i64, u32, u32)],
    plane: &Plane,
    acc: &[PlaneAccess],
    at: &BlockAt,
    sh: &Shape,
    r: &SampledRow,
) {
    out.clear();
    let base = plane.row_base(r.y, r.z);
    let mut i = 0;
    while i < order.len() {
        let fp = order[i].0;
        let mut e = i + 1;
        while e < order.len() && order[e].0 == fp {
            e += 1;
        }
        for f0 in 0..sh.fold[0] {
            if f0 * sh.block[0] >= at.ext[0] {
                break;
            }
            for &(_, _, ai) in &order[i..e] {
                let a = &acc[ai as usize];
                // Fold points are strided by the block: tile row `t = f·block + thread`.
                let ty = (r.y - at.origin[1] - a.off[1]).rem_euclid(sh.block[1]);
                let tz = (r.z - at.origin[2] - a.off[2]).rem_euclid(sh.block[2]);
                let tid0 = (sh.block[0] * (ty + sh.block[1] * tz)) as u32;
                let mut t =
                    touch_at(plane, a, at, sh, base, fp, f0).expect("inside the valid extent");
                t.tid0 = tid0;
                out.push(t);
            }
        }
        i = e;
    }
}

/// `x.div_euclid(d)` for a power of two `d` (sector and line sizes): a shift, not a division.
#[inline]
fn div_pow2(x: i64, d: i64) -> i64 {
    debug_assert!(d > 0 && d.count_ones() == 1);
    x >> d.trailing_zeros()
}

/// `a.div_euclid(b)` for `b > 0`: a shift where `b` is a power of two (tiles, element pitches and
/// sector counts mostly are; a 64-bit division costs tens of cycles in the link search's loops).
#[inline]
fn floor_div(a: i64, b: i64) -> i64 {
    if b & (b - 1) == 0 {
        a >> b.trailing_zeros()
    } else {
        a.div_euclid(b)
    }
}

/// The time offsets, per sampled own position, of a neighbour (`when`).
#[derive(Debug, Clone, Copy)]
struct Offsets {
    clock: Clock,
    when: [i64; POSITIONS],
}

/// Per sector of a row and own position: the own first touch's time (`i64::MIN` where the
/// sector is not touched: nothing is earlier) and the latest earlier access found so far.
#[derive(Debug, Clone, Copy)]
struct Latest {
    me: [i64; POSITIONS],
    best: [i64; POSITIONS],
}

/// Keeps in `l` the latest time before the own first touch among those so far and a
/// neighbour's first touch at step `then` (`NONE`: untouched), whose time offsets per own
/// position are `nt.when`.
#[inline]
fn keep_latest(l: &mut Latest, then: u32, nt: &Offsets) {
    if then == NONE {
        return;
    }
    let then = nt.clock.at(0, then as i64, 0);
    // Branch-free (a conditional move): which neighbour is later is not predictable.
    for j in 0..POSITIONS {
        let t = then + nt.when[j];
        let earlier = if t < l.me[j] { t } else { i64::MIN };
        l.best[j] = l.best[j].max(earlier);
    }
}

/// As [`keep_latest`] for a neighbour whose first touch at step `then` L2 last sees at step
/// `seen` (its re-fetch), where that is still before this block's touch; else at `then`.
fn keep_latest_seen(l: &mut Latest, then: u32, seen: u32, nt: &Offsets) {
    let (first, last) = (
        nt.clock.at(0, then as i64, 0),
        nt.clock.at(0, seen as i64, 0),
    );
    for j in 0..POSITIONS {
        let (a, b) = (last + nt.when[j], first + nt.when[j]);
        let t = if a < l.me[j] { a } else { b };
        let earlier = if t < l.me[j] { t } else { i64::MIN };
        l.best[j] = l.best[j].max(earlier);
    }
}

/// The lines of a row's range (`ns` sectors from sector `s0`, `spl` sectors to a line), each as
/// its sectors `lo..hi` in the range, in order.
fn line_spans(s0: i64, ns: usize, spl: i64) -> impl Iterator<Item = (usize, usize)> {
    let mut lo = 0;
    std::iter::from_fn(move || {
        (lo < ns).then(|| {
            let line = (s0 + lo as i64).div_euclid(spl);
            let hi = (((line + 1) * spl - s0) as usize).min(ns);
            let span = (lo, hi);
            lo = hi;
            span
        })
    })
}

/// Sector ranges `[first, last]` of a touch, in increasing order, into `out`.
fn sector_ranges(t: &Touch, s: i64, out: &mut Vec<(i64, i64)>) {
    sector_ranges_of(t, s, 0, t.n - 1, out);
}

/// The sector ranges of a touch (as [`sector_ranges`]) that reach into the sectors `lo..=hi`,
/// found without visiting the touch's elements outside them.
fn sector_ranges_within(t: &Touch, s: i64, lo: i64, hi: i64, out: &mut Vec<(i64, i64)>) {
    let (a, b) = (lo * s, (hi + 1) * s);
    // Element k spans bytes [start + k·pitch, start + k·pitch + len).
    let (k_lo, k_hi) = if t.n == 1 {
        (0, 0)
    } else {
        (
            (floor_div(a - t.start - t.len, t.pitch) + 1).max(0),
            floor_div(b - t.start - 1, t.pitch).min(t.n - 1),
        )
    };
    sector_ranges_of(t, s, k_lo, k_hi, out);
    if t.n == 1 && !out.is_empty() && (out[0].1 < lo || out[0].0 > hi) {
        out.clear();
    }
}

/// The sector ranges of elements `k_lo..=k_hi` of a touch (none where the range is empty).
fn sector_ranges_of(t: &Touch, s: i64, k_lo: i64, k_hi: i64, out: &mut Vec<(i64, i64)>) {
    out.clear();
    if t.n == 1 {
        out.push((div_pow2(t.start, s), div_pow2(t.start + t.len - 1, s)));
        return;
    }
    for k in k_lo..=k_hi {
        let a = t.start + k * t.pitch;
        let (f, l) = (div_pow2(a, s), div_pow2(a + t.len - 1, s));
        match out.last_mut() {
            Some(r) if f <= r.1 + 1 => r.1 = r.1.max(l),
            _ => out.push((f, l)),
        }
    }
}

impl RowPass {
    /// Sets which slots of a point's instructions are loads (L1 time counts loads only: stores
    /// allocate no L1 lines) and, per step, whether it is issued; with `compiled` (the issued
    /// `(fold point, slot)` steps in the compiled code's order, see
    /// [`MemoryProgram::with_compiled_order`](super::MemoryProgram::with_compiled_order)) L1's
    /// clock follows that order rather than the steps'.
    pub fn set_loads(
        &mut self,
        is_load: &[bool],
        issued: &[bool],
        compiled: Option<&[(usize, usize)]>,
    ) {
        self.load_before.clear();
        self.issued.clear();
        self.issued.extend_from_slice(issued);
        let slots = is_load.len();
        let mut n = 0;
        match compiled {
            None => {
                for (k, i) in issued.iter().enumerate() {
                    self.load_before.push(n);
                    n += u32::from(*i && is_load[k % slots]);
                }
            }
            Some(order) => {
                // Steps the thread does not issue are never touched; their clock is unused.
                self.load_before.resize(issued.len(), 0);
                for &(f, slot) in order {
                    self.load_before[f * slots + slot] = n;
                    n += u32::from(is_load[slot]);
                }
            }
        }
        self.load_before.push(n);
        self.compiled = compiled.is_some();
    }

    /// Records the sectors of `self.ranges` (a touch at `step` of the row whose first sector is
    /// `s0`) that no earlier touch reached as first touched at `step`, weighted `w`: with
    /// `x_only` those below `band_end` only; with `record` also by part (`row_bits`).
    #[inline]
    fn first_touches(
        &mut self,
        step: u32,
        s0: i64,
        w: f64,
        (x_only, band_end): (bool, i64),
        record: bool,
        row_bits: usize,
    ) {
        for &(f, l) in &self.ranges {
            for x in f..=l {
                let k = (x - s0) as usize;
                if self.first[k] == NONE {
                    self.first[k] = step;
                    if x_only && x >= band_end {
                        continue;
                    }
                    self.first_touch[step as usize] += w;
                    if record {
                        let part = row_bits | usize::from(x < band_end);
                        self.first_parts[step as usize][part] += w;
                    }
                }
            }
        }
    }

    /// The loads a thread issues up to and including its first fold point's last one: the
    /// first fold point's loads in the emitted order; in a compiled order, which interleaves the
    /// next fold points' loads with them, those too.
    pub fn first_burst_loads(&self, is_load: &[bool]) -> u32 {
        (0..is_load.len())
            .filter(|&n| is_load[n] && self.issued.get(n) == Some(&true))
            .map(|n| self.load_before[n] + 1)
            .max()
            .unwrap_or(0)
    }

    /// The store steps a block issues after each number of its loads: entry `c` counts the
    /// stores issued after exactly `c` loads (between load `c - 1` and load `c`).
    pub fn stores_after_loads(&self, is_load: &[bool], out: &mut Vec<f64>) {
        let slots = is_load.len().max(1);
        out.clear();
        out.resize(self.load_steps() + 1, 0.0);
        for (k, &i) in self.issued.iter().enumerate() {
            if i && !is_load[k % slots] {
                let c = (self.load_before[k] as usize).min(out.len() - 1);
                out[c] += 1.0;
            }
        }
    }

    /// Load steps of a block's run (at least 1).
    pub fn load_steps(&self) -> usize {
        self.load_before.last().map_or(1, |n| (*n as usize).max(1))
    }

    /// Loads issued before `step` in a block's run.
    fn load_step(&self, step: u32) -> u32 {
        self.load_before[step as usize]
    }

    /// Clears the results.
    pub fn reset(&mut self, steps: usize) {
        self.gaps.clear();
        self.gaps.resize(steps + 1, 0.0);
        self.first_touch.clear();
        self.first_touch.resize(steps, 0.0);
        self.mirror.clear();
        self.mirror.resize(steps, [0.0; 3]);
        self.lines_touched = 0.0;
        self.links.clear();
        self.linked = 0.0;
        self.first_parts.clear();
        self.link_parts.clear();
        self.linked_parts = [0.0; PARTS];
        self.link_index.clear();
        self.recent = [(LinkClass::NONE, 0); POSITIONS];
        self.write_pairs.clear();
        self.write_pairs_across.clear();
        self.chains.clear();
        self.chain_pairs.clear();
        self.pair_index.clear();
        self.recent_pairs.clear();
        self.recent_pairs.resize(RECENT_PAIRS, (PairClass::NONE, 0));
        self.refetched.clear();
        self.first_sectors.clear();
        self.refetched_since.clear();
        self.events.clear();
        self.line_count = 0;
        if self.grp_first.len() > MAX_PATTERN_SECTORS {
            self.forget_patterns();
        }
    }

    /// Forgets the patterns of [`RowPass::group_first`] (kept from one configuration to the
    /// next while the kernel, domain and sector size are the same).
    pub fn forget_patterns(&mut self) {
        self.grp_first.clear();
        self.pat.clear();
        self.pat_keys.clear();
        self.pat_index.clear();
    }

    /// Processes the sampled rows of block `me` of `grid`: first touches and L1 gaps (when
    /// `l1`), and links to the previous accesses of their sectors by other blocks, all weighted
    /// by `weight`. `reach` is the smallest and largest load offset per axis. With `links` =
    /// `(of, i)` the block is one of `of` blocks sharing the link rows (every `of`-th, from the
    /// `i`-th), each standing for the rows of all `of`. `part` says which parts of the rows are
    /// processed and kept (see [`Part`]).
    #[allow(clippy::too_many_arguments)]
    pub fn block(
        &mut self,
        planes: &[Plane],
        acc: &[PlaneAccess],
        sh: &Shape,
        grid: &Grid,
        me: [i64; 3],
        reach: [(i64, i64); 3],
        rows: &[SampledRow],
        issue: Issue,
        l1: bool,
        links: (usize, usize),
        weight: f64,
        part: Part,
    ) {
        let at = &grid.at(me);
        let (s, line) = (sh.sector, sh.line);
        self.block_calls += 1;
        self.own_pos = issue.own_positions();
        self.own_ord = self.own_pos.map(|p| issue.order(p));
        if self.walk_cache.is_empty() {
            let none = Walk::new(0, issue);
            self.walk_cache
                .resize(WALK_CACHE, (0, 0, [none; POSITIONS]));
        }
        if let Part::Record(_) = part {
            self.first_parts.clear();
            self.first_parts
                .resize(self.first_touch.len(), [0.0; PARTS]);
        }
        let spl = line / s;
        // Links are found on every `stride`-th row, each standing for `stride` rows; where
        // several blocks share them, in groups of `of` such rows, on the `i`-th of each group.
        let stride = rows.len().div_ceil(LINK_ROWS).max(1);
        let (of, i) = if rows.len() >= links.0 * stride {
            links
        } else {
            (1, 0)
        };
        let group = of * stride;
        // The weight of the rows a link row stands for.
        let group_weight = |ri: usize| {
            let start = ri - i * stride;
            weight
                * rows[start..(start + group).min(rows.len())]
                    .iter()
                    .map(|r| r.weight)
                    .sum::<f64>()
        };
        for (ri, r) in rows.iter().enumerate() {
            let link = ri % group == i * stride;
            // Without L1 statistics, a block sharing the link rows counts the first touches of
            // its link rows only (the others' rows are its share of the sample).
            let first_weight = if l1 || of == 1 {
                r.weight * weight
            } else if link {
                group_weight(ri)
            } else {
                continue;
            };
            let pi = r.plane as usize;
            let plane = &planes[pi];
            // The row's parts: `row_bits` its bands; sectors below `band_end` (a sector, not a
            // point as `Bands::x_end`) lie in the band along x; with `x_only`, only those are
            // processed (the rest of the row is reused).
            let (mut row_bits, mut band_end, mut x_only, mut record) = (0, i64::MIN, false, false);
            match part {
                Part::All => {}
                Part::Record(bands) => {
                    row_bits = bands.row_bits(r);
                    band_end = bands.x_sector_end(plane, plane.row_base(r.y, r.z), s, line);
                    record = true;
                }
                Part::Reuse { bands, first, .. } => {
                    row_bits = bands.row_bits(r);
                    if row_bits & first == 0 {
                        if first & 1 == 0 {
                            continue;
                        }
                        band_end = bands.x_sector_end(plane, plane.row_base(r.y, r.z), s, line);
                        x_only = true;
                    }
                }
            }
            let mut own = std::mem::take(&mut self.touches);
            touches(&mut own, &mut self.order, plane, acc, at, sh, r, true);
            own.retain(|t| self.issued[t.step as usize]);
            if own.is_empty() {
                self.touches = own;
                continue;
            }
            let (mut lo, mut hi) = (i64::MAX, i64::MIN);
            for t in &own {
                lo = lo.min(t.start);
                hi = hi.max(t.start + (t.n - 1) * t.pitch + t.len);
            }
            // Sectors and lines of the row, indexed from the row's first line.
            let l0 = div_pow2(lo, line);
            let s0 = l0 * spl;
            let nl = (div_pow2(hi - 1, line) - l0 + 1) as usize;
            let ns = nl * spl as usize;
            self.first.clear();
            self.first.resize(ns, NONE);
            self.last.clear();
            self.last.resize(nl, NONE);
            let w = first_weight;
            let row_line0 = self.line_count;
            if l1 {
                self.line_count += nl;
            }
            // L1 sees a row's touches in the order they are issued; first touches and links
            // keep the order of the block's steps.
            let clocked = self.compiled && l1;
            let mut by_clock = std::mem::take(&mut self.by_clock);
            by_clock.clear();
            if clocked {
                by_clock.extend_from_slice(&own);
                by_clock.sort_by_key(|t| (self.load_before[t.step as usize], t.step));
            }
            for t in if clocked { &by_clock } else { &own } {
                sector_ranges(t, s, &mut self.ranges);
                if l1 {
                    self.lines.clear();
                    for &(f, l) in &self.ranges {
                        let mut x = f;
                        while x <= l {
                            let li = div_pow2(x, spl);
                            let end = l.min(li * spl + spl - 1);
                            let bits = (end - x + 1) as u32;
                            let m = (u64::MAX >> (64 - bits)) << (x - li * spl);
                            match self.lines.last_mut() {
                                Some(e) if e.0 == li => e.1 |= m,
                                _ => self.lines.push((li, m)),
                            }
                            x = end + 1;
                        }
                    }
                    for &(li, m) in &self.lines {
                        let k = (li - l0) as usize;
                        let prev = self.last[k];
                        if prev == NONE {
                            self.lines_touched += w;
                        } else {
                            let gap = self.load_step(t.step) - self.load_step(prev);
                            self.gaps[gap as usize] += w;
                        }
                        self.last[k] = t.step;
                        // The first element of the touch within the line gives the lane.
                        let first = (li * line).max(t.start);
                        let lane = t.tid0 as i64 + (first - t.start) / t.xpitch.max(1);
                        self.events.push(Event {
                            warp: (lane / self.warp_size.max(1) as i64) as u32,
                            line: (row_line0 + k) as u32,
                            step: t.step,
                            prev,
                            mask: m,
                            weight: w,
                        });
                    }
                }
                if !clocked && !self.skip_links {
                    self.first_touches(t.step, s0, w, (x_only, band_end), record, row_bits);
                }
            }
            if clocked && !self.skip_links {
                for t in &own {
                    sector_ranges(t, s, &mut self.ranges);
                    self.first_touches(t.step, s0, w, (x_only, band_end), record, row_bits);
                }
            }
            self.by_clock = by_clock;
            self.touches = own;
            if link && !self.skip_links {
                let wl = group_weight(ri);
                // Sectors `..x_band` of the row lie in the band along x.
                let x_band = band_end.saturating_sub(s0).clamp(0, ns as i64) as usize;
                let (ns, split) = match (x_only, record) {
                    (true, _) => (x_band, None),
                    (false, true) => (ns, Some((x_band, row_bits))),
                    (false, false) => (ns, None),
                };
                if ns > 0 {
                    self.link_row(
                        plane, pi, acc, sh, r, grid, me, reach, issue, s0, ns, wl, split,
                    );
                }
            }
        }
        if let Part::Reuse { first, ratio, .. } = part {
            let reused = |p: &[f64; PARTS]| -> f64 {
                (0..PARTS)
                    .filter(|b| b & first == 0)
                    .map(|b| p[b])
                    .sum::<f64>()
                    * ratio
            };
            for (v, p) in self.first_touch.iter_mut().zip(&self.first_parts) {
                *v += reused(p);
            }
            for (l, p) in self.links.iter_mut().zip(&self.link_parts) {
                l.sectors += reused(p);
            }
            self.linked += reused(&self.linked_parts);
        }
    }

    /// Links the sectors of one row (whose first touches are in `self.first`) to their previous
    /// access in time. Blocks of a wave run in lockstep and waves one after the other, so the
    /// access of a block at position `p` of wave `w` at step `k` happens at time
    /// `(w, k, order(p))`; which wave a neighbour runs in, and where in the issue order, depends
    /// on the representative block's position in its wave, sampled at `POSITIONS` evenly spread
    /// positions.
    #[allow(clippy::too_many_arguments)]
    fn link_row(
        &mut self,
        plane: &Plane,
        pi: usize,
        acc: &[PlaneAccess],
        sh: &Shape,
        r: &SampledRow,
        grid: &Grid,
        me: [i64; 3],
        reach: [(i64, i64); 3],
        issue: Issue,
        s0: i64,
        ns: usize,
        w: f64,
        split: Option<(usize, usize)>,
    ) {
        let s = sh.sector;
        let steps = sh.steps() as i64;
        let wave = issue.wave;
        let base = plane.row_base(r.y, r.z);
        let (xlo, xhi) = (
            floor_div(s0 * s - base, plane.pitch) - 1,
            floor_div((s0 + ns as i64) * s - base, plane.pitch) + 1,
        );
        let (own_pos, own_ord) = (self.own_pos, self.own_ord);
        let clock = Clock::new(steps, wave);
        // Own times are `(0, step, issue position)`.
        let mine: [i64; POSITIONS] = std::array::from_fn(|j| clock.at(0, 0, own_ord[j]));
        self.best.clear();
        self.best.extend(self.first[..ns].iter().map(|&own| Latest {
            me: if own == NONE {
                [i64::MIN; POSITIONS]
            } else {
                mine.map(|m| clock.at(0, own as i64, 0) + m)
            },
            best: [i64::MIN; POSITIONS],
        }));
        // A sector this block does not touch still renews its line when a neighbour reads it:
        // it keeps the latest access before the block's last touch of that line.
        let spl = (sh.line / s).max(1);
        if spl > 1 {
            for (lo, hi) in line_spans(s0, ns, spl) {
                if self.first[lo..hi].contains(&NONE) {
                    let line = &mut self.best[lo..hi];
                    let me: [i64; POSITIONS] = std::array::from_fn(|j| {
                        line.iter().map(|l| l.me[j]).max().unwrap_or(i64::MIN)
                    });
                    for (l, &f) in line.iter_mut().zip(&self.first[lo..hi]) {
                        if f == NONE {
                            l.me = me;
                        }
                    }
                }
            }
        }
        let my_id = grid.id(me);
        // The blocks (in y and z) one of whose loads lands on this row, with those loads, and in
        // x those whose loads can reach the row's sectors; the blocks in order of first
        // appearance (a few): the links found do not depend on the order of the neighbours.
        self.yz_acc.clear();
        self.yz_blocks.clear();
        for (ai, a) in acc.iter().enumerate().filter(|(_, a)| a.plane == pi) {
            let by = grid.block_along(1, r.y - a.off[1]);
            let bz = grid.block_along(2, r.z - a.off[2]);
            if (0..grid.blocks[1]).contains(&by) && (0..grid.blocks[2]).contains(&bz) {
                let b = match self.yz_blocks.iter().position(|&e| e == (by, bz)) {
                    Some(b) => b,
                    None => {
                        self.yz_blocks.push((by, bz));
                        self.yz_blocks.len() - 1
                    }
                };
                self.yz_acc.push((b as u32, ai as u32));
            }
        }
        // Each block's loads in slot order (the order of `acc`, kept by the stable sort): a
        // canonical key (see `group_key`).
        self.yz_acc.sort_by_key(|e| e.0);
        let mut group = std::mem::take(&mut self.group_acc);
        group.clear();
        group.extend(self.yz_acc.iter().map(|e| acc[e.1 as usize]));
        self.yz_ends.clear();
        self.yz_ends.resize(self.yz_blocks.len(), 0);
        for e in &self.yz_acc {
            self.yz_ends[e.0 as usize] += 1;
        }
        for b in 1..self.yz_ends.len() {
            self.yz_ends[b] += self.yz_ends[b - 1];
        }
        let (bx_lo, bx_hi) = grid.blocks_reaching(xlo, xhi, reach[0]);
        for yz in 0..self.yz_blocks.len() {
            let (by, bz) = self.yz_blocks[yz];
            let start = if yz == 0 { 0 } else { self.yz_ends[yz - 1] };
            let grp = &group[start..self.yz_ends[yz]];
            let tile0 = grid.tile[0];
            // The neighbour at `bx`, or `None` where it is this block or starts a wave or more
            // after it (it cannot be an earlier access); with its time offsets per own position.
            let (mine_yz, id_yz) = ((by, bz) == (me[1], me[2]), grid.id([0, by, bz]));
            let when_of = |walks: &[Walk; POSITIONS], bx: i64| {
                let delta = my_id - (id_yz + bx);
                if (mine_yz && bx == me[0]) || delta <= -wave {
                    return None;
                }
                Some(Offsets {
                    clock,
                    when: std::array::from_fn(|j| clock.at(-delta, 0, walks[j].order(issue))),
                })
            };
            let (mut full_lo, mut full_hi) = (bx_lo, bx_hi);
            let aligned = (tile0 * plane.pitch) & (s - 1) == 0;
            let mut key_hash = 0;
            if aligned {
                // Full tiles touch the row as the first full tile of the row of blocks does,
                // shifted by whole sectors: its first step per sector is built once, and only
                // the neighbours that reach the row's sectors are visited.
                let first = grid.at([bx_lo, by, bz]);
                let at = BlockAt {
                    origin: first.origin,
                    ext: [tile0, first.ext[1], first.ext[2]],
                };
                key_hash = self.group_key(grp, &at, sh, r);
                let (g0, pstart, plen) = self.group_first(plane, grp, &at, sh, r, key_hash);
                let (len, ts) = (plen as i64, div_pow2(tile0 * plane.pitch, s));
                let k_min = floor_div(s0 - len - g0, ts) + 1;
                let k_max = -floor_div(-(s0 + ns as i64 - g0), ts) - 1;
                let last_full = if grid.blocks[0] * tile0 == grid.domain[0] {
                    grid.blocks[0] - 1
                } else {
                    grid.blocks[0] - 2
                };
                let (lo, hi) = (
                    (bx_lo + k_min).max(bx_lo),
                    (bx_lo + k_max).min(bx_hi).min(last_full),
                );
                if lo <= hi {
                    let mut walks = self.walks_at(my_id - grid.id([lo, by, bz]), &own_pos, issue);
                    for bx in lo..=hi {
                        if let Some(nt) = when_of(&walks, bx) {
                            let g = g0 + (bx - bx_lo) * ts;
                            self.link_shifted(g, (pstart, plen), s0, ns, &nt);
                        }
                        walks.iter_mut().for_each(|w| w.next(issue));
                    }
                }
                // Only a partial last tile is left.
                (full_lo, full_hi) = ((last_full + 1).max(bx_lo), bx_hi);
                if full_lo > full_hi {
                    continue;
                }
            }
            if !aligned {
                key_hash = self.group_key(grp, &grid.at([full_lo, by, bz]), sh, r);
            }
            // Along the row of blocks the pattern repeats with the start within a sector (a few
            // values: the sector over the GCD with the tile's bytes) and the valid extent; the
            // patterns met are kept here rather than looked up in the table for every neighbour.
            // `(valid extent, start in a sector, first sector - sector of the start, range)`.
            let mut met: [(i64, i64, i64, usize, usize); 8] = [(-1, 0, 0, 0, 0); 8];
            let mut n_met = 0;
            let mut walks = self.walks_at(my_id - grid.id([full_lo, by, bz]), &own_pos, issue);
            for bx in full_lo..=full_hi {
                if let Some(nt) = when_of(&walks, bx) {
                    let at = grid.at([bx, by, bz]);
                    let x0 = base + at.origin[0] * plane.pitch;
                    let q = div_pow2(x0, s);
                    let res = x0 - q * s;
                    let known = met[..n_met].iter().find(|m| m.0 == at.ext[0] && m.1 == res);
                    let (g0, pstart, plen) = match known {
                        Some(m) => (if m.4 == 0 { i64::MAX } else { m.2 + q }, m.3, m.4),
                        None => {
                            let f = self.group_first(plane, grp, &at, sh, r, key_hash);
                            if n_met < met.len() {
                                met[n_met] = (at.ext[0], res, f.0.wrapping_sub(q), f.1, f.2);
                                n_met += 1;
                            }
                            f
                        }
                    };
                    self.link_shifted(g0, (pstart, plen), s0, ns, &nt);
                }
                walks.iter_mut().for_each(|w| w.next(issue));
            }
        }
        self.group_acc = group;
        self.renew_lines(s0, ns, spl, clock);
        self.emit_links(ns, clock, issue, &own_ord, w, split);
    }

    /// Moves each sector's previous access to where L2's line renewals leave the longest gap.
    /// L2 keeps whole lines (`bench/l2-traffic.py` set `lines`) and a hit renews its line's place
    /// (set `promote`), so an access to any sector of the line between two reads of a sector
    /// splits the gap L2 must keep it over: the sector survives both parts, about as likely as
    /// it survives the longer one. A D3Q19 AoS record's line is read by three layers of tiles
    /// in turn, each its own words (the z-velocities' sectors are linked two layers apart, the
    /// middle layer renews the line). Candidates are the latest earlier access of each
    /// line-mate and this block's own earlier touches of it; the gap is measured in the launch
    /// times of [`Clock`].
    fn renew_lines(&mut self, s0: i64, ns: usize, spl: i64, clock: Clock) {
        if spl <= 1 {
            return;
        }
        let pos = 1i64 << clock.pos_bits;
        // Times in one linear unit (the time field, then the issue position); a moved access
        // keeps the step of the access it replaces.
        let linear = |t: i64| {
            let (when, _, ord) = clock.parts(t);
            when * pos + ord
        };
        let packed = |l: i64, like: i64| {
            let (_, step, _) = clock.parts(like);
            clock.packed(l.div_euclid(pos), step, l.rem_euclid(pos))
        };
        for (lo, hi) in line_spans(s0, ns, spl) {
            let firsts = &self.first[lo..hi];
            // Per own position, the latest read by another block and the block's first touch
            // of the line: a sector with no read after its previous access and no own touch
            // before its own (a line read whole, the usual case) keeps its link.
            let mut latest = [i64::MIN; POSITIONS];
            let mut first_own = [i64::MAX; POSITIONS];
            for (o, &f) in self.best[lo..hi].iter().zip(firsts) {
                for j in 0..POSITIONS {
                    latest[j] = latest[j].max(o.best[j]);
                    if f != NONE {
                        first_own[j] = first_own[j].min(o.me[j]);
                    }
                }
            }
            let keeps = |then: i64, me: i64, j: usize| {
                then == i64::MIN || (latest[j] <= then && first_own[j] >= me)
            };
            let line = &mut self.best[lo..hi];
            if line
                .iter()
                .all(|l| (0..POSITIONS).all(|j| keeps(l.best[j], l.me[j], j)))
            {
                continue;
            }
            // The line's accesses per own position, taken before any link moves: other
            // blocks' latest earlier reads of its sectors and this block's own touches of them.
            let n = 2 * line.len();
            self.line_times.clear();
            for j in 0..POSITIONS {
                for (o, &f) in line.iter().zip(firsts) {
                    self.line_times.push(o.best[j]);
                    self.line_times
                        .push(if f == NONE { i64::MIN } else { o.me[j] });
                }
            }
            for l in line.iter_mut() {
                for j in 0..POSITIONS {
                    let (me, then) = (l.me[j], l.best[j]);
                    if keeps(then, me, j) {
                        continue;
                    }
                    let (a, b) = (linear(then), linear(me));
                    let mut gap = b - a;
                    for &t in &self.line_times[j * n..(j + 1) * n] {
                        if t > then && t < me {
                            let x = linear(t);
                            gap = gap.min((x - a).max(b - x));
                        }
                    }
                    if gap < b - a {
                        l.best[j] = packed(b - gap, then);
                    }
                }
            }
        }
    }

    /// The walks of the own positions `own_pos` to the neighbour `delta` launches before this
    /// block (cached per call of [`RowPass::block`]).
    fn walks_at(
        &mut self,
        delta: i64,
        own_pos: &[i64; POSITIONS],
        issue: Issue,
    ) -> [Walk; POSITIONS] {
        // Hashed: the distances to the rows of blocks above and below are multiples of the grid's
        // (mostly power-of-two) extents, and would share slots modulo the cache size.
        let mut h = IntHasher::default();
        h.write_u64(delta as u64);
        let slot = (h.finish() >> (64 - WALK_CACHE.trailing_zeros())) as usize;
        let e = &mut self.walk_cache[slot];
        if e.0 != self.block_calls || e.1 != delta {
            *e = (
                self.block_calls,
                delta,
                std::array::from_fn(|j| Walk::new(own_pos[j] - delta, issue)),
            );
        }
        e.2
    }

    /// The first step per sector of row `r` of the block at `at`, whose accesses to the row are
    /// `acc`: `(first sector, range in grp_first)`, `NONE` where it touches none. The key is
    /// the one [`RowPass::group_key`] found last, for this row and a block of this row of blocks.
    ///
    /// It depends on which fold points and slots touch the row, the block's valid extent along
    /// x and where its part of the row starts within a sector (and on the threads and fold
    /// points along x); elsewhere it is the same shifted by whole sectors. So it is built once
    /// for each such key and reused for the other rows, neighbours and configurations (the
    /// minimum step per sector is the same either way).
    fn group_first(
        &mut self,
        plane: &Plane,
        acc: &[PlaneAccess],
        at: &BlockAt,
        sh: &Shape,
        r: &SampledRow,
        key_hash: u64,
    ) -> (i64, usize, usize) {
        let s = sh.sector;
        let x0 = plane.row_base(r.y, r.z) + at.origin[0] * plane.pitch;
        let (q, res) = (div_pow2(x0, s), x0 - div_pow2(x0, s) * s);
        let x_shape = (sh.block[0], sh.fold[0]);
        let mut h = IntHasher::default();
        h.write_u64(key_hash);
        h.write_u64(at.ext[0] as u64);
        h.write_u64(res as u64);
        h.write_u64(x_shape.0 as u64);
        h.write_u64(x_shape.1 as u64);
        let hash = h.finish();
        let found = self.pat_index.get(&hash).map(|&i| self.pat[i as usize]);
        if let Some(p) = found {
            if p.ext0 == at.ext[0]
                && p.res == res
                && p.x_shape == x_shape
                && self.pat_keys[p.key.0..p.key.0 + p.key.1] == self.key[..]
            {
                let g0 = if p.len == 0 { i64::MAX } else { p.rel + q };
                return (g0, p.start, p.len);
            }
        }
        // The row's accesses are those `group_key` found (the same for every block of the row
        // of blocks).
        let mut nb = std::mem::take(&mut self.nb);
        touches_of(&mut nb, &self.order, plane, acc, at, sh, r);
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for t in &nb {
            lo = lo.min(div_pow2(t.start, s));
            hi = hi.max(div_pow2(t.start + (t.n - 1) * t.pitch + t.len - 1, s));
        }
        let start = self.grp_first.len();
        if lo <= hi {
            self.grp_first.resize(start + (hi - lo + 1) as usize, NONE);
        }
        let pat = &mut self.grp_first[start..];
        for t in &nb {
            let mut first = |f: i64, l: i64| {
                for v in &mut pat[(f - lo) as usize..=(l - lo) as usize] {
                    *v = (*v).min(t.step);
                }
            };
            if t.n == 1 {
                first(div_pow2(t.start, s), div_pow2(t.start + t.len - 1, s));
            } else {
                sector_ranges(t, s, &mut self.ranges);
                self.ranges.iter().for_each(|&(f, l)| first(f, l));
            }
        }
        self.nb = nb;
        let len = self.grp_first.len() - start;
        if !self.pat_index.contains_key(&hash) {
            self.pat_index.insert(hash, self.pat.len() as u32);
            self.pat.push(Pattern {
                key: (self.pat_keys.len(), self.key.len()),
                x_shape,
                ext0: at.ext[0],
                res,
                rel: if len == 0 { 0 } else { lo - q },
                start,
                len,
            });
            self.pat_keys.extend_from_slice(&self.key);
        }
        (lo, start, len)
    }

    /// The key of the patterns of the blocks of one row of blocks (along x) whose accesses to
    /// row `r` are `acc` (the fold points along y and z and slots touching it, the same for
    /// all of them; see [`RowPass::group_first`]) into `key`, and its hash. `acc` is in slot
    /// order, so the key is too: one entry per slot, a canonical form of the set.
    fn group_key(&mut self, acc: &[PlaneAccess], at: &BlockAt, sh: &Shape, r: &SampledRow) -> u64 {
        row_accesses(&mut self.order, r.plane as usize, acc, at, sh, r.y, r.z);
        self.key.clear();
        let mut h = IntHasher::default();
        for &(fp, slot, _) in &self.order {
            self.key.push((fp, slot));
            h.write_u64(fp as u64);
            h.write_u64(u64::from(slot));
        }
        h.finish()
    }

    /// Updates the previous accesses of the row's sectors (from sector `s0`, `ns` of them) with
    /// those of a neighbour whose first steps per sector are `pat` (a range of `grp_first`) from
    /// sector `g0` on, and whose time offsets per own position are `when`.
    fn link_shifted(&mut self, g0: i64, pat: (usize, usize), s0: i64, ns: usize, nt: &Offsets) {
        let (start, len) = pat;
        let lo = g0.max(s0);
        let hi = g0.saturating_add(len as i64).min(s0 + ns as i64);
        for u in lo..hi {
            let (k, then) = ((u - s0) as usize, self.grp_first[start + (u - g0) as usize]);
            match self.last_seen.get(then as usize) {
                Some(&seen) if seen > then => keep_latest_seen(&mut self.best[k], then, seen, nt),
                _ => keep_latest(&mut self.best[k], then, nt),
            }
        }
    }

    /// Records the links found for the row's sectors; with `split` = `(x_band, row_bits)`, also
    /// by part (see [`Part::Record`]): sectors `..x_band` lie in the band along x, the row in
    /// the bands `row_bits`.
    fn emit_links(
        &mut self,
        ns: usize,
        clock: Clock,
        issue: Issue,
        ords: &[i64; POSITIONS],
        w: f64,
        split: Option<(usize, usize)>,
    ) {
        let wave = issue.wave;
        let wj = w / POSITIONS as f64;
        for k in 0..ns {
            let own = self.first[k];
            if own == NONE {
                continue;
            }
            let part = split.map(|(x_band, row_bits)| row_bits | usize::from(k < x_band));
            for (j, &own_ord) in ords.iter().enumerate() {
                let b = self.best[k].best[j];
                if let Some(m) = self.mirror.get_mut(own as usize) {
                    m[0] += wj;
                    if b != i64::MIN {
                        let (when, step, _) = clock.parts(b);
                        let (mine, _, _) = clock.parts(self.best[k].me[j]);
                        if step == own as i64 && when < mine {
                            m[1] += wj;
                            // The time field is in `quantum / wave` steps.
                            m[2] += wj * ((mine - when) * clock.quantum) as f64 / clock.wave as f64;
                        }
                    }
                }
                if b == i64::MIN {
                    continue;
                }
                let class = LinkClass {
                    then: b,
                    now: own,
                    ord: own_ord as u32,
                };
                self.linked += wj;
                let i = match self.recent[j] {
                    (c, i) if c == class => i,
                    _ => {
                        let i = *self.link_index.entry(class).or_insert(self.links.len());
                        if i == self.links.len() {
                            let (m, then, ord) = clock.lockstep(b);
                            self.links.push(Link {
                                m,
                                then,
                                now: own,
                                rest: (wave - 1 - ord) as f32 / wave as f32,
                                part: own_ord as f32 / wave as f32,
                                sectors: 0.0,
                            });
                            self.link_parts.push([0.0; PARTS]);
                        }
                        self.recent[j] = (class, i);
                        i
                    }
                };
                self.links[i].sectors += wj;
                if let Some(b) = part {
                    self.link_parts[i][b] += wj;
                    self.linked_parts[b] += wj;
                }
            }
        }
    }

    /// Finds, on the sampled store rows of block `me`, the pairs of consecutive writes of the
    /// sectors it writes, by any blocks, each weighted by the block's share of the sector's
    /// writers (so that the pairs sum to the grid's over all blocks); `stores` holds the store
    /// accesses and `reach` their offset range.
    #[allow(clippy::too_many_arguments)]
    pub fn writes(
        &mut self,
        planes: &[Plane],
        stores: &[PlaneAccess],
        sh: &Shape,
        grid: &Grid,
        me: [i64; 3],
        reach: [(i64, i64); 3],
        rows: &[SampledRow],
        issue: Issue,
        weight: f64,
    ) {
        let s = sh.sector;
        let wave = issue.wave;
        let at = grid.at(me);
        let my_id = grid.id(me);
        let own_pos = issue.own_positions();
        self.own_pairs.clear();
        self.own_index.clear();
        self.recent_own.clear();
        self.recent_own.resize(RECENT_PAIRS, (NONE, NONE, 0));
        self.patterns.clear();
        self.shadowed.clear();
        self.pattern_writes.clear();
        self.pattern_pairs.clear();
        self.pattern_across.clear();
        for r in rows {
            let pi = r.plane as usize;
            let plane = &planes[pi];
            let mut own = std::mem::take(&mut self.touches);
            touches(&mut own, &mut self.order, plane, stores, &at, sh, r, true);
            if own.is_empty() {
                self.touches = own;
                continue;
            }
            let (mut lo, mut hi) = (i64::MAX, i64::MIN);
            self.writes.clear();
            for t in &own {
                sector_ranges(t, s, &mut self.ranges);
                for &(f, l) in &self.ranges {
                    lo = lo.min(f);
                    hi = hi.max(l);
                    for x in f..=l {
                        self.writes.push((x, t.step, 0));
                    }
                }
            }
            self.touches = own;
            // Other blocks writing this row: those one of whose stores lands on it.
            self.rows_yz.clear();
            for a in stores.iter().filter(|a| a.plane == pi) {
                let by = grid.block_along(1, r.y - a.off[1]);
                let bz = grid.block_along(2, r.z - a.off[2]);
                if (0..grid.blocks[1]).contains(&by)
                    && (0..grid.blocks[2]).contains(&bz)
                    && !self.rows_yz.contains(&(by, bz))
                {
                    self.rows_yz.push((by, bz));
                }
            }
            let base = plane.row_base(r.y, r.z);
            let (xlo, xhi) = (
                floor_div(lo * s - base, plane.pitch) - 1,
                floor_div((hi + 1) * s - base, plane.pitch) + 1,
            );
            let (bx_lo, bx_hi) = grid.blocks_reaching(xlo, xhi, reach[0]);
            for yz in 0..self.rows_yz.len() {
                let (by, bz) = self.rows_yz[yz];
                for bx in bx_lo..=bx_hi {
                    let nb = [bx, by, bz];
                    let delta = my_id - grid.id(nb);
                    if nb == me {
                        continue;
                    }
                    let mut other = std::mem::take(&mut self.nb);
                    touches(
                        &mut other,
                        &mut self.order,
                        plane,
                        stores,
                        &grid.at(nb),
                        sh,
                        r,
                        false,
                    );
                    for t in &other {
                        sector_ranges_within(t, s, lo, hi, &mut self.ranges);
                        for &(f, l) in &self.ranges {
                            for x in f.max(lo)..=l.min(hi) {
                                self.writes.push((x, t.step, delta));
                            }
                        }
                    }
                    self.nb = other;
                }
            }
            self.bucket_writes(lo, hi);
            let wj = r.weight * weight / POSITIONS as f64;
            // An AoS record's words go out at one fold point, store by store: for how long its
            // sectors stay partly written, the fold point is one store time.
            let unit = if plane.interleaved() {
                sh.slots.max(1)
            } else {
                1
            };
            self.row_pairs(wj, &own_pos, issue, sh.steps() as i64, unit);
        }
        // The block's own pairs, at each own position.
        let own_pairs = std::mem::take(&mut self.own_pairs);
        self.own_at.clear();
        self.own_at.resize(own_pairs.len(), [0; POSITIONS]);
        for (j, &p) in own_pos.iter().enumerate() {
            let ord = issue.order(p) as u32;
            for (k, &(then, now, sectors)) in own_pairs.iter().enumerate() {
                let class = PairClass {
                    m: 0,
                    then,
                    now,
                    ord_then: ord,
                    ord_now: ord,
                };
                let at = self.pair_at(class, j, wave);
                self.write_pairs[at].sectors += sectors;
                self.own_at[k][j] = at as u32;
            }
        }
        self.own_pairs = own_pairs;
        self.add_chains();
    }

    /// Adds the chains of the sectors written in three or more pieces found by the last
    /// [`RowPass::writes`]: one per own position, of the pattern's pairs there.
    fn add_chains(&mut self) {
        let patterns = self.patterns.values().chain(&self.shadowed);
        for p in patterns {
            let pieces = p.writes.1;
            if pieces < 3 {
                continue;
            }
            let pairs = &self.pattern_pairs[p.pairs.0..p.pairs.0 + p.pairs.1];
            if p.writers == 0 {
                // The block alone: its own pairs, at every own position.
                for j in 0..POSITIONS {
                    let start = self.chain_pairs.len() as u32;
                    self.chain_pairs
                        .extend(pairs.iter().map(|&k| self.own_at[k as usize][j]));
                    self.chains.push((p.weight, start, (pieces - 1) as u32));
                }
            } else {
                for chain in pairs.chunks_exact(pieces - 1) {
                    let start = self.chain_pairs.len() as u32;
                    self.chain_pairs.extend_from_slice(chain);
                    self.chains.push((p.weight, start, (pieces - 1) as u32));
                }
            }
        }
    }

    /// Buckets `writes` by sector into `by_sector` (a counting sort: the sectors are those of
    /// `lo..=hi`), `bucket` then holding where each sector's writes end.
    fn bucket_writes(&mut self, lo: i64, hi: i64) {
        let n = (hi - lo + 1) as usize;
        self.bucket.clear();
        if self.writes.is_sorted_by_key(|w| w.0) {
            // Already by sector (one write per sector and step order, as in SoA rows).
            std::mem::swap(&mut self.writes, &mut self.by_sector);
            for (k, w) in self.by_sector.iter().enumerate() {
                let sector = (w.0 - lo) as usize;
                self.bucket.resize(sector, k);
            }
            self.bucket.resize(n, self.by_sector.len());
            return;
        }
        self.bucket.resize(n + 1, 0);
        for w in &self.writes {
            self.bucket[(w.0 - lo) as usize + 1] += 1;
        }
        for k in 0..n {
            self.bucket[k + 1] += self.bucket[k];
        }
        self.by_sector.clear();
        self.by_sector.resize(self.writes.len(), (0, 0, 0));
        for w in &self.writes {
            let k = (w.0 - lo) as usize;
            self.by_sector[self.bucket[k]] = *w;
            self.bucket[k] += 1;
        }
        self.bucket.pop();
    }

    /// Adds the pairs of consecutive writes of each sector of `by_sector` (bucketed by
    /// [`RowPass::bucket_writes`]), `wj` sectors per own position in `own_pos`; `unit` steps
    /// make one store time (see [`RowPass::sector_pairs`]).
    fn row_pairs(
        &mut self,
        wj: f64,
        own_pos: &[i64; POSITIONS],
        issue: Issue,
        steps: i64,
        unit: u32,
    ) {
        let mut i = 0;
        for sector in 0..self.bucket.len() {
            let e = self.bucket[sector];
            if e - i < 2 {
                i = e;
                continue;
            }
            // A sector written as one before gives the same pairs: their sectors are added again.
            let mut h = IntHasher::default();
            for &(_, step, delta) in &self.by_sector[i..e] {
                h.write_u32(step);
                h.write_u64(delta as u64);
            }
            let hash = h.finish();
            let known = self.patterns.get_mut(&hash).filter(|p| {
                p.unit == unit
                    && p.writes.1 == e - i
                    && self.pattern_writes[p.writes.0..p.writes.0 + p.writes.1]
                        .iter()
                        .zip(&self.by_sector[i..e])
                        .all(|(a, b)| *a == (b.1, b.2))
            });
            if let Some(p) = known {
                let share = wj / p.writers.max(1) as f64;
                p.weight += share;
                let p = *p;
                for k in p.pairs.0..p.pairs.0 + p.pairs.1 {
                    let at = self.pattern_pairs[k] as usize;
                    if p.writers == 0 {
                        self.own_pairs[at].2 += share;
                    } else {
                        self.write_pairs[at].sectors += share;
                        self.write_pairs_across[at] += share * f64::from(self.pattern_across[k]);
                    }
                }
                i = e;
                continue;
            }
            let (writes_start, pairs_start) = (self.pattern_writes.len(), self.pattern_pairs.len());
            self.pattern_writes
                .extend(self.by_sector[i..e].iter().map(|w| (w.1, w.2)));
            let writers = self.sector_pairs(i, e, wj, own_pos, issue, steps, unit);
            let pattern = SectorPattern {
                writes: (writes_start, e - i),
                unit,
                writers,
                pairs: (pairs_start, self.pattern_pairs.len() - pairs_start),
                weight: wj / writers.max(1) as f64,
            };
            // A hash shared with other writes keeps the pattern first found.
            match self.patterns.entry(hash) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(pattern);
                }
                std::collections::hash_map::Entry::Occupied(_) => self.shadowed.push(pattern),
            }
            i = e;
        }
    }

    /// Adds the pairs of consecutive writes of the sector whose writes are `by_sector[i..e]`
    /// (see [`RowPass::row_pairs`]) and records their indices in `pattern_pairs`; returns the
    /// sector's writers (0 where the block alone writes it). Writes `unit` steps apart or less
    /// (of one step, or of one fold point in AoS records) go out at one store time.
    #[allow(clippy::too_many_arguments)]
    fn sector_pairs(
        &mut self,
        i: usize,
        e: usize,
        wj: f64,
        own_pos: &[i64; POSITIONS],
        issue: Issue,
        steps: i64,
        unit: u32,
    ) -> usize {
        let wave = issue.wave;
        // Every writer of the sector sees the same pairs: each block counts its share, so that
        // the representative block's place in the sector (often its first writer, where tiles
        // are sector-aligned) does not bias the count.
        let ws = &mut self.by_sector[i..e];
        let writer = ws[0].2;
        let solo = ws.iter().all(|w| w.2 == writer);
        // One writer's writes are taken in step order: the block's own are bucketed so (its
        // touches are in step order), a neighbour's are sorted. Those of several writers are put
        // in time order below.
        if solo && writer != 0 {
            ws.sort_unstable();
        }
        let writers = if solo {
            1
        } else {
            self.deltas.clear();
            self.deltas.extend(ws.iter().map(|w| w.2));
            self.deltas.sort_unstable();
            self.deltas.dedup();
            self.deltas.len()
        };
        let share = wj / writers as f64;
        if solo && writer == 0 {
            // The block alone: its writes are in time order, all in one wave, and the pairs are
            // those of every own position (added to them at the end).
            for k in i + 1..e {
                let (then, now) = (self.by_sector[k - 1].1, self.by_sector[k].1);
                let at = self.own_pair_at(then, now);
                self.own_pairs[at].2 += share;
                self.pattern_pairs.push(at as u32);
                self.pattern_across.push(0.0);
            }
            return 0;
        }
        for (j, &p) in own_pos.iter().enumerate() {
            if solo {
                // One writer: its writes are in time order, all in one wave.
                let ord = issue.order((p - writer).rem_euclid(wave)) as u32;
                for k in i + 1..e {
                    let class = PairClass {
                        m: 0,
                        then: self.by_sector[k - 1].1,
                        now: self.by_sector[k].1,
                        ord_then: ord,
                        ord_now: ord,
                    };
                    let at = self.pair_at(class, j, wave);
                    self.write_pairs[at].sectors += share;
                    self.pattern_pairs.push(at as u32);
                    self.pattern_across.push(0.0);
                }
                continue;
            }
            self.group.clear();
            for &(_, step, delta) in &self.by_sector[i..e] {
                let q = p - delta;
                let (o, ord) = (issue.by_wave.of(q), issue.order(q.rem_euclid(wave)));
                let t = (o * steps + step as i64) * wave + ord;
                self.group.push((t, o, step, ord, delta));
            }
            // In time order (by wave, step and issue position: `t`).
            self.group.sort_unstable_by_key(|g| g.0);
            // Pairs of two blocks' pieces at one store time: the sector counts once over them.
            let at_once = |a: &GroupWrite, b: &GroupWrite| a.1 == b.1 && a.2 / unit == b.2 / unit;
            let across = |a: &GroupWrite, b: &GroupWrite| at_once(a, b) && a.4 != b.4;
            // Only a sector all of whose pieces go out at one store time: one with pieces steps
            // apart is written back early by its stepped pairs.
            let one_step = self.group.windows(2).all(|w| at_once(&w[0], &w[1]));
            let n_across = if one_step {
                self.group
                    .windows(2)
                    .filter(|w| across(&w[0], &w[1]))
                    .count()
            } else {
                0
            };
            for k in 1..self.group.len() {
                let (a, b) = (self.group[k - 1], self.group[k]);
                let class = PairClass {
                    m: (b.1 - a.1) as u32,
                    then: a.2,
                    now: b.2,
                    ord_then: a.3 as u32,
                    ord_now: b.3 as u32,
                };
                let at = self.pair_at(class, j, wave);
                self.write_pairs[at].sectors += share;
                self.pattern_pairs.push(at as u32);
                let f = if n_across > 0 && across(&a, &b) {
                    1.0 / n_across as f64
                } else {
                    0.0
                };
                self.write_pairs_across[at] += share * f;
                self.pattern_across.push(f as f32);
            }
        }
        writers
    }

    /// The pair of `class`, without sectors.
    fn pair_of(class: PairClass, wave: i64) -> WritePair {
        WritePair {
            m: class.m,
            then: class.then,
            now: class.now,
            rest: (wave - 1 - class.ord_then as i64) as f32 / wave as f32,
            part: class.ord_now as f32 / wave as f32,
            sectors: 0.0,
        }
    }

    /// The index in `own_pairs` of the block's own pairs of steps `then` and `now`, found by
    /// `then` first (as [`RowPass::pair_at`]).
    fn own_pair_at(&mut self, then: u32, now: u32) -> usize {
        let slot = then as usize % RECENT_PAIRS;
        if let Some(&(t, n, at)) = self.recent_own.get(slot) {
            if (t, n) == (then, now) {
                return at;
            }
        }
        let next = self.own_pairs.len();
        let at = *self.own_index.entry((then, now)).or_insert(next);
        if at == next {
            self.own_pairs.push((then, now, 0.0));
        }
        if let Some(e) = self.recent_own.get_mut(slot) {
            *e = (then, now, at);
        }
        at
    }

    /// The index in `write_pairs` of the pairs of `class` (added without sectors where new),
    /// found by own position `j` and earlier step first: a sector's pairs recur from sector to
    /// sector, and a hash lookup per pair costs more than the rest of the search.
    fn pair_at(&mut self, class: PairClass, j: usize, wave: i64) -> usize {
        let slot =
            ((class.then as usize * 61 + class.ord_then as usize) * POSITIONS + j) % RECENT_PAIRS;
        if let Some(&(c, at)) = self.recent_pairs.get(slot) {
            if c == class {
                return at;
            }
        }
        let next = self.write_pairs.len();
        let at = *self.pair_index.entry(class).or_insert(next);
        if at == next {
            self.write_pairs.push(Self::pair_of(class, wave));
            self.write_pairs_across.push(0.0);
        }
        if let Some(e) = self.recent_pairs.get_mut(slot) {
            *e = (class, at);
        }
        at
    }

    /// The Denning working set: average lines touched in a window of `g` load steps, for `g`
    /// in `0..=steps` (from the gap distribution of line touches).
    pub fn working_set(&self, steps: usize, out: &mut Vec<f64>) {
        out.clear();
        out.push(0.0);
        // Touches with a gap above j: first touches (gap infinite) and gaps > j.
        let mut above: f64 = self.lines_touched + self.gaps.iter().sum::<f64>();
        let mut w = 0.0;
        for j in 0..steps {
            w += above / steps as f64;
            out.push(w);
            above -= self.gaps.get(j + 1).copied().unwrap_or(0.0);
        }
    }

    /// Replays the L1 events, a line touched again after a gap of `g` load steps being evicted
    /// with probability `evict[g]`, or `burst[g]` where it is touched again among the first
    /// `burst_loads` loads (the burst a warp issues back to back), or `own[g]` (where given)
    /// where later the warp that touched it last touches it again; returns the expected
    /// weighted sectors re-fetched and records them in `refetched`.
    pub fn refetches(
        &mut self,
        evict: &[f64],
        burst: &[f64],
        own: Option<&[f64]>,
        burst_loads: u32,
    ) -> f64 {
        self.ever.clear();
        self.ever.resize(self.line_count, 0);
        self.present.clear();
        self.present.resize(self.line_count, 0);
        self.first_of.clear();
        self.first_of.resize(self.line_count, NONE);
        self.first_sectors.clear();
        self.first_sectors.resize(self.load_before.len(), 0.0);
        self.warp_of.clear();
        self.warp_of.resize(self.line_count, u32::MAX);
        let mut total = 0.0;
        for e in &self.events {
            let l = e.line as usize;
            if self.first_of[l] == NONE {
                self.first_of[l] = e.step;
                self.first_sectors[e.step as usize] += e.weight * e.mask.count_ones() as f64;
            }
            let p = if e.prev == NONE {
                0.0
            } else {
                let g = (self.load_step(e.step) - self.load_step(e.prev)) as usize;
                let table = match own {
                    _ if self.load_step(e.step) < burst_loads => burst,
                    Some(own) if self.warp_of[l] == e.warp => own,
                    _ => evict,
                };
                table.get(g).copied().unwrap_or(1.0)
            };
            self.warp_of[l] = e.warp;
            let known = e.mask & self.ever[l];
            // Evicted: every sector loaded before is fetched again; kept: those L1 lacks.
            let again = p * known.count_ones() as f64
                + (1.0 - p) * (known & !self.present[l]).count_ones() as f64;
            self.present[l] = if p >= 0.5 {
                e.mask
            } else {
                self.present[l] | e.mask
            };
            self.ever[l] |= e.mask;
            if again > 0.0 {
                let n = e.weight * again;
                *self
                    .refetched_since
                    .entry((self.first_of[l], e.step))
                    .or_default() += n;
                total += n;
                let first = self.first_of[l];
                match self.refetched.last_mut() {
                    Some(r) if r.then == e.prev && r.now == e.step && r.first == first => {
                        r.sectors += n
                    }
                    _ => self.refetched.push(Refetch {
                        then: e.prev,
                        now: e.step,
                        first,
                        sectors: n,
                    }),
                }
            }
        }
        total
    }

    /// Of the sectors first touched at step `first`: the share whose previous access is an
    /// earlier-launched block's at the same step, and the steps (at launch times) between the
    /// two, on average; `None` where none is. Such a neighbour (a tile sharing the sector along
    /// x) touches the sector at each step this block does, so L2 last saw a re-fetch of it at
    /// the neighbour's re-fetch, that many steps before.
    pub fn mirrored(&self, first: u32) -> Option<(f64, f64)> {
        let [all, mirrored, steps] = *self.mirror.get(first as usize)?;
        (mirrored > 0.0).then(|| (mirrored / all, steps / mirrored))
    }

    /// Per step of a first touch, the step L2 last sees those sectors at, as expected from
    /// [`RowPass::refetches`]: L1's hits do not reach L2, so a sector its block touches again
    /// is last seen there at the touch that re-fetched it. Each later step re-fetches its share
    /// of the sectors first touched at the step (`q`); the last re-fetch is step `t` with chance
    /// `q_t · Π_{t' > t} (1 − q_t')`, and the first touch itself with what is left. `None`
    /// where nothing is re-fetched.
    pub fn last_seen_steps(&self) -> Option<Vec<u32>> {
        if self.refetched_since.is_empty() {
            return None;
        }
        let mut later: Vec<(u32, u32, f64)> = self
            .refetched_since
            .iter()
            .filter(|(&(first, at), _)| at > first && first != NONE)
            .filter_map(|(&(first, at), &n)| {
                let of = *self.first_sectors.get(first as usize)?;
                (of > 0.0).then_some((first, at, (n / of).min(1.0)))
            })
            .collect();
        // By first step, latest re-fetch first.
        later.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut seen: Vec<u32> = (0..self.first_sectors.len() as u32).collect();
        let mut moved = false;
        for group in later.chunk_by(|a, b| a.0 == b.0) {
            let first = group[0].0;
            let (mut left, mut at) = (1.0, 0.0);
            for &(_, t, q) in group {
                at += left * q * t as f64;
                left -= left * q;
            }
            at += left * first as f64;
            let step = (at.round() as u32).max(first);
            moved |= step > first;
            seen[first as usize] = step;
        }
        moved.then_some(seen)
    }
}

/// Where a sample's rows lie among the rows it is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Evenly spaced, at `(k + 1/2)·spacing` for `k = 0, 1, …`.
    Even,
    /// Spread by the golden ratio, at `frac(1/2 + k/φ)·total` for `k < budget`: as even in any
    /// stretch of rows, but with no period that the rows' own (a block's or its fold points'
    /// along y and z) can alias with.
    Spread,
}

/// A sample of `budget` rows of the regions `regions` (rows in region order, y fastest), placed
/// by `placement` in a stream of `total_rows` rows shared with other planes: `offset` rows of
/// that stream come before these regions. Every row stands for `total_rows / budget` rows; all of
/// them are taken when there are no more than `budget`.
pub(crate) fn sample_rows(
    regions: &[(i64, i64, i64, i64)],
    pi: u32,
    (budget, placement): (usize, Placement),
    total_rows: f64,
    offset: f64,
    out: &mut Vec<SampledRow>,
) {
    let all = total_rows <= budget as f64;
    let spacing = if all { 1.0 } else { total_rows / budget as f64 };
    let own: f64 = regions
        .iter()
        .map(|&(ya, yb, za, zb)| ((yb - ya) * (zb - za)) as f64)
        .sum();
    let points: Vec<f64> = if all || placement == Placement::Even {
        // The points (k + 1/2)·spacing within these regions' stretch of the stream.
        let first = if all {
            offset
        } else {
            ((offset / spacing - 0.5).ceil().max(0.0) + 0.5) * spacing
        };
        (0..)
            .map(|k| first + k as f64 * spacing)
            .take_while(|&p| p < offset + own)
            .collect()
    } else {
        const INV_PHI: f64 = 0.618_033_988_749_894_9;
        let mut p: Vec<f64> = (0..budget)
            .map(|k| (0.5 + k as f64 * INV_PHI).fract() * total_rows)
            .filter(|&p| p >= offset && p < offset + own)
            .collect();
        p.sort_by(f64::total_cmp);
        p
    };
    let mut next = points.into_iter().peekable();
    let mut start = offset;
    for &(ya, yb, za, zb) in regions {
        let (dy, dz) = (yb - ya, zb - za);
        let end = start + (dy * dz) as f64;
        while let Some(p) = next.next_if(|&p| p < end) {
            let idx = (p - start).floor() as i64;
            out.push(SampledRow {
                plane: pi,
                y: ya + idx % dy,
                z: za + idx / dy,
                weight: spacing,
            });
        }
        start = end;
    }
}

/// The boxes of the loads of block `at` on plane `pi`.
pub(crate) fn load_boxes(acc: &[PlaneAccess], pi: usize, at: &BlockAt, out: &mut Vec<ElemBox>) {
    boxes(acc, AccessKind::Load, pi, at, out)
}

/// The boxes of the accesses of `kind` of block `at` on plane `pi`.
pub(crate) fn boxes(
    acc: &[PlaneAccess],
    kind: AccessKind,
    pi: usize,
    at: &BlockAt,
    out: &mut Vec<ElemBox>,
) {
    out.clear();
    for a in acc.iter().filter(|a| a.plane == pi && a.kind == kind) {
        out.push(ElemBox {
            x: (at.origin[0] + a.off[0], at.origin[0] + a.off[0] + at.ext[0]),
            y: (at.origin[1] + a.off[1], at.origin[1] + a.off[1] + at.ext[1]),
            z: (at.origin[2] + a.off[2], at.origin[2] + a.off[2] + at.ext[2]),
            comp: a.comp,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{sample_rows, sector_ranges, sector_ranges_within, Clock, Link, Placement, Touch};

    #[test]
    fn launch_times_order_blocks_by_launch_and_step_and_map_to_lockstep_windows() {
        // 8 steps per block, waves of 10 blocks: a block 15 launches earlier at step 2 comes
        // 1.5 waves minus 2 steps (10 steps) before the representative's start, as step 6 two
        // waves back does; 2 launches earlier at step 3, 1.4 steps after its start (step 1).
        let clock = Clock::new(8, 10);
        let early = clock.at(-15, 2, 3);
        assert_eq!(clock.lockstep(early), (2, 6, 3));
        let near = clock.at(-2, 3, 0);
        assert_eq!(clock.lockstep(near), (0, 1, 0));
        // Ordered by time, whatever the step: the block 2 earlier at step 3 comes before the
        // representative's step 2, after its step 1.
        assert!(clock.at(0, 1, 9) < near && near < clock.at(0, 2, 0));
        // A time at a step boundary keeps the later wave's step 0.
        assert_eq!(clock.lockstep(clock.at(-10, 0, 0)), (1, 0, 0));
        // Blocks further back than the horizon count as that far.
        assert_eq!(clock.at(-10_000, 0, 0), clock.at(-640, 0, 0));
        // Runs of very many steps take a coarser time field, and times stay in order.
        let long = Clock::new(1 << 20, 4224);
        let (far, later) = (long.at(-1 << 40, 5, 0), long.at(-4224, 0, 0));
        assert!(far < later && later < long.at(0, 0, 0) && long.at(0, 0, 0) < long.at(1, 0, 0));
        assert_eq!(long.lockstep(later), (1, 0, 0));
        let link = Link {
            m: 2,
            then: 6,
            now: 1,
            rest: 0.5,
            part: 0.5,
            sectors: 1.0,
        };
        assert_eq!(link.steps_apart(8), 11.0);
    }

    /// The sectors of `lo..=hi` the ranges cover.
    fn covered(ranges: &[(i64, i64)], lo: i64, hi: i64) -> Vec<i64> {
        ranges
            .iter()
            .flat_map(|&(f, l)| f.max(lo)..=l.min(hi))
            .collect()
    }

    #[test]
    fn a_spread_sample_meets_every_phase_of_rows_that_repeat() {
        // 48 rows along y (a period of 16) in 32 layers, one plane: an even sample of 128 rows
        // steps 12 rows and meets 4 of the 16 phases; the spread one meets all of them.
        let regions = [(0, 48, 0, 32)];
        let phases = |placement| {
            let mut out = Vec::new();
            sample_rows(&regions, 0, (128, placement), 1536.0, 0.0, &mut out);
            let weight: f64 = out.iter().map(|r| r.weight).sum();
            assert!((weight - 1536.0).abs() < 1e-9, "{placement:?} {weight}");
            assert!(out
                .iter()
                .all(|r| (0..48).contains(&r.y) && (0..32).contains(&r.z)));
            let mut seen = [0usize; 16];
            out.iter().for_each(|r| seen[(r.y % 16) as usize] += 1);
            seen.iter().filter(|&&n| n > 0).count()
        };
        assert_eq!(phases(Placement::Even), 4);
        assert_eq!(phases(Placement::Spread), 16);
        // Split over two planes, the points fall where they would in one stream.
        let (mut one, mut two) = (Vec::new(), Vec::new());
        let whole = [(0, 48, 0, 32)];
        sample_rows(&whole, 0, (128, Placement::Spread), 1536.0, 0.0, &mut one);
        sample_rows(
            &[(0, 48, 0, 16)],
            0,
            (128, Placement::Spread),
            1536.0,
            0.0,
            &mut two,
        );
        sample_rows(
            &[(0, 48, 16, 32)],
            1,
            (128, Placement::Spread),
            1536.0,
            768.0,
            &mut two,
        );
        assert_eq!(one.len(), two.len());
        assert!(one.iter().zip(&two).all(|(a, b)| (a.y, a.z) == (b.y, b.z)));
    }

    #[test]
    fn ranges_within_sectors_are_the_clamped_ranges() {
        let (mut all, mut within) = (Vec::new(), Vec::new());
        // Interleaved records (76-byte pitch, one word), contiguous runs, and elements wider
        // than the pitch, against windows inside, across and outside the touch.
        for (start, n, pitch, len) in [(100, 64, 76, 4), (37, 1, 0, 900), (0, 9, 24, 40)] {
            let t = Touch {
                step: 0,
                tid0: 0,
                xpitch: 4,
                start,
                n,
                pitch,
                len,
            };
            sector_ranges(&t, 32, &mut all);
            for (lo, hi) in [(0, 200), (10, 12), (5, 5), (-4, 3), (150, 170), (40, 41)] {
                sector_ranges_within(&t, 32, lo, hi, &mut within);
                assert_eq!(
                    covered(&within, lo, hi),
                    covered(&all, lo, hi),
                    "{t:?} {lo}..={hi}"
                );
                assert!(within.iter().all(|r| r.1 >= lo && r.0 <= hi));
            }
        }
    }
}
