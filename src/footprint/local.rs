//! Local memory: the register spills of the compiled code (issue 8).
//!
//! Where ptxas runs out of registers it keeps values on the thread's stack (`STL`, then `LDL`),
//! accesses the emitted source does not have. Their order among the global accesses comes from
//! the SASS ([`LocalAccess`]). A stack word is interleaved across the warp's lanes, so a warp's
//! access of one word is one line of `lanes × 4` bytes, and each word is a line of its own.
//!
//! - **Stores** are written through to L2, every byte (as global stores are).
//! - **Loads** hit L1 where the lines the SM's resident warps touched since the word's previous
//!   access, all warps in step, stay below the L1's capacity (an LRU: the global loads' misses
//!   and every stack access); else they load from L2.
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
//! `l2_store_weight` of L2's room. The spills' own traffic does not change the global
//! estimate (the lines they take from L1 and L2 are left out of the global reuses).

use super::{CacheParams, DataVolumes, LocalAccess, MemoryProgram};
use crate::ir::AccessKind;
use std::collections::HashMap;

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
    let l2_miss = |bytes: f64| -> f64 {
        match params.l2_reuse_misses.share_at(bytes) {
            Some(m) => m,
            None => f64::from(u8::from(bytes >= params.l2_bytes as f64)),
        }
    };

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

    // L1, in issue order: a load hits where every word's previous access is near enough.
    let l1_room = params.l1_bytes as f64 / sm_lines;
    let mut l1_seen: HashMap<u32, usize> = HashMap::new();
    // Per stack word, its L2 accesses: (step, store).
    let mut l2_seen: HashMap<u32, Vec<(usize, bool)>> = HashMap::new();
    let mut out = DataVolumes::default();
    let l1_prefix = prefix_sums(steps.iter().map(|(s, _)| s.l1));
    for at in 0..steps.len() {
        if let (_, Some(a)) = steps[at] {
            let bytes = a.bytes as f64;
            let near = |j: usize| l1_prefix[at] - l1_prefix[j + 1] < l1_room;
            let hit = !a.store && a.words().all(|w| l1_seen.get(&w).is_some_and(|&j| near(j)));
            for w in a.words() {
                l1_seen.insert(w, at);
            }
            if a.store {
                out.l2_store += bytes;
            } else if !hit {
                out.l2_load += bytes;
            }
            if !hit {
                let weight = if a.store { params.l2_store_weight } else { 1.0 };
                steps[at].0.l2 = bytes * weight;
                for w in a.words() {
                    l2_seen.entry(w).or_default().push((at, a.store));
                }
            }
        }
    }

    // L2: distances in the GPU's bytes between two accesses, wrapping to the next block.
    let l2_prefix = prefix_sums(steps.iter().map(|(s, _)| s.l2));
    let total = l2_prefix[steps.len()];
    let gap = |j: usize, i: usize| -> f64 {
        let between = if j < i {
            l2_prefix[i] - l2_prefix[j + 1]
        } else {
            total - l2_prefix[j + 1] + l2_prefix[i]
        };
        between * gpu_lines
    };
    for touches in l2_seen.values() {
        let n = touches.len();
        for (k, &(i, store)) in touches.iter().enumerate() {
            let prev = touches[(k + n - 1) % n].0;
            if !store {
                out.dram_load += 4.0 * l2_miss(gap(prev, i));
                continue;
            }
            // Kept until the next write of the word (cyclically: the next block's).
            let mut kept = 1.0;
            let mut m = k;
            loop {
                let nm = (m + 1) % n;
                kept *= 1.0 - l2_miss(gap(touches[m].0, touches[nm].0));
                m = nm;
                if touches[m].1 {
                    break;
                }
            }
            out.dram_store += 4.0 * (1.0 - kept);
        }
    }
    // Per thread → per lattice update. A warp's access of a stack word is one line: one
    // wavefront per 4 bytes a thread moves.
    let moved: u32 = prog.local.iter().map(|a| a.bytes).sum();
    DataVolumes {
        l1_load_requests: 0.0,
        l1_wavefronts: moved as f64 / 4.0 / (lanes * cells),
        l2_load: out.l2_load / cells,
        l2_store: out.l2_store / cells,
        dram_load: out.dram_load / cells,
        dram_store: out.dram_store / cells,
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
