//! The timed issue order ([`IssueOrder::Timed`](super::IssueOrder::Timed)): which warp's
//! instruction the L1 sees next follows from a small timing model of an SM instead of a fixed
//! order, so that warps whose loads hit run ahead of warps waiting for L2, as on the GPU.
//!
//! Per SM: the resident warps each keep up to `loads_in_flight` loads outstanding (the compiled
//! code issues a batch of loads, then one per arithmetic step that consumes the oldest); a store
//! waits for every earlier load of its warp. Issued instructions wait in a FIFO queue of `queue`
//! entries in front of the L1, which serves one line per cycle (a warp instruction touching `k`
//! lines holds it `k` cycles) and looks the lines up when it starts serving; a load completes
//! after the L1, L2 or DRAM latency of its slowest sector. When the queue has room, the SM issues
//! from the warp that issued last if it can go on, else from the oldest warp that can (greedy
//! then oldest, GTO). Blocks start in launch order on the first SM with a free slot (the first
//! wave dealt round-robin, as the other orders place it); the SMs share L2 in time order. Where
//! the model limits L2's bandwidth, each SM's L1 misses queue for its share of it, so a load that
//! misses waits longer when misses crowd (the warps then take more turns between two loads).

use super::{Scratch, Served, Sim};
use crate::footprint::FootprintError;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Parameters of the timed issue order; cycles are SM clock cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssueTiming {
    /// Registers per thread that hold loads in flight; a warp keeps
    /// `load_registers × 4 / element bytes` loads outstanding (SASS of the 32-register stencil
    /// kernels: 22-23 f32 or 11-12 f64 loads, `nvcc -arch=sm_90`).
    pub load_registers: u32,
    /// Warp instructions that wait in front of the L1 at most.
    pub queue: u32,
    /// Latency of a load served by L1.
    pub l1_cycles: u32,
    /// Latency of a load served by L2.
    pub l2_cycles: u32,
    /// Latency of a load served by DRAM.
    pub dram_cycles: u32,
    /// Sectors an SM's L1 misses may fetch from L2 per 1,000 cycles (the SM's share of L2's
    /// bandwidth); 0: unlimited, each miss waits its latency only.
    pub l2_sectors_per_kcycle: u32,
}

impl Default for IssueTiming {
    /// Fitted to `bench/l1-interleave.py` on the H200 (`examples/reuse_probe_sim.rs`): one load
    /// in flight per warp and 16 instructions queued match the 64-warp rows; the SASS batch of
    /// 22 registers makes the warps burst, which the GPU's L1 does not see. Latencies from
    /// published Hopper microbenchmarks, rounded.
    fn default() -> IssueTiming {
        IssueTiming {
            load_registers: 1,
            queue: 16,
            l1_cycles: 35,
            l2_cycles: 270,
            dram_cycles: 570,
            l2_sectors_per_kcycle: 0,
        }
    }
}

impl std::str::FromStr for IssueTiming {
    type Err = FootprintError;

    /// Parses `registers,queue,l1,l2,dram[,l2_rate]`, five or six positive integers (the sixth:
    /// L2 sectors per SM per 1,000 cycles).
    fn from_str(s: &str) -> Result<IssueTiming, FootprintError> {
        let v: Vec<u32> = s
            .split(',')
            .map(|x| x.trim().parse::<u32>().ok().filter(|&v| v > 0))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                FootprintError::BadTiming(format!("`{s}` is not five or six positive integers"))
            })?;
        match *v.as_slice() {
            [load_registers, queue, l1_cycles, l2_cycles, dram_cycles, ref rate @ ..]
                if rate.len() <= 1 =>
            {
                Ok(IssueTiming {
                    load_registers,
                    queue,
                    l1_cycles,
                    l2_cycles,
                    dram_cycles,
                    l2_sectors_per_kcycle: rate.first().copied().unwrap_or(0),
                })
            }
            _ => Err(FootprintError::BadTiming(format!(
                "`{s}` has {} numbers; give registers,queue,l1,l2,dram and optionally L2 sectors \
                 per SM per 1,000 cycles (e.g. 1,16,35,270,570 or 1,16,35,270,570,600)",
                v.len()
            ))),
        }
    }
}

impl IssueTiming {
    /// Loads a warp keeps outstanding for elements of `elem_bytes` bytes (at least one).
    pub fn loads_in_flight(&self, elem_bytes: usize) -> usize {
        ((self.load_registers as usize * 4) / elem_bytes.max(1)).max(1)
    }

    fn latency(&self, s: Served) -> u64 {
        u64::from(match s {
            Served::L1 => self.l1_cycles,
            Served::L2 => self.l2_cycles,
            Served::Dram => self.dram_cycles,
        })
    }
}

/// The work of a grid: per warp, the same sequence of memory instructions.
pub(super) trait WarpWork {
    /// Blocks of the grid, in launch order.
    fn blocks(&self) -> usize;
    /// Warps per block.
    fn warps(&self) -> usize;
    /// Memory instructions per warp.
    fn len(&self) -> usize;
    /// Whether instruction `i` is a store.
    fn is_store(&self, i: usize) -> bool;
    /// Performs instruction `i` of warp `w` of block `block` on SM `sm`: the lines it touched
    /// and the level that served it, `None` where it touched nothing.
    fn perform(
        &self,
        sim: &mut Sim,
        sc: &mut Scratch,
        sm: usize,
        block: usize,
        w: usize,
        i: usize,
    ) -> Option<(usize, Served)>;
}

/// Completion time of an instruction issued and not yet served.
const PENDING: u64 = u64::MAX;

struct Warp {
    /// Slot of the block it belongs to on its SM.
    slot: usize,
    /// Its block, in launch order.
    block: usize,
    w: usize,
    /// Next instruction to issue.
    cursor: usize,
    /// Cycle the warp may issue its next instruction from (after its last issue or its start).
    next_issue: u64,
    /// Completion time of instruction `i` at `i % ring.len()` ([`PENDING`] until served).
    ring: Vec<u64>,
    /// Issued, not yet served.
    pending: usize,
    /// The latest completion of its served instructions.
    done: u64,
}

struct Slot {
    /// Warps still running.
    running: usize,
    /// When its last warp finished (its block's end).
    end: u64,
}

struct Sm {
    warps: Vec<Warp>,
    slots: Vec<Option<Slot>>,
    /// `(warp index, instruction)` issued, in arrival order.
    queue: VecDeque<(usize, usize)>,
    /// Cycle the L1 is free to serve the next instruction.
    free: u64,
    /// The warp that issued last (greedy choice).
    greedy: Option<usize>,
    /// Cycle the SM may issue its next memory instruction from (one per cycle).
    next_admit: u64,
    /// Cycle (in thousandths) from which the SM's share of L2's bandwidth is free.
    l2_free: u64,
}

impl Sm {
    /// When warp `k` can issue its next instruction, `None` while it waits for an instruction
    /// not yet served or has none left.
    fn ready_at(&self, k: usize, work: &impl WarpWork) -> Option<u64> {
        let wp = &self.warps[k];
        if wp.cursor >= work.len() {
            return None;
        }
        let dep = if work.is_store(wp.cursor) {
            // The value stored depends on every earlier load.
            if wp.pending > 0 {
                return None;
            }
            wp.done
        } else if wp.cursor >= wp.ring.len() {
            // The oldest load in flight must have arrived (consumed by the next arithmetic).
            let c = wp.ring[wp.cursor % wp.ring.len()];
            if c == PENDING {
                return None;
            }
            c
        } else {
            0
        };
        Some(dep.max(wp.next_issue))
    }

    /// Removes warp `k`, which has issued and been served everything, from its block.
    fn retire(&mut self, k: usize) {
        let wp = self.warps.remove(k);
        let b = self.slots[wp.slot]
            .as_mut()
            .expect("a running warp's block");
        b.running -= 1;
        b.end = b.end.max(wp.done);
        // Indices in the queue and the greedy choice shift down past `k`.
        for q in self.queue.iter_mut() {
            if q.0 > k {
                q.0 -= 1;
            }
        }
        self.greedy = match self.greedy {
            Some(g) if g == k => None,
            Some(g) if g > k => Some(g - 1),
            g => g,
        };
    }

    /// The warp the SM issues from at cycle `t`: the greedy one if it can, else the oldest
    /// that can (warps are kept in age order).
    fn pick(&self, t: u64, work: &impl WarpWork) -> Option<usize> {
        if let Some(g) = self.greedy {
            if self.ready_at(g, work).is_some_and(|r| r <= t) {
                return Some(g);
            }
        }
        (0..self.warps.len()).find(|&k| self.ready_at(k, work).is_some_and(|r| r <= t))
    }
}

/// Runs `work` on the machine of `sim` in the timed order; returns the cycles the grid took.
pub(super) fn run(
    sim: &mut Sim,
    work: &impl WarpWork,
    timing: &IssueTiming,
    in_flight: usize,
) -> u64 {
    let p = sim.p;
    let sms = p.sms;
    let per_sm = p.blocks_per_sm.max(1);
    let queue = timing.queue.max(1) as usize;
    let nblocks = work.blocks();
    let mut state: Vec<Sm> = (0..sms)
        .map(|_| Sm {
            warps: Vec::new(),
            slots: (0..per_sm).map(|_| None).collect(),
            queue: VecDeque::new(),
            free: 0,
            greedy: None,
            next_admit: 0,
            l2_free: 0,
        })
        .collect();
    let mut next_block = 0;
    // A block of warps with nothing to issue is over as it starts.
    let warps = if work.len() == 0 { 0 } else { work.warps() };
    let start = |sm: &mut Sm, slot: usize, block: usize, t: u64| {
        sm.slots[slot] = Some(Slot {
            running: warps,
            end: t,
        });
        for w in 0..warps {
            sm.warps.push(Warp {
                slot,
                block,
                w,
                cursor: 0,
                next_issue: t,
                ring: vec![0; in_flight],
                pending: 0,
                done: t,
            });
        }
    };
    // The first wave, dealt round-robin in launch order.
    for round in 0..per_sm {
        for st in state.iter_mut() {
            if next_block >= nblocks {
                break;
            }
            start(st, round, next_block, 0);
            next_block += 1;
        }
    }
    let mut sc = Scratch::default();
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..sms).map(|s| Reverse((0, s))).collect();
    // The time each SM is due at (stale heap entries are skipped).
    let mut due: Vec<u64> = vec![0; sms];
    let mut end = 0;
    while let Some(Reverse((t, s))) = heap.pop() {
        if due[s] != t {
            continue;
        }
        end = end.max(t);
        let st = &mut state[s];
        loop {
            let mut progressed = false;
            // Serve the head of the queue.
            if st.free <= t {
                if let Some((k, i)) = st.queue.pop_front() {
                    let (block, w) = (st.warps[k].block, st.warps[k].w);
                    let before = sim.c.l2_load_sectors;
                    let (busy, done) = match work.perform(sim, &mut sc, s, block, w, i) {
                        None => (0, t),
                        Some((lines, served)) => {
                            let busy = lines.max(1) as u64;
                            let lat = if work.is_store(i) {
                                0
                            } else {
                                timing.latency(served)
                            };
                            // The instruction's misses leave the SM once the earlier ones
                            // have, at its share of L2's bandwidth (in thousandths of a cycle).
                            let missed = sim.c.l2_load_sectors - before;
                            let rate = u64::from(timing.l2_sectors_per_kcycle);
                            let mut done = t + busy + lat;
                            if rate > 0 && missed > 0 {
                                st.l2_free =
                                    st.l2_free.max((t + busy) * 1000) + missed * 1_000_000 / rate;
                                done = done.max(st.l2_free.div_ceil(1000) + lat);
                            }
                            (busy, done)
                        }
                    };
                    st.free = t + busy;
                    let wp = &mut st.warps[k];
                    let n = wp.ring.len();
                    wp.ring[i % n] = done;
                    wp.pending -= 1;
                    wp.done = wp.done.max(done);
                    if wp.cursor >= work.len() && wp.pending == 0 {
                        st.retire(k);
                    }
                    progressed = true;
                }
            }
            // Issue one instruction per cycle while the queue has room.
            let pick = if st.queue.len() < queue && st.next_admit <= t {
                st.pick(t, work)
            } else {
                None
            };
            if let Some(k) = pick {
                let wp = &mut st.warps[k];
                let n = wp.ring.len();
                wp.ring[wp.cursor % n] = PENDING;
                st.queue.push_back((k, wp.cursor));
                wp.cursor += 1;
                wp.pending += 1;
                wp.next_issue = t + 1;
                st.next_admit = t + 1;
                st.greedy = Some(k);
                progressed = true;
            }
            // Free the slots of finished blocks and start the next blocks in them.
            for slot in 0..per_sm {
                let finished = matches!(&st.slots[slot], Some(b) if b.running == 0 && b.end <= t);
                if finished {
                    st.slots[slot] = None;
                }
                if st.slots[slot].is_none() && next_block < nblocks {
                    start(st, slot, next_block, t);
                    next_block += 1;
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
        // The next cycle something can happen on this SM.
        let mut next = u64::MAX;
        if !st.queue.is_empty() {
            next = next.min(st.free.max(t + 1));
        }
        if st.queue.len() < queue {
            for k in 0..st.warps.len() {
                if let Some(r) = st.ready_at(k, work) {
                    next = next.min(r.max(st.next_admit).max(t + 1));
                }
            }
        }
        for b in st.slots.iter().flatten() {
            if b.running == 0 {
                next = next.min(b.end.max(t + 1));
            }
        }
        if next != u64::MAX {
            due[s] = next;
            heap.push(Reverse((next, s)));
        }
    }
    end
}

/// The reuse probe of `bench/l1-interleave.py` as [`WarpWork`]: every warp reads its own `g·k`
/// lines cyclically, instruction `i` touching the `k` lines of group `i mod g` (lane `j` line
/// `j mod k`, 4-byte word `j div k`).
pub(super) struct ReuseProbe {
    /// Blocks of the grid.
    pub blocks: usize,
    /// Warps per block.
    pub warps: usize,
    /// Lines per instruction (1 to 32).
    pub k: usize,
    /// The reuse gap in instructions.
    pub g: usize,
    /// Instructions per warp.
    pub n: usize,
}

impl WarpWork for ReuseProbe {
    fn blocks(&self) -> usize {
        self.blocks
    }
    fn warps(&self) -> usize {
        self.warps
    }
    fn len(&self) -> usize {
        self.n
    }
    fn is_store(&self, _: usize) -> bool {
        false
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
        let line = sim.p.line_bytes as i64;
        let sector = sim.p.sector_bytes as i64;
        let warp = (block * self.warps + w) as i64;
        let (k, g) = (self.k as i64, self.g as i64);
        sc.lines.clear();
        for j in 0..sim.p.warp_size as i64 {
            let l = warp * g * k + (i as i64 % g) * k + j % k;
            sc.lines.push((l * line + (j / k) * 4) / sector);
        }
        sc.lines.sort_unstable();
        sc.lines.dedup();
        let mut served = Served::L1;
        for idx in 0..sc.lines.len() {
            let s = sc.lines[idx];
            sim.c.l1_load_sectors += 1;
            served = served.max(sim.load(sm, s as u64));
        }
        Some((self.k.min(sim.p.warp_size), served))
    }
}
