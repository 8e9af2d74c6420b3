//! An exact, slow, trace-driven simulator of the memory system that `footprint` models: the oracle
//! for the visitor's assumptions, for small domains only.
//!
//! Blocks go to SMs in launch order (block `i` of a wave to SM `i mod SMs`, up to `blocks_per_sm`
//! each); all warps execute in lockstep, instruction by instruction (SM by SM, block by block, warp
//! by warp within one step), so a wave's blocks finish together and the next wave starts. That is
//! the visitor's order for L1; [`IssueOrder::WarpBurst`] is the other extreme (each warp issues a fold
//! point's instructions back to back, as independent loads are), to bracket what the hardware does,
//! and [`IssueOrder::SchedulerBurst`] interleaves the bursts of the SM's four schedulers;
//! [`IssueOrder::Drift`] is lockstep with each warp late by its own delay, as warps drift apart on
//! the GPU; [`IssueOrder::Window`] bursts each warp's first loads and then steps in lockstep, as
//! register-limited compiled code does, and [`IssueOrder::Interleave`] runs groups of warps in
//! lockstep one after another; [`IssueOrder::Timed`] derives the order from a timing model of the
//! SM (loads in flight, a queue in front of the L1, greedy-then-oldest issue; see `timed`), and
//! [`IssueOrder::Launched`] starts each block at its launch time (block `n` at `n / wave` block
//! durations, lockstep within it), as the GPU does and the visitor's L2 assumes. Each SM has an
//! L1 of 128 B lines with 32 B sectors filled sector by sector, replacing the least recently used
//! line of the line's set ([`L1Replacement::Lru`]: one fully associative set, sets of
//! `l1_conflict_ways` ways filled by a hash as the visitor assumes, or the machine's measured set
//! function with a data store of the L1's size) or a random line of the whole L1
//! ([`L1Replacement::Random`]); one shared L2 is LRU of lines, each
//! holding the sectors read or written into it (a line takes its whole room however few of its
//! sectors it holds, as measured: `bench/l2-traffic.py` set `lines`). Loads go through L1; stores
//! are written through to L2 (they update a present L1 sector, but allocate none). L2
//! write-allocates with a byte mask: a dirty sector costs a DRAM write when evicted or at the
//! end, and one not fully written (nor filled by a read) also a DRAM read.

use crate::config::LaunchConfig;
use crate::footprint::{
    bank_passes, CacheParams, DataVolumes, FootprintError, MemoryProgram, WAVEFRONTS_PER_EXTRA_LINE,
};
use crate::ir::{AccessKind, Domain, Kernel};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

mod timed;
pub use timed::IssueTiming;

/// The most lane accesses a simulation may take (keeps accidental huge runs from hanging).
pub const MAX_LANE_ACCESSES: u64 = 400_000_000;

/// A multiplicative hasher for integer keys (the std SipHash dominates the run time otherwise).
#[derive(Default)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IntMap<V> = HashMap<u64, V, BuildHasherDefault<IntHasher>>;

const NIL: u32 = u32::MAX;

/// An LRU set of keys with a value each: slab plus intrusive list, most recent at the head.
struct Lru<V: Copy> {
    map: IntMap<u32>,
    keys: Vec<u64>,
    vals: Vec<V>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    capacity: usize,
    /// Evict a random entry (xorshift state) instead of the least recent; `None`: LRU.
    random: Option<u64>,
    /// Slots freed by [`Lru::remove`], reused first.
    free: Vec<u32>,
}

impl<V: Copy> Lru<V> {
    fn new(capacity: usize) -> Lru<V> {
        Lru {
            map: IntMap::default(),
            keys: Vec::new(),
            vals: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            head: NIL,
            tail: NIL,
            capacity: capacity.max(1),
            random: None,
            free: Vec::new(),
        }
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.prev[i as usize], self.next[i as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.prev[i as usize] = NIL;
        self.next[i as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// The value of `key`, made most recent.
    fn touch(&mut self, key: u64) -> Option<&mut V> {
        let i = *self.map.get(&key)?;
        self.unlink(i);
        self.push_front(i);
        Some(&mut self.vals[i as usize])
    }

    /// The value of `key` without changing the order.
    fn peek(&mut self, key: u64) -> Option<&mut V> {
        let i = *self.map.get(&key)?;
        Some(&mut self.vals[i as usize])
    }

    /// The same set, evicting a pseudo-random entry (seeded by `seed`) when full.
    fn with_random_eviction(mut self, seed: u64) -> Lru<V> {
        self.random = Some(seed | 1);
        self
    }

    /// Inserts an absent `key` as most recent; returns the evicted entry, if any.
    fn insert(&mut self, key: u64, val: V) -> Option<(u64, V)> {
        let mut evicted = None;
        let slot = if let Some(i) = self.free.pop() {
            self.keys[i as usize] = key;
            self.vals[i as usize] = val;
            i
        } else if self.keys.len() < self.capacity {
            self.keys.push(key);
            self.vals.push(val);
            self.prev.push(NIL);
            self.next.push(NIL);
            (self.keys.len() - 1) as u32
        } else {
            let t = match &mut self.random {
                None => self.tail,
                Some(x) => {
                    *x ^= *x << 13;
                    *x ^= *x >> 7;
                    *x ^= *x << 17;
                    (*x % self.capacity as u64) as u32
                }
            };
            self.unlink(t);
            let old = self.keys[t as usize];
            self.map.remove(&old);
            evicted = Some((old, self.vals[t as usize]));
            self.keys[t as usize] = key;
            self.vals[t as usize] = val;
            t
        };
        self.map.insert(key, slot);
        self.push_front(slot);
        evicted
    }

    /// Drops `key` if present (only for LRU sets: random eviction picks among all slots).
    fn remove(&mut self, key: u64) {
        debug_assert!(self.random.is_none());
        if let Some(i) = self.map.remove(&key) {
            self.unlink(i);
            self.free.push(i);
        }
    }

    /// Every entry, key and value.
    fn entries(&self) -> impl Iterator<Item = (u64, V)> + '_ {
        self.map.iter().map(|(&k, &i)| (k, self.vals[i as usize]))
    }
}

/// A line in L2: per sector (a bit each; a line holds at most 64), whether it is held, written,
/// and held with only some of its bytes valid (written in part, not read from DRAM).
#[derive(Clone, Copy, Default)]
struct L2Line {
    held: u64,
    dirty: u64,
    partial: u64,
}

/// Raw event counts of a simulation, in sectors, lines and wavefronts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimCounts {
    /// Sectors requested from L1 by load instructions (per warp instruction, distinct).
    pub l1_load_sectors: u64,
    /// L1 bank passes of load and store instructions.
    pub l1_bank_passes: u64,
    /// Lines of load and store instructions beyond each one's first.
    pub l1_extra_lines: u64,
    /// Sectors that missed in L1 (requested from L2).
    pub l2_load_sectors: u64,
    /// Sectors stored to L2 (per warp store instruction, distinct).
    pub l2_store_sectors: u64,
    /// Sectors read from DRAM (L2 load misses and fills of partly written sectors).
    pub dram_load_sectors: u64,
    /// Sectors written to DRAM.
    pub dram_store_sectors: u64,
    /// Cycles the grid took in [`IssueOrder::Timed`] (0 in the other orders).
    pub cycles: u64,
}

struct Sim<'a> {
    p: &'a CacheParams,
    /// Per SM, its L1's sets (one where fully associative).
    l1: Vec<Vec<Lru<u64>>>,
    /// Per SM, the L1's data store where it holds fewer lines than the sets' tags (a measured set
    /// function with more sets times ways than the L1's capacity): the least recent line overall
    /// gives way when it is full.
    l1_data: Vec<Option<Lru<()>>>,
    l2: Lru<L2Line>,
    /// The valid bytes of the sectors L2 holds partly written, by sector.
    l2_partial: IntMap<u64>,
    /// Sectors per L2 line.
    per_line: u64,
    c: SimCounts,
    full: u64,
}

impl<'a> Sim<'a> {
    /// Empty caches for `params`, L1 replacing lines as `l1_replacement`.
    fn new(params: &'a CacheParams, l1_replacement: L1Replacement) -> Sim<'a> {
        let lines = params.l1_bytes / params.line_bytes;
        let ways = params.l1_conflict_ways;
        let index = &params.l1_set_index;
        // The measured set function: its sets of the tags' ways (at every L1, where the visitor's
        // ways fall with the L1), and a data store of the L1's capacity where that is smaller
        // than the tags.
        let set_ways = match params.l1_set_ways {
            0 => ways,
            w => w,
        };
        let measured_sets =
            l1_replacement == L1Replacement::Lru && set_ways > 0 && !index.is_empty();
        Sim {
            p: params,
            l1_data: (0..params.sms)
                .map(|_| {
                    (measured_sets && lines < index.sets() * set_ways).then(|| Lru::new(lines))
                })
                .collect(),
            l1: (0..params.sms)
                .map(|sm| match l1_replacement {
                    L1Replacement::Lru if measured_sets => {
                        (0..index.sets()).map(|_| Lru::new(set_ways)).collect()
                    }
                    L1Replacement::Lru if ways > 0 && ways < lines => {
                        (0..lines / ways).map(|_| Lru::new(ways)).collect()
                    }
                    L1Replacement::Lru => vec![Lru::new(lines)],
                    L1Replacement::Random => vec![Lru::new(lines)
                        .with_random_eviction((sm as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))],
                })
                .collect(),
            l2: Lru::new(params.l2_bytes / params.line_bytes),
            l2_partial: IntMap::default(),
            per_line: (params.line_bytes / params.sector_bytes).max(1) as u64,
            c: SimCounts::default(),
            full: if params.sector_bytes == 64 {
                u64::MAX
            } else {
                (1u64 << params.sector_bytes) - 1
            },
        }
    }
}

impl Sim<'_> {
    /// The set of SM `sm`'s L1 that `line` falls into: by the measured set function, or by a
    /// hash, as if at random.
    fn l1_set(&mut self, sm: usize, line: u64) -> &mut Lru<u64> {
        let sets = &mut self.l1[sm];
        let n = sets.len() as u64;
        let i = if n == 1 {
            0
        } else if !self.p.l1_set_index.is_empty() {
            self.p.l1_set_index.of(line) as u64
        } else {
            splitmix64(line) % n
        };
        &mut sets[i as usize]
    }

    /// Writes back what L2 still holds dirty and returns the counts.
    fn finish(mut self) -> SimCounts {
        let rest: Vec<(u64, L2Line)> = self.l2.entries().collect();
        for (line, l) in rest {
            self.l2_evicted(line, l);
        }
        self.c
    }

    /// Line `line` leaves L2: each written sector costs a DRAM write, and one held in part a read
    /// first (HBM has no byte mask).
    fn l2_evicted(&mut self, line: u64, l: L2Line) {
        for i in 0..self.per_line {
            let bit = 1u64 << i;
            if l.partial & bit != 0 {
                self.l2_partial.remove(&(line * self.per_line + i));
            }
            if l.dirty & bit != 0 {
                self.c.dram_store_sectors += 1;
                if l.partial & bit != 0 {
                    self.c.dram_load_sectors += 1;
                }
            }
        }
    }

    /// Makes `line` the most recent in L2, allocating it (and evicting the least recent line)
    /// where absent.
    fn l2_touch(&mut self, line: u64) {
        if self.l2.touch(line).is_none() {
            if let Some((e, v)) = self.l2.insert(line, L2Line::default()) {
                self.l2_evicted(e, v);
            }
        }
    }

    /// Reads `sector` through L2: whether DRAM served it.
    fn l2_read(&mut self, sector: u64) -> bool {
        let per_line = self.per_line;
        // L2 reads the aligned fetch around a missed sector: the fetch's sectors it lacks come
        // with it (measured, `bench/l2-traffic.py`), within the sector's line.
        let group = ((self.p.fetch_bytes() / self.p.sector_bytes) as u64).clamp(1, per_line);
        let (line, i) = (sector / per_line, sector % per_line);
        self.l2_touch(line);
        let l = self.l2.peek(line).expect("just touched");
        let bit = 1u64 << i;
        if l.held & bit != 0 {
            if l.partial & bit != 0 {
                // A fill completes the partly written sector.
                l.partial &= !bit;
                self.l2_partial.remove(&sector);
                self.c.dram_load_sectors += 1;
                return true;
            }
            return false;
        }
        let first = i / group * group;
        let fetched = (u64::MAX >> (64 - group)) << first & !l.held;
        l.held |= fetched;
        self.c.dram_load_sectors += u64::from(fetched.count_ones());
        true
    }

    fn l2_write(&mut self, sector: u64, mask: u64) {
        let per_line = self.per_line;
        let (line, bit) = (sector / per_line, 1u64 << (sector % per_line));
        self.l2_touch(line);
        let full = self.full;
        let l = self.l2.peek(line).expect("just touched");
        l.dirty |= bit;
        if l.held & bit != 0 && l.partial & bit == 0 {
            // Held whole already.
            return;
        }
        l.held |= bit;
        let valid = self.l2_partial.entry(sector).or_insert(0);
        *valid |= mask;
        if *valid == full {
            l.partial &= !bit;
            self.l2_partial.remove(&sector);
        } else {
            l.partial |= bit;
        }
    }

    /// Loads `sector` on SM `sm`: the level that served it.
    fn load(&mut self, sm: usize, sector: u64) -> Served {
        let per_line = (self.p.line_bytes / self.p.sector_bytes) as u64;
        let line = sector / per_line;
        let bit = 1u64 << (sector % per_line);
        let set = self.l1_set(sm, line);
        // (line present, sector present, line evicted for this one)
        let (hit, sector_hit, evicted) = match set.touch(line) {
            Some(m) if *m & bit != 0 => (true, true, None),
            Some(m) => {
                *m |= bit;
                (true, false, None)
            }
            None => (false, false, set.insert(line, bit).map(|(v, _)| v)),
        };
        if let Some(data) = &mut self.l1_data[sm] {
            if hit {
                data.touch(line);
            } else {
                if let Some(v) = evicted {
                    data.remove(v);
                }
                if let Some((e, ())) = data.insert(line, ()) {
                    self.l1_set(sm, e).remove(e);
                }
            }
        }
        if sector_hit {
            return Served::L1;
        }
        self.c.l2_load_sectors += 1;
        if self.l2_read(sector) {
            Served::Dram
        } else {
            Served::L2
        }
    }

    fn store(&mut self, sm: usize, sector: u64, mask: u64) {
        let per_line = (self.p.line_bytes / self.p.sector_bytes) as u64;
        // Write-through: a present L1 sector is updated in place (no state change needed); nothing
        // is allocated.
        let line = sector / per_line;
        let _ = self.l1_set(sm, line).peek(line);
        self.c.l2_store_sectors += 1;
        self.l2_write(sector, mask);
    }

    /// Performs warp `w`'s instruction `n` at fold point `p` of block `b` on SM `sm`: the lines
    /// it touched and the level that served its slowest sector, or `None` where no lane of the
    /// warp is active there.
    #[allow(clippy::too_many_arguments)]
    fn warp_instruction(
        &mut self,
        prog: &MemoryProgram,
        sc: &mut Scratch,
        n: usize,
        p: [usize; 3],
        sm: usize,
        b: [usize; 3],
        w: usize,
    ) -> Option<(usize, Served)> {
        let ins = &prog.instructions[n];
        let sector = self.p.sector_bytes as i64;
        let line = self.p.line_bytes as i64;
        let warp = self.p.warp_size;
        let threads = prog.config.threads();
        let esz = prog.layouts[ins.field].elem_size as i64;
        sc.addrs.clear();
        sc.lanes.clear();
        for l in w * warp..((w + 1) * warp).min(threads) {
            let t = prog.thread(l);
            if !prog.active(t, b, p) {
                continue;
            }
            let a = ins.address.eval(&MemoryProgram::vars(t, b, p));
            let off = a.rem_euclid(sector);
            let mask = ((1u64 << esz) - 1) << off;
            sc.addrs.push((a.div_euclid(sector), mask));
            sc.lanes.push(a);
        }
        if sc.addrs.is_empty() {
            return None;
        }
        sc.addrs.sort_unstable_by_key(|x| x.0);
        sc.lines.clear();
        sc.lines
            .extend(sc.addrs.iter().map(|x| x.0 * sector / line));
        sc.lines.dedup();
        let banks = bank_passes(sc.lanes.iter().copied(), esz as usize, &mut sc.words);
        self.c.l1_bank_passes += u64::from(banks);
        self.c.l1_extra_lines += sc.lines.len() as u64 - 1;
        let mut served = Served::L1;
        let mut i = 0;
        while i < sc.addrs.len() {
            let s = sc.addrs[i].0;
            let mut mask = 0;
            while i < sc.addrs.len() && sc.addrs[i].0 == s {
                mask |= sc.addrs[i].1;
                i += 1;
            }
            match ins.kind {
                AccessKind::Load => {
                    self.c.l1_load_sectors += 1;
                    served = served.max(self.load(sm, s as u64));
                }
                AccessKind::Store => self.store(sm, s as u64, mask),
            }
        }
        Some((sc.lines.len(), served))
    }
}

/// The level that served a load: its latency in the timed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Served {
    L1,
    L2,
    Dram,
}

/// Buffers one warp instruction's accesses reuse.
#[derive(Default)]
struct Scratch {
    /// Per active lane: its sector and the byte mask within it.
    addrs: Vec<(i64, u64)>,
    /// Per active lane: its byte address.
    lanes: Vec<i64>,
    /// The distinct lines.
    lines: Vec<i64>,
    /// Bank words ([`bank_passes`]).
    words: Vec<i64>,
}

/// The order in which the warps of a wave issue their instructions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IssueOrder {
    /// Instruction by instruction: every warp issues an instruction before any issues the next
    /// (SM by SM, block by block, warp by warp within one); the visitor's model for L1.
    #[default]
    Lockstep,
    /// Fold point by fold point, warp by warp (SM by SM, block by block): a warp issues all the
    /// instructions of a fold point before the next warp issues any, as a warp issues its
    /// independent loads back to back. Within an SM this is the other extreme from lockstep;
    /// across SMs it runs the SMs one after another within a fold point.
    WarpBurst,
    /// The SM's warps dealt round-robin to its [`SCHEDULERS_PER_SM`] warp schedulers; each
    /// scheduler issues its warps in warp-burst order and the schedulers take turns instruction by
    /// instruction (SM after SM within a fold point), as greedy schedulers that issue from one warp
    /// until its loads stall it would.
    SchedulerBurst,
    /// Lockstep, but each warp runs late by its own delay, drawn uniformly (and reproducibly)
    /// from zero to `hundredths`/100 fold points: warps of one block drift apart as measured on
    /// the GPU (`bench/warp-skew.py`), so a sector two warps share at one fold point is reused
    /// after the instructions the SM issues meanwhile.
    Drift {
        /// The largest delay, in hundredths of a fold point.
        hundredths: u32,
    },
    /// Each warp keeps up to `loads` memory instructions in flight, as the compiled code does
    /// where registers are short (32 per thread: an initial batch of 11-12 f64 or 22-23 f32 loads,
    /// then one load per arithmetic step; `nvcc -arch=sm_90`, SASS): its first `loads` issued
    /// instructions go out as one burst, each later one a lockstep step after the previous
    /// (warp after warp within a step, SM by SM).
    Window {
        /// Memory instructions a warp has in flight at most.
        loads: u32,
    },
    /// Lockstep among `warps` warps of the SM at a time (in launch order), one group after
    /// another within a fold point: 1 is warp-burst, the SM's warps or more lockstep. The L1
    /// sees about half the SM's warps interleaved (`bench/l1-interleave.py`).
    Interleave {
        /// Warps issuing in lockstep together.
        warps: u32,
    },
    /// From a timing model of the SM ([`IssueTiming`]): warps keep a batch of loads in flight,
    /// wait in a queue in front of the L1 (one line per cycle) and issue greedy-then-oldest, so
    /// the warps whose loads hit run ahead; blocks start as earlier ones finish.
    Timed(IssueTiming),
    /// Lockstep within each block, and blocks starting as earlier ones finish, not in waves:
    /// block `n`'s `i`-th instruction at `n / wave` block durations plus `i` of its `I`
    /// instructions' share of one (at equal times SM by SM, block by block, warp by warp), as
    /// the GPU starts blocks (`bench/results/h100/counters/block-placement/`) and the visitor's
    /// L2 links assume.
    Launched,
}

/// Which line an SM's L1 gives up for a new one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum L1Replacement {
    /// The least recently used of the line's set: one fully associative set, or sets of
    /// [`CacheParams::l1_conflict_ways`] ways that lines fall into by a hash (the visitor's model)
    /// or by [`CacheParams::l1_set_index`] where measured (in sets of
    /// [`CacheParams::l1_set_ways`] ways). The
    /// GPU's L1 is LRU for a warp sweeping whole, consecutive lines, and loses lines a row or
    /// layer pitch apart as 3-4 ways filled at random would (measured: `bench/l1-policy.py`).
    #[default]
    Lru,
    /// A pseudo-random one (reproducible). For rows a pitch apart the GPU's L1 loses lines well
    /// below its capacity (set conflicts); random replacement has that statistics without a set
    /// mapping, which is not documented.
    Random,
}

/// The splitmix64 hash of `x`: reproducible pseudo-random bits (set choice, warp delays).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The delay of warp `w` of the wave's block `bi` in [`IssueOrder::Drift`], in instructions
/// (a hash of the warp, scaled to `0..max`).
fn drift_delay(bi: usize, w: usize, max: f64) -> usize {
    let z = splitmix64((bi as u64) << 20 ^ w as u64);
    ((z >> 11) as f64 / (1u64 << 53) as f64 * max) as usize
}

/// Appends to `out` the warp instructions `(fold point, instruction, block, warp)` that `prog`
/// issues for `blocks` blocks of `warps` warps, ordered by
/// `time(block, warp, fold point, instruction, i)` (`i` counting the warp's issued instructions),
/// ties in lockstep order (block, warp, then the warp's own order).
fn timed_issues(
    prog: &MemoryProgram,
    blocks: usize,
    warps: usize,
    time: impl Fn(usize, usize, usize, usize, usize) -> usize,
    out: &mut Vec<(usize, usize, usize, usize)>,
) {
    let mut timed: Vec<(usize, usize, usize, usize, usize)> = Vec::new();
    for bi in 0..blocks {
        for w in 0..warps {
            for (i, (fi, n)) in prog.issued_sequence().enumerate() {
                timed.push((time(bi, w, fi, n, i), bi, w, fi, n));
            }
        }
    }
    timed.sort_unstable();
    out.extend(timed.iter().map(|&(_, bi, w, fi, n)| (fi, n, bi, w)));
}

/// Warp schedulers (SM sub-partitions) per SM, Volta to Hopper.
pub const SCHEDULERS_PER_SM: usize = 4;

/// Simulates one sweep with the warps issuing in `order` and returns the raw counts.
pub fn simulate_counts(
    kernel: &Kernel,
    domain: &Domain,
    config: &LaunchConfig,
    params: &CacheParams,
    order: IssueOrder,
    l1_replacement: L1Replacement,
) -> Result<SimCounts, FootprintError> {
    let prog = MemoryProgram::new(kernel, domain, config)?;
    simulate_program_counts(&prog, params, order, l1_replacement)
}

/// As [`simulate_counts`], for a program built already: where it has a compiled issue order
/// ([`MemoryProgram::with_compiled_order`]), each warp issues its instructions in that order (the
/// lockstep, drift, window and timed orders; the others interleave the emitted order's fold
/// points and refuse it).
pub fn simulate_program_counts(
    prog: &MemoryProgram,
    params: &CacheParams,
    order: IssueOrder,
    l1_replacement: L1Replacement,
) -> Result<SimCounts, FootprintError> {
    params.check()?;
    let (domain, config) = (&prog.domain, &prog.config);
    let compiled = prog.compiled_order.is_some();
    if compiled
        && matches!(
            order,
            IssueOrder::WarpBurst | IssueOrder::SchedulerBurst | IssueOrder::Interleave { .. }
        )
    {
        return Err(FootprintError::CompiledOrder(format!(
            "the simulator's {order:?} order interleaves the emitted fold points; use lockstep, drift, window or timed with a compiled issue order"
        )));
    }
    let elem = prog.layouts.iter().map(|l| l.elem_size).max().unwrap_or(1);
    if params.sector_bytes > 64 || !params.sector_bytes.is_multiple_of(elem) {
        return Err(FootprintError::BadParams(format!(
            "the simulator needs sectors of at most 64 bytes holding whole elements (sector {} B, element {elem} B)",
            params.sector_bytes
        )));
    }
    let nblocks = config.blocks(domain);
    let threads = config.threads();
    let lane_accesses =
        (nblocks * threads * config.points_per_thread()) as u64 * prog.instructions.len() as u64;
    if lane_accesses > MAX_LANE_ACCESSES {
        return Err(FootprintError::TooLargeToSimulate(lane_accesses));
    }
    let grid = config.grid(domain);
    let mut sim = Sim::new(params, l1_replacement);
    let nwarps = threads.div_ceil(params.warp_size);
    let wave = params.sms * params.blocks_per_sm;
    let folds: Vec<[usize; 3]> = prog.fold_points().collect();
    let mut scratch = Scratch::default();
    if let IssueOrder::Timed(timing) = order {
        let seq: Vec<(usize, usize)> = prog.issued_sequence().collect();
        let work = StencilWork {
            prog,
            store: seq
                .iter()
                .map(|&(_, n)| prog.instructions[n].kind == AccessKind::Store)
                .collect(),
            seq,
            folds,
            grid,
            nblocks,
            nwarps,
        };
        sim.c.cycles = timed::run(&mut sim, &work, &timing, timing.loads_in_flight(elem));
        return Ok(sim.finish());
    }
    let block_at = |id: usize| {
        [
            id % grid[0],
            (id / grid[0]) % grid[1],
            id / (grid[0] * grid[1]),
        ]
    };
    if order == IssueOrder::Launched {
        let seq: Vec<(usize, usize)> = prog.issued_sequence().collect();
        let per_block = seq.len() as u64;
        // `(time in 1 / (I · wave) block durations, SM, block, warp, instruction)`.
        let mut timed: Vec<(u64, u32, u32, u32, u32)> =
            Vec::with_capacity(nblocks * nwarps * seq.len());
        for id in 0..nblocks {
            let sm = ((id % wave) % params.sms) as u32;
            for i in 0..seq.len() {
                let t = id as u64 * per_block + i as u64 * wave as u64;
                timed.extend((0..nwarps).map(|w| (t, sm, id as u32, w as u32, i as u32)));
            }
        }
        timed.sort_unstable();
        for &(_, sm, id, w, i) in &timed {
            let (fi, n) = seq[i as usize];
            let b = block_at(id as usize);
            sim.warp_instruction(prog, &mut scratch, n, folds[fi], sm as usize, b, w as usize);
        }
        return Ok(sim.finish());
    }
    let mut wave_blocks: Vec<(usize, [usize; 3])> = Vec::new();
    let mut issues: Vec<(usize, usize, usize, usize)> = Vec::new();
    for start in (0..nblocks).step_by(wave) {
        wave_blocks.clear();
        for id in start..(start + wave).min(nblocks) {
            wave_blocks.push(((id - start) % params.sms, block_at(id)));
        }
        // Issue order within a step: SM by SM, then the SM's blocks in launch order.
        wave_blocks.sort_by_key(|(sm, _)| *sm);
        let ninstr = prog.instructions.len();
        // Per fold point (the whole wave at once for drift), the warp instructions
        // `(fold point, instruction, block, warp)` in issue order, then their accesses.
        let parts = match order {
            IssueOrder::Drift { .. } | IssueOrder::Window { .. } => 1,
            IssueOrder::Lockstep if compiled => 1,
            _ => folds.len(),
        };
        for part in 0..parts {
            issues.clear();
            match order {
                IssueOrder::Drift { hundredths } if compiled => {
                    // Lockstep in the compiled order (a fold point is the issued instructions'
                    // average per fold point), each warp late by its delay.
                    let per_fold = prog.issued.iter().filter(|&&b| b).count() as f64
                        / folds.len().max(1) as f64;
                    let max = f64::from(hundredths) / 100.0 * per_fold;
                    timed_issues(
                        prog,
                        wave_blocks.len(),
                        nwarps,
                        |bi, w, _, _, i| i + drift_delay(start + bi, w, max),
                        &mut issues,
                    );
                }
                IssueOrder::Drift { hundredths } => {
                    // Each warp's instructions at their lockstep time plus its delay.
                    let max = f64::from(hundredths) / 100.0 * ninstr as f64;
                    timed_issues(
                        prog,
                        wave_blocks.len(),
                        nwarps,
                        |bi, w, fi, n, _| fi * ninstr + n + drift_delay(start + bi, w, max),
                        &mut issues,
                    );
                }
                IssueOrder::Lockstep if compiled => {
                    // Instruction by instruction in the compiled order.
                    timed_issues(
                        prog,
                        wave_blocks.len(),
                        nwarps,
                        |_, _, _, _, i| i,
                        &mut issues,
                    );
                }
                IssueOrder::Window { loads } => {
                    // The `i`-th issued instruction of a warp goes out at step `i + 1 - loads`
                    // (0 for the first burst).
                    let burst = loads.max(1) as usize;
                    timed_issues(
                        prog,
                        wave_blocks.len(),
                        nwarps,
                        |_, _, _, _, i| (i + 1).saturating_sub(burst),
                        &mut issues,
                    );
                }
                // Handled above, before the waves.
                IssueOrder::Timed(_) | IssueOrder::Launched => {}
                IssueOrder::Lockstep => {
                    for n in 0..ninstr {
                        for bi in 0..wave_blocks.len() {
                            issues.extend((0..nwarps).map(|w| (part, n, bi, w)));
                        }
                    }
                }
                IssueOrder::WarpBurst => {
                    for bi in 0..wave_blocks.len() {
                        for w in 0..nwarps {
                            issues.extend((0..ninstr).map(|n| (part, n, bi, w)));
                        }
                    }
                }
                IssueOrder::Interleave { .. } | IssueOrder::SchedulerBurst => {
                    // Scheduler-burst: scheduler `k` has the `k`-th of every round of
                    // `SCHEDULERS_PER_SM` warps and each issues one instruction per turn, which
                    // is lockstep among those warps, round after round.
                    let group = match order {
                        IssueOrder::Interleave { warps } => warps.max(1) as usize,
                        _ => SCHEDULERS_PER_SM,
                    };
                    // `wave_blocks` is sorted by SM: one run of blocks per SM, whose warps go
                    // in launch order.
                    let mut first = 0;
                    for on_sm in wave_blocks.chunk_by(|a, b| a.0 == b.0) {
                        let warps: Vec<(usize, usize)> = (first..first + on_sm.len())
                            .flat_map(|bi| (0..nwarps).map(move |w| (bi, w)))
                            .collect();
                        first += on_sm.len();
                        for together in warps.chunks(group) {
                            for n in 0..ninstr {
                                issues.extend(together.iter().map(|&(bi, w)| (part, n, bi, w)));
                            }
                        }
                    }
                }
            }
            for &(fi, n, bi, w) in &issues {
                // A load an earlier fold point of the thread made is in a register.
                if !prog.issues(fi, n) {
                    continue;
                }
                let (sm, b) = wave_blocks[bi];
                sim.warp_instruction(prog, &mut scratch, n, folds[fi], sm, b, w);
            }
        }
    }
    Ok(sim.finish())
}

/// The steady L1 hit rate of the reuse probe of `bench/l1-interleave.py` in the timed order:
/// one SM's wave of `blocks_per_sm` blocks of 256 threads, every warp re-reading its own lines
/// every `g` instructions of `k` lines (`n` instructions), the first touches left out; and the
/// cycles it took.
pub fn reuse_probe_hit_rate(
    params: &CacheParams,
    timing: &IssueTiming,
    k: usize,
    g: usize,
    n: usize,
) -> Result<(f64, u64), FootprintError> {
    params.check()?;
    if !(1..=params.warp_size).contains(&k) || g == 0 || n < g {
        return Err(FootprintError::BadParams(format!(
            "the reuse probe takes 1 to {} lines per instruction and at least g instructions (k {k}, g {g}, n {n})",
            params.warp_size
        )));
    }
    // The SMs share nothing but L2, which the probe's few lines fit: one SM stands for all.
    let one = CacheParams { sms: 1, ..*params };
    let mut sim = Sim::new(&one, L1Replacement::Lru);
    let blocks = one.blocks_per_sm;
    let probe = timed::ReuseProbe {
        blocks,
        warps: 256 / params.warp_size,
        k,
        g,
        n,
    };
    let cycles = timed::run(&mut sim, &probe, timing, timing.loads_in_flight(4));
    let c = sim.finish();
    let first =
        (blocks * probe.warps * g) as u64 * (c.l1_load_sectors / (blocks * probe.warps * n) as u64);
    let hits = c.l1_load_sectors - c.l2_load_sectors;
    Ok((hits as f64 / (c.l1_load_sectors - first) as f64, cycles))
}

/// A stencil sweep as [`timed::WarpWork`]: every warp issues the thread program's instructions
/// fold point by fold point, leaving out the loads a register holds.
struct StencilWork<'a> {
    prog: &'a MemoryProgram,
    /// `(fold point, instruction)` in issue order.
    seq: Vec<(usize, usize)>,
    /// Per entry of `seq`: whether it is a store.
    store: Vec<bool>,
    folds: Vec<[usize; 3]>,
    grid: [usize; 3],
    nblocks: usize,
    nwarps: usize,
}

impl timed::WarpWork for StencilWork<'_> {
    fn blocks(&self) -> usize {
        self.nblocks
    }
    fn warps(&self) -> usize {
        self.nwarps
    }
    fn len(&self) -> usize {
        self.seq.len()
    }
    fn is_store(&self, i: usize) -> bool {
        self.store[i]
    }
    fn perform(
        &self,
        sim: &mut Sim,
        sc: &mut Scratch,
        sm: usize,
        block: usize,
        w: usize,
        i: usize,
    ) -> Option<(usize, Served)> {
        let g = self.grid;
        let b = [block % g[0], (block / g[0]) % g[1], block / (g[0] * g[1])];
        let (fi, n) = self.seq[i];
        sim.warp_instruction(self.prog, sc, n, self.folds[fi], sm, b, w)
    }
}

/// Simulates one sweep in lockstep order and returns the volumes per lattice update, as
/// `footprint` defines them.
pub fn simulate(
    kernel: &Kernel,
    domain: &Domain,
    config: &LaunchConfig,
    params: &CacheParams,
) -> Result<DataVolumes, FootprintError> {
    simulate_in(
        kernel,
        domain,
        config,
        params,
        IssueOrder::Lockstep,
        L1Replacement::Lru,
    )
}

/// As [`simulate`], with the warps issuing in `order` and L1 replacing lines as `l1_replacement`.
pub fn simulate_in(
    kernel: &Kernel,
    domain: &Domain,
    config: &LaunchConfig,
    params: &CacheParams,
    order: IssueOrder,
    l1_replacement: L1Replacement,
) -> Result<DataVolumes, FootprintError> {
    let prog = MemoryProgram::new(kernel, domain, config)?;
    simulate_program(&prog, params, order, l1_replacement)
}

/// As [`simulate_in`], for a program built already (in its compiled issue order where it has
/// one, see [`simulate_program_counts`]).
pub fn simulate_program(
    prog: &MemoryProgram,
    params: &CacheParams,
    order: IssueOrder,
    l1_replacement: L1Replacement,
) -> Result<DataVolumes, FootprintError> {
    let c = simulate_program_counts(prog, params, order, l1_replacement)?;
    let n = prog.domain.points() as f64;
    let s = params.sector_bytes as f64;
    // The LRU L2 keeps partly written sectors until they complete; the measured early
    // write-backs are the visitor's charge, added alike.
    let early = crate::footprint::early_write_backs_program(prog, params)?;
    Ok(DataVolumes {
        l1_load_requests: c.l1_load_sectors as f64 * s / n,
        l1_wavefronts: c.l1_bank_passes as f64 / n
            + WAVEFRONTS_PER_EXTRA_LINE * c.l1_extra_lines as f64 / n,
        l2_load: c.l2_load_sectors as f64 * s / n,
        l2_store: c.l2_store_sectors as f64 * s / n,
        dram_load: c.dram_load_sectors as f64 * s / n + early,
        dram_store: c.dram_store_sectors as f64 * s / n + early,
    })
}
