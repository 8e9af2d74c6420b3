//! Local memory: the register spills of the compiled code (issue 8).
//!
//! Where ptxas runs out of registers it keeps values on the thread's stack (`STL`, then `LDL`),
//! accesses the emitted source does not have. Their order among the global accesses comes from
//! the SASS ([`LocalAccess`]). A stack word is interleaved across the warp's lanes, so a warp's
//! access of one word is one line of `lanes × 4` bytes, and each word is a line of its own.
//!
//! - **Stores** are written through to L2, every byte (as global stores are).
//! - **Loads** hit L1 as the visitor's L1 keeps a line (sets of `l1_conflict_ways` ways filled at
//!   random; an LRU at 0 ways) over the lines the SM's resident warps touched since the word's
//!   previous access, all warps in step (the global loads' misses and every stack access); else
//!   they load from L2.
//! - **L2** keeps a word as it keeps any reuse: with the machine's measured miss share at the
//!   distance, the bytes the GPU's warps moved through L2 since the word's last L2 access (a
//!   step at the effective capacity where no curve is known). A load that misses reads DRAM.
//! - **Write-back**: a written word costs a DRAM write where L2 evicts it before its next write,
//!   by the thread itself or by the thread that takes the warp's slot next (the same stack
//!   addresses, a block's run later): one minus the product of the hit shares of the gaps
//!   between its L2 accesses up to that write.
//!
//! Global loads bring the estimate's L2 load into L1 and L2, spread evenly over the thread's
//! load instructions, and global stores its L2 store; written bytes take the machine's
//! `l2_store_weight` of L2's room. The stack's lines narrow the global reuses' share of L1
//! ([`global_l1_share`]); the room they take in L2 is left out of the global reuses.

use super::{CacheParams, DataVolumes, LocalAccess, MemoryProgram};
use crate::ir::AccessKind;
use std::collections::{BTreeMap, HashMap};

/// One access of the thread's merged sequence, with what it moves per thread.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Bytes of distinct lines touched in L1 (per thread).
    l1: f64,
    /// Bytes through L2 (per thread; written ones weighted).
    l2: f64,
}

/// The volumes the spills of `prog` add to `global` (its estimate without them), per lattice
/// update: L2 store, L2 load, DRAM load and DRAM store; zero where it has none.
pub(crate) fn spill_volumes(
    prog: &MemoryProgram,
    params: &CacheParams,
    global: &DataVolumes,
) -> DataVolumes {
    let Some(order) = prog
        .compiled_order
        .as_deref()
        .filter(|_| !prog.local.is_empty())
    else {
        return DataVolumes::default();
    };
    let threads: usize = prog.config.block.iter().product();
    let warp = params.warp_size.max(1);
    let lanes = threads.min(warp) as f64;
    let warps_per_sm = (threads.div_ceil(warp) * params.blocks_per_sm) as f64;
    let cells = prog.config.fold.iter().product::<usize>() as f64;
    let is_store = |&(_, ins): &(usize, usize)| prog.instructions[ins].kind == AccessKind::Store;
    let stores = order.iter().filter(|s| is_store(s)).count();
    let loads = order.len() - stores;
    // Per thread and global instruction: the estimate's L2 traffic spread evenly.
    let per_load = if loads > 0 {
        global.l2_load * cells / loads as f64
    } else {
        0.0
    };
    let per_store = if stores > 0 {
        global.l2_store * cells / stores as f64 * params.l2_store_weight
    } else {
        0.0
    };
    let sm_lines = lanes * warps_per_sm;
    let gpu_lines = sm_lines * params.sms as f64;

    // The merged sequence: global entries, and the stack accesses at their positions.
    let mut steps: Vec<(Step, Option<LocalAccess>)> =
        Vec::with_capacity(order.len() + prog.local.len());
    let mut next = prog.local.iter().peekable();
    for (i, entry) in order.iter().enumerate() {
        while let Some(a) = next.next_if(|a| a.position == i) {
            steps.push((stack_step(a), Some(*a)));
        }
        let l2 = if is_store(entry) { per_store } else { per_load };
        let l1 = if is_store(entry) { 0.0 } else { per_load };
        steps.push((Step { l1, l2 }, None));
    }
    steps.extend(next.map(|a| (stack_step(a), Some(*a))));

    // L1, in issue order: each word of a load survives the lines touched since its previous
    // access as the visitor's L1 keeps a line (sets of `l1_conflict_ways` ways filled at random;
    // an LRU at 0 ways). A store always reaches L2.
    let l1_room = params.l1_bytes as f64 / sm_lines;
    let l1_prefix = prefix_sums(steps.iter().map(|(s, _)| s.l1));
    let mut l1_seen: HashMap<u32, usize> = HashMap::new();
    // Per stack word, its accesses L2 may see: (step, store, chance that L1 missed). Ordered by
    // word, so that the sums over the words come out the same on every run.
    let mut l2_seen: BTreeMap<u32, Vec<(usize, bool, f64)>> = BTreeMap::new();
    let mut out = DataVolumes::default();
    for at in 0..steps.len() {
        let Some(a) = steps[at].1 else { continue };
        let mut l2_bytes = 0.0;
        for w in a.words() {
            let miss = match l1_seen.insert(w, at) {
                Some(j) if !a.store => {
                    let fill = (l1_prefix[at] - l1_prefix[j + 1]) / l1_room;
                    1.0 - super::block::l1_survival(fill, params.l1_conflict_ways)
                }
                _ => 1.0,
            };
            if miss > 0.0 {
                l2_seen.entry(w).or_default().push((at, a.store, miss));
            }
            if a.store {
                l2_bytes += 4.0 * params.l2_store_weight;
            } else {
                out.l2_load += 4.0 * miss;
                l2_bytes += 4.0 * miss;
            }
        }
        steps[at].0.l2 = l2_bytes;
    }

    // L2: distances in the GPU's bytes between two accesses, wrapping to the next block.
    let l2_prefix = prefix_sums(steps.iter().map(|(s, _)| s.l2));
    let total = l2_prefix[steps.len()];
    let kept = |j: usize, i: usize| -> f64 {
        let between = if j < i {
            l2_prefix[i] - l2_prefix[j + 1]
        } else {
            total - l2_prefix[j + 1] + l2_prefix[i]
        };
        1.0 - params.l2_miss_at(between * gpu_lines)
    };
    for touches in l2_seen.values() {
        let n = touches.len();
        let before = |k: usize, back: usize| touches[(k + n * 2 - back) % n];
        for (k, &(i, store, seen)) in touches.iter().enumerate() {
            if !store {
                // The last access L2 saw before this one: the previous one where L1 missed.
                let mut unseen = 1.0;
                let mut hit = 0.0;
                for back in 1..=n {
                    let (j, s, m) = before(k, back);
                    hit += unseen * m * kept(j, i);
                    unseen *= 1.0 - m;
                    if s || unseen == 0.0 {
                        break;
                    }
                }
                out.dram_load += 4.0 * seen * (1.0 - hit);
                continue;
            }
            // Kept until the next write of the word (cyclically: the next block's), through
            // every gap between the accesses L2 sees. `chain` holds each access from this
            // write on with the chance that L2 sees it and still holds the word there.
            let mut chain: Vec<(usize, f64, f64)> = vec![(i, 1.0, 1.0)];
            for ahead in 1..=n {
                let (t, s, m) = touches[(k + ahead) % n];
                let mut reach = 0.0;
                let mut unseen = 1.0;
                for &(j, held, mj) in chain.iter().rev() {
                    // `j` is the last access L2 saw only where the ones after it were missed.
                    reach += held * unseen * kept(j, t);
                    unseen *= 1.0 - mj;
                    if unseen == 0.0 {
                        break;
                    }
                }
                if s {
                    out.dram_store += 4.0 * (1.0 - reach);
                    break;
                }
                chain.push((t, reach * m, m));
            }
        }
    }
    // Per thread → per lattice update. A warp's access of a stack word is one line: one
    // wavefront per 4 bytes a thread moves.
    let moved: u32 = prog.local.iter().map(|a| a.bytes).sum();
    DataVolumes {
        l1_load_requests: 0.0,
        l1_wavefronts: moved as f64 / 4.0 / (lanes * cells),
        l2_load: out.l2_load / cells,
        l2_store: spilled_store_bytes(prog),
        dram_load: out.dram_load / cells,
        dram_store: out.dram_store / cells,
    }
}

/// The bytes per lattice update the spills store, all of which reach L2.
pub(crate) fn spilled_store_bytes(prog: &MemoryProgram) -> f64 {
    let cells = prog.config.fold.iter().product::<usize>() as f64;
    let stored: u32 = prog.local.iter().filter(|a| a.store).map(|a| a.bytes).sum();
    stored as f64 / cells
}

/// The share of the lines L1 takes in that are global ones, where the thread also moves
/// `prog`'s stack accesses: the global loads' L2 load (`global`) against every stack access.
pub(crate) fn global_l1_share(prog: &MemoryProgram, global: &DataVolumes) -> f64 {
    let cells = prog.config.fold.iter().product::<usize>() as f64;
    let stack: u32 = prog.local.iter().map(|a| a.bytes).sum();
    let own = global.l2_load * cells;
    if own + stack as f64 > 0.0 {
        own / (own + stack as f64)
    } else {
        1.0
    }
}

/// A stack access's step before L1 decides it: every access touches its lines (a hit moves them
/// up L1's LRU stack too); what reaches L2 is set once L1 has missed.
fn stack_step(a: &LocalAccess) -> Step {
    Step {
        l1: a.bytes as f64,
        l2: 0.0,
    }
}

/// `[0, x0, x0 + x1, …]`.
fn prefix_sums(xs: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut out = vec![0.0];
    for x in xs {
        out.push(out[out.len() - 1] + x);
    }
    out
}
