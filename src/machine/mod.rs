//! GPU machine models and the occupancy calculation.
//!
//! Files live in `machines/*.toml` (read by `spec::load_machine`); the presets are compiled in so
//! the binary needs no data directory.

mod occupancy;

pub use occupancy::{Occupancy, OccupancyLimiter};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The preset names and their file texts, compiled in.
pub const PRESETS: [(&str, &str); 4] = [
    ("v100", include_str!("../../machines/v100.toml")),
    ("a100-40gb", include_str!("../../machines/a100-40gb.toml")),
    ("h100-sxm", include_str!("../../machines/h100-sxm.toml")),
    ("h200", include_str!("../../machines/h200.toml")),
];

/// The text of the preset called `name`.
pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The weight of data that takes the room of read data (serde's default for the store weights).
pub(crate) fn unit_weight() -> f64 {
    1.0
}

/// A reuse-miss curve of `(MiB, share)` points in bytes, checked as
/// [`crate::footprint::ReuseMisses::new`] checks it.
pub fn reuse_curve_in_bytes(mib: &[(f64, f64)]) -> Result<crate::footprint::ReuseMisses, String> {
    let bytes: Vec<(f64, f64)> = mib
        .iter()
        .map(|&(d, share)| (d * (1u64 << 20) as f64, share))
        .collect();
    crate::footprint::ReuseMisses::new(&bytes)
}

/// The distinct line counts of an [`MachineModel::l1_interleave`] table, rising: the points of
/// its curve for a launch (at most [`crate::footprint::INTERLEAVE_POINTS`] of them).
pub(crate) fn interleave_lines(table: &[(usize, usize, f64, f64)]) -> Vec<f64> {
    let mut lines: Vec<f64> = table.iter().map(|p| p.2).collect();
    lines.sort_by(f64::total_cmp);
    lines.dedup();
    lines
}

/// The share of `warps` resident warps at `lines` per load in the rows of one L1 size of an
/// interleave table (see [`MachineModel::l1_interleave_at`]).
fn interleave_share(table: &[(usize, usize, f64, f64)], warps: usize, lines: f64) -> f64 {
    let log2 = |x: f64| x.max(1.0).log2();
    let mut rows: Vec<usize> = table.iter().map(|p| p.1).collect();
    rows.dedup();
    let row_share = |w: usize| {
        crate::footprint::piecewise_linear(
            table
                .iter()
                .filter(|p| p.1 == w)
                .map(|p| (log2(p.2), p.3 / p.1 as f64)),
            log2(lines),
        )
        .unwrap_or(1.0)
    };
    let by_warps =
        std::iter::once((0.0, 1.0)).chain(rows.iter().map(|&w| (log2(w as f64), row_share(w))));
    crate::footprint::piecewise_linear(by_warps, log2(warps as f64)).unwrap_or(1.0)
}

/// The shares of an interleave table `t` for `warps` resident warps per SM and an L1 of
/// `l1_bytes` (see [`MachineModel::l1_interleave_at`]).
fn interleave_shares(
    t: &[(usize, usize, f64, f64)],
    warps: usize,
    l1_bytes: usize,
) -> crate::footprint::InterleaveShares {
    let mut sizes: Vec<usize> = t.iter().map(|p| p.0).collect();
    sizes.dedup();
    let rows = |kib: usize| &t[t.partition_point(|p| p.0 < kib)..t.partition_point(|p| p.0 <= kib)];
    let points: Vec<(f64, f64)> = interleave_lines(t)
        .into_iter()
        .map(|l| {
            let by_l1 = sizes
                .iter()
                .map(|&kib| ((kib * 1024) as f64, interleave_share(rows(kib), warps, l)));
            let share = crate::footprint::piecewise_linear(by_l1, l1_bytes as f64);
            (l, share.unwrap_or(1.0).clamp(f64::MIN_POSITIVE, 1.0))
        })
        .collect();
    crate::footprint::InterleaveShares::new(&points).unwrap_or_default()
}

/// A GPU as the model sees it. Bandwidths in bytes per second; sizes in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineModel {
    /// Short name (preset name or file stem).
    pub name: String,
    /// Human-readable device name.
    pub description: String,
    /// Streaming multiprocessors.
    pub sms: usize,
    /// SM clock in GHz.
    pub clock_ghz: f64,
    /// Threads per warp.
    pub warp_size: usize,
    /// Peak f32 flops per cycle per SM (an FMA counts two).
    pub fp32_flops_per_cycle_per_sm: f64,
    /// Peak f64 flops per cycle per SM (an FMA counts two).
    pub fp64_flops_per_cycle_per_sm: f64,
    /// L1 capacity per SM usable for cached loads.
    pub l1_bytes: usize,
    /// Ways of the L1's sets as the model sees them: lines fall into sets as if at random and a
    /// line is lost once that many others of its set came in since its last use (0: one fully
    /// associative LRU).
    #[serde(default)]
    pub l1_conflict_ways: usize,
    /// The ways of launches granted a smaller L1 (`bench/l1-policy.py`, `bench/l1-carveout.py`):
    /// `(L1 KiB, ways)`, KiB rising; a launch whose L1 is at most an entry's KiB takes the first
    /// such entry's ways, a larger one `l1_conflict_ways`. Empty: `l1_conflict_ways` for all.
    #[serde(default)]
    pub l1_conflict_ways_by_l1: Vec<(usize, usize)>,
    /// The L1's set function, where measured (`bench/l1-sets.py`); empty where not.
    #[serde(default)]
    pub l1_set_index: SetIndex,
    /// The warps of an SM whose loads L1 sees between two loads of one warp's burst (loads
    /// issued back to back), measured by granted L1, resident warps and lines per load
    /// instruction (`bench/l1-interleave.py`): `(L1 KiB, warps per SM, lines, effective warps)`,
    /// rising by L1, then warps, then lines; empty where not measured (every resident warp,
    /// lockstep).
    #[serde(default)]
    pub l1_interleave: Vec<(usize, usize, f64, f64)>,
    /// The SM's L1 and shared memory together, where known: a launch's L1 is what its
    /// shared-memory configuration leaves of it (`l1_bytes` is the L1 of the usual one).
    #[serde(default)]
    pub l1_shared_bytes: Option<usize>,
    /// Total L2 capacity.
    pub l2_bytes: usize,
    /// L2 capacity a single SM's data effectively sees (half on split-L2 parts).
    pub l2_effective_bytes: usize,
    /// The share of sectors L2 misses on reuse after a distance of so many MiB of distinct
    /// traffic, `(MiB, share)`, MiB rising (`bench/l2-traffic.py`, set `capacity`); empty where
    /// not measured (L2 is then a step at `l2_effective_bytes`).
    #[serde(default)]
    pub l2_reuse_misses: Vec<(f64, f64)>,
    /// The L2 room a written sector takes, in sectors of read data, in the distances the reuse
    /// misses are read at (`bench/l2-traffic.py`, set `wcapacity`); 1 where not measured.
    #[serde(default = "unit_weight")]
    pub l2_store_weight: f64,
    /// The factor a kernel's reuse distances take before [`MachineModel::l2_reuse_misses`] is
    /// read at them: that curve is a rescan of hits, a kernel's traffic between two reads carries
    /// misses, and L2 makes room for misses sooner (`bench/l2-traffic.py`, set `window`); fitted
    /// to the counter sweeps, 1 where not.
    #[serde(default = "unit_weight")]
    pub l2_reuse_distance_scale: f64,
    /// Sector size (transfer granularity between L1 and L2, L2 and DRAM).
    pub sector_bytes: usize,
    /// What L2 reads from DRAM on a read miss: the aligned group of sectors of this size around
    /// the one missed (`cudaLimitMaxL2FetchGranularity`; the sector size where not measured).
    pub l2_fetch_bytes: usize,
    /// L1 line size.
    pub line_bytes: usize,
    /// The share of the sectors a block completes in several store instructions (the words of
    /// AoS records) that L2 writes back before they are complete, each then costing a fill and
    /// a second write: `(warps per block, share)`, warps rising (`bench/l2-traffic.py`, set
    /// `partial`); empty where not measured (none lost).
    #[serde(default)]
    pub partial_store_loss: Vec<(usize, f64)>,
    /// The same share where a block's stores go out only once all its loads are back (a kernel
    /// whose every store needs every load: `bench/l2-traffic.py`, set `afterloads`), in the
    /// pairs of [`MachineModel::partial_store_loss`]; empty where not measured (that table's
    /// share stands).
    #[serde(default)]
    pub partial_store_loss_after_loads: Vec<(usize, f64)>,
    /// The same share where a block's stores also go out back to back, one record's words as
    /// consecutive instructions, once all its loads are back (`bench/l2-traffic.py`, set
    /// `storegap` with no arithmetic between the stores), in the pairs of
    /// [`MachineModel::partial_store_loss`]; empty where not measured (the share after loads
    /// stands).
    #[serde(default)]
    pub partial_store_loss_back_to_back: Vec<(usize, f64)>,
    /// The sectors a kernel holds partly written at a time over the GPU in its pairs of stores
    /// within one wave, counted as the visitor counts them (Little's law over its steps), above
    /// which L2 writes back `1 - limit / count` of the pairs whose stores are steps apart
    /// before their second store, in a kernel storing several arrays per point (D3Q19 SoA;
    /// `bench/partial-occupancy.py`), and of the sectors neighbouring blocks write at one step
    /// in every kernel ([`MachineModel::neighbour_drift_share`]); 0 where not measured (none
    /// written back so).
    #[serde(default)]
    pub partial_sector_limit: f64,
    /// How far apart, as a share of a block's run, blocks beside each other write their pieces
    /// of a sector they share at one step (their drift: tiles narrower than a sector, rows not
    /// aligned to sectors; AoS records one or two wide, whose words go out at one fold point),
    /// for [`MachineModel::partial_sector_limit`]'s count; 0 where not
    /// known (such a sector is complete at once).
    #[serde(default)]
    pub neighbour_drift_share: f64,
    /// The share of the sectors at the ends of rows not aligned to sectors, which blocks beside
    /// each other complete together at one step (tiles a sector wide or more), that L2 writes
    /// back early at the least, below [`MachineModel::partial_sector_limit`] too, in a kernel
    /// storing several arrays it does not read (D3Q19, D3Q27 and D2Q9 SoA with one ghost
    /// layer, H200); 0 where not measured (only the limit's law).
    #[serde(default)]
    pub row_end_write_back_share: f64,
    /// L1 wavefronts (128 B each) an SM processes per cycle.
    pub l1_wavefronts_per_cycle_per_sm: f64,
    /// Warp instructions that wait in front of an SM's L1 at most (0 where not known): with
    /// [`MachineModel::l2_latency_cycles`], the window of a warp's own AoS lines between two of
    /// its loads.
    #[serde(default)]
    pub l1_queue_instructions: usize,
    /// Cycles a load served by L2 takes (0 where not known).
    #[serde(default)]
    pub l2_latency_cycles: f64,
    /// L2 bandwidth.
    pub l2_bandwidth: f64,
    /// DRAM bandwidth.
    pub dram_bandwidth: f64,
    /// DRAM latency in nanoseconds (latency limiter at low occupancy).
    pub dram_latency_ns: f64,
    /// Largest block.
    pub max_threads_per_block: usize,
    /// Resident threads per SM.
    pub max_threads_per_sm: usize,
    /// Resident warps per SM.
    pub max_warps_per_sm: usize,
    /// Resident blocks per SM.
    pub max_blocks_per_sm: usize,
    /// 32-bit registers per SM.
    pub registers_per_sm: usize,
    /// Registers a thread may use.
    pub max_registers_per_thread: usize,
    /// Register allocation granularity per warp.
    pub register_alloc_unit: usize,
    /// Shared memory per SM.
    pub shared_bytes_per_sm: usize,
    /// Shared memory a block may use.
    pub max_shared_bytes_per_block: usize,
    /// Shared memory allocation granularity.
    pub shared_alloc_unit: usize,
    /// Shared memory the system reserves per resident block.
    pub reserved_shared_bytes_per_block: usize,
    /// Fixed cost of one kernel launch in seconds.
    pub launch_overhead_s: f64,
    /// Where each figure comes from (datasheet, measured, estimate), by key.
    pub sources: BTreeMap<String, String>,
}

/// A `(warps per block, share)` table at `warps`: linear in log2 of the warps between its points,
/// the nearest point's share outside them (0 where empty).
fn share_by_warps(table: &[(usize, f64)], warps: usize) -> f64 {
    let log2 = |w: usize| (w as f64).log2();
    crate::footprint::piecewise_linear(table.iter().map(|&(w, s)| (log2(w), s)), log2(warps))
        .unwrap_or(0.0)
}

/// [`share_by_warps`] where the table was measured; `None` where it is empty.
fn measured_share_by_warps(table: &[(usize, f64)], warps: usize) -> Option<f64> {
    (!table.is_empty()).then(|| share_by_warps(table, warps))
}

impl MachineModel {
    /// The names of all preset machines.
    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|(n, _)| *n).collect()
    }

    /// [`MachineModel::l2_reuse_misses`] in bytes, as the visitor takes it (checked when the
    /// file is read; an unchecked model that breaks its rules gets no curve).
    pub fn l2_reuse_curve(&self) -> crate::footprint::ReuseMisses {
        reuse_curve_in_bytes(&self.l2_reuse_misses).unwrap_or_default()
    }

    /// [`MachineModel::l1_interleave`] for `warps` resident warps per SM and an L1 of
    /// `l1_bytes`, as shares of them by lines per load instruction: at each measured L1, each
    /// line count's share (effective over resident warps, linear in log2 of the lines within a
    /// row of warps) is interpolated linearly in log2 of the warps between the rows, from a
    /// share of 1 at one warp, the last row's beyond the last; between two measured L1 sizes
    /// linearly in bytes, the nearest's beyond them. Empty where nothing was measured.
    pub fn l1_interleave_at(
        &self,
        warps: usize,
        l1_bytes: usize,
    ) -> crate::footprint::InterleaveShares {
        interleave_shares(&self.l1_interleave, warps, l1_bytes)
    }

    /// The interleave shares of a launch of `blocks_per_sm` blocks of `warps_per_block` warps
    /// and an L1 of `l1_bytes`: [`MachineModel::l1_interleave`] at the SM's resident warps,
    /// as [`MachineModel::l1_interleave_at`] reads it, where blocks start among others (as
    /// others finish, at unrelated fold points); none (lockstep) where one block fills the SM,
    /// whose warps all start together and issue their first fold point's loads side by side
    /// (`bench/warp-drift.py`: 0.00-0.01 of a fold point apart at its start; the table's
    /// probe measures warps in their steady state).
    pub fn l1_interleave_for(
        &self,
        warps_per_block: usize,
        blocks_per_sm: usize,
        l1_bytes: usize,
    ) -> crate::footprint::InterleaveShares {
        if blocks_per_sm == 1 {
            crate::footprint::InterleaveShares::default()
        } else {
            self.l1_interleave_at(warps_per_block * blocks_per_sm, l1_bytes)
        }
    }

    /// The ways ([`MachineModel::l1_conflict_ways`]) of a launch granted `l1_bytes` of L1, from
    /// [`MachineModel::l1_conflict_ways_by_l1`].
    pub fn l1_conflict_ways_at(&self, l1_bytes: usize) -> usize {
        self.l1_conflict_ways_by_l1
            .iter()
            .find(|&&(kib, _)| l1_bytes <= kib * 1024)
            .map_or(self.l1_conflict_ways, |&(_, ways)| ways)
    }

    /// The L1 beside a shared-memory configuration of `shared_bytes` (as ncu reports a launch's):
    /// the rest of [`MachineModel::l1_shared_bytes`]; `None` where that is unknown or the
    /// configuration leaves no L1.
    pub fn l1_bytes_beside_shared(&self, shared_bytes: usize) -> Option<usize> {
        self.l1_shared_bytes
            .and_then(|t| t.checked_sub(shared_bytes))
            .filter(|&l1| l1 > 0)
    }

    /// Whether L2 can read `bytes` per miss from DRAM: the sector size times a power of two, at
    /// most a line.
    pub fn can_fetch(&self, bytes: usize) -> bool {
        bytes.is_multiple_of(self.sector_bytes)
            && (bytes / self.sector_bytes).is_power_of_two()
            && bytes <= self.line_bytes
    }

    /// [`MachineModel::partial_store_loss`] at `warps` per block: linear in log2 of the warps
    /// between the measured points, the nearest point's share outside them (0 where none).
    pub fn partial_store_share(&self, warps: usize) -> f64 {
        share_by_warps(&self.partial_store_loss, warps)
    }

    /// [`MachineModel::partial_store_loss_after_loads`] at `warps` per block, as
    /// [`MachineModel::partial_store_share`] reads its table; `None` where not measured.
    pub fn partial_store_share_after_loads(&self, warps: usize) -> Option<f64> {
        measured_share_by_warps(&self.partial_store_loss_after_loads, warps)
    }

    /// [`MachineModel::partial_store_loss_back_to_back`] at `warps` per block, as
    /// [`MachineModel::partial_store_share`] reads its table; `None` where not measured.
    pub fn partial_store_share_back_to_back(&self, warps: usize) -> Option<f64> {
        measured_share_by_warps(&self.partial_store_loss_back_to_back, warps)
    }

    /// [`MachineModel::partial_store_share`] for the SM's `warps` resident warps storing
    /// together, which the visitor takes where the compiled code interleaves fold points' stores;
    /// 0 (the block's share stands) beyond the table's largest warps. The AoS sweeps show no
    /// SM-wide loss there: interleaved tiles at 40-48 warps per SM lose 0.09-0.16 of their record
    /// sectors, at 28-36 warps 0.35-0.88 (`bench/aos-store-share.py`). Those at 40-48 are all
    /// 40-48-register kernels, and one keeps its low loss at 32 and 16 warps too (`aos-reads.py`
    /// set `occstore`): the cap is what the evidence allows, not the occupancy's own effect.
    /// Threads whose stores span most of each fold point keep the SM's share beyond it
    /// ([`MachineModel::partial_store_share`] at the SM's warps, the table's last beyond it).
    pub fn partial_store_share_sm(&self, warps: usize) -> f64 {
        match self.partial_store_loss.last() {
            Some(&(most, _)) if warps <= most => self.partial_store_share(warps),
            _ => 0.0,
        }
    }

    /// Bandwidth of L1 wavefronts in bytes per second.
    pub fn l1_bandwidth(&self) -> f64 {
        self.l1_wavefronts_per_cycle_per_sm
            * self.line_bytes as f64
            * self.sms as f64
            * self.clock_ghz
            * 1e9
    }

    /// Peak flops per second for an element size of 4 (f32) or 8 (f64) bytes.
    pub fn peak_flops(&self, elem_size: usize) -> f64 {
        let per_cycle = if elem_size >= 8 {
            self.fp64_flops_per_cycle_per_sm
        } else {
            self.fp32_flops_per_cycle_per_sm
        };
        per_cycle * self.sms as f64 * self.clock_ghz * 1e9
    }
}

/// A set function linear over GF(2): bit `i` of a line's set is the parity of `line & masks[i]`,
/// `line` being the byte address divided by the line size (as GPUs index their L1 by XOR hashes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "Vec<u64>")]
pub struct SetIndex {
    bits: usize,
    masks: [u64; SetIndex::MAX_BITS],
}

impl SetIndex {
    /// The most set-index bits (65,536 sets).
    pub const MAX_BITS: usize = 16;

    /// The function of `masks`, one per set-index bit; they must be non-zero and independent
    /// (otherwise some sets could never be used).
    pub fn new(masks: &[u64]) -> Result<SetIndex, String> {
        if masks.len() > Self::MAX_BITS {
            return Err(format!(
                "{} set-index masks, at most {} are supported",
                masks.len(),
                Self::MAX_BITS
            ));
        }
        // Gaussian elimination over GF(2): every mask must add a new pivot.
        let mut basis: Vec<u64> = Vec::new();
        for (i, &m) in masks.iter().enumerate() {
            let mut v = m;
            for &b in &basis {
                v = v.min(v ^ b);
            }
            if v == 0 {
                return Err(format!(
                    "set-index mask {i} ({m:#x}) is zero or the XOR of earlier ones, so some sets could never be used"
                ));
            }
            basis.push(v);
            basis.sort_unstable_by(|a, b| b.cmp(a));
        }
        let mut out = SetIndex {
            bits: masks.len(),
            masks: [0; Self::MAX_BITS],
        };
        out.masks[..masks.len()].copy_from_slice(masks);
        Ok(out)
    }

    /// The masks, one per set-index bit.
    pub fn masks(&self) -> &[u64] {
        &self.masks[..self.bits]
    }

    /// Whether no function is given.
    pub fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// The number of sets (1 when empty).
    pub fn sets(&self) -> usize {
        1 << self.bits
    }

    /// The set of `line`.
    pub fn of(&self, line: u64) -> usize {
        self.masks()
            .iter()
            .enumerate()
            .map(|(i, m)| (((line & m).count_ones() & 1) as usize) << i)
            .sum()
    }
}

impl TryFrom<Vec<u64>> for SetIndex {
    type Error = String;
    fn try_from(v: Vec<u64>) -> Result<SetIndex, String> {
        SetIndex::new(&v)
    }
}

impl From<SetIndex> for Vec<u64> {
    fn from(s: SetIndex) -> Vec<u64> {
        s.masks().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::SetIndex;

    #[test]
    fn set_index_is_the_parity_of_each_mask() {
        let s = SetIndex::new(&[0b0011, 0b0100]).unwrap();
        assert_eq!(s.sets(), 4);
        assert_eq!(s.masks(), &[0b0011, 0b0100]);
        assert_eq!(s.of(0b0000), 0);
        assert_eq!(s.of(0b0001), 1);
        assert_eq!(s.of(0b0011), 0);
        assert_eq!(s.of(0b0110), 3);
        assert_eq!(s.of(0b1000), 0);
        // Linear: the set of a XOR b is the XOR of their sets.
        for (a, b) in [(5u64, 9u64), (1234, 4321), (7, 7)] {
            assert_eq!(s.of(a ^ b), s.of(a) ^ s.of(b));
        }
        assert!(SetIndex::default().is_empty());
        assert_eq!(SetIndex::default().sets(), 1);
        assert_eq!(SetIndex::default().of(12345), 0);
    }

    #[test]
    fn the_share_after_loads_is_its_own_table_where_measured() {
        // The H100's copy whose stores wait for all its loads (`l2-traffic.py`, set
        // `afterloads`) writes back 0.505 of its record sectors early at 32 warps, the copy
        // 0.602; with its stores also back to back (set `storegap`) 0.477.
        let h = crate::spec::load_machine("h100-sxm").unwrap();
        assert_eq!(h.partial_store_share_after_loads(32), Some(0.505));
        assert_eq!(h.partial_store_share(32), 0.602);
        assert_eq!(h.partial_store_share_back_to_back(32), Some(0.477));
        let s = h.partial_store_share_after_loads(24).unwrap();
        assert!(0.190 < s && s < 0.505, "{s}");
        // Back to back at 4 warps loses a third of what the stores after loads lose.
        assert_eq!(h.partial_store_share_back_to_back(4), Some(0.008));
        assert_eq!(h.partial_store_share_after_loads(4), Some(0.028));
        // Below its first measured point, the table's nearest share.
        assert_eq!(h.partial_store_share_back_to_back(1), Some(0.008));
        // The H200's: 0.426 against 0.517, back to back 0.389.
        let h200 = crate::spec::load_machine("h200").unwrap();
        assert_eq!(h200.partial_store_share_after_loads(32), Some(0.426));
        assert_eq!(h200.partial_store_share_back_to_back(32), Some(0.389));
        // Not measured (the V100): none.
        let v100 = crate::spec::load_machine("v100").unwrap();
        assert_eq!(v100.partial_store_share_after_loads(32), None);
        assert_eq!(v100.partial_store_share_back_to_back(32), None);
    }

    #[test]
    fn partial_store_share_interpolates_in_log_warps() {
        let mut m = crate::spec::load_machine("h100-sxm").unwrap();
        m.partial_store_loss = vec![(1, 0.02), (4, 0.04), (32, 0.64)];
        assert_eq!(m.partial_store_share(1), 0.02);
        assert!((m.partial_store_share(2) - 0.03).abs() < 1e-12);
        assert_eq!(m.partial_store_share(4), 0.04);
        // 8 warps: a third of the way from 4 to 32 in log2.
        assert!((m.partial_store_share(8) - 0.24).abs() < 1e-12);
        assert_eq!(m.partial_store_share(32), 0.64);
        assert_eq!(m.partial_store_share(64), 0.64);
        m.partial_store_loss.clear();
        assert_eq!(m.partial_store_share(8), 0.0);
    }

    #[test]
    fn the_sm_share_of_partly_written_records_stops_at_the_measured_warps() {
        let mut m = crate::spec::load_machine("h100-sxm").unwrap();
        m.partial_store_loss = vec![(1, 0.02), (4, 0.04), (32, 0.64)];
        assert!((m.partial_store_share_sm(8) - 0.24).abs() < 1e-12);
        assert_eq!(m.partial_store_share_sm(32), 0.64);
        assert_eq!(m.partial_store_share_sm(33), 0.0);
        assert_eq!(m.partial_store_share_sm(48), 0.0);
        m.partial_store_loss.clear();
        assert_eq!(m.partial_store_share_sm(8), 0.0);
    }

    #[test]
    fn l1_interleave_is_interpolated_by_warps_and_lines() {
        let mut m = crate::spec::load_machine("h100-sxm").unwrap();
        let kib = 1024;
        // The presets carry the measured table: 64 warps at 32 lines per load, 28.7 of them at
        // the usual L1; 64 warps at 1 line, 26.6 of them at 28 KiB.
        assert!((m.l1_interleave_at(64, 224 * kib).share(32.0) - 28.7 / 64.0).abs() < 1e-12);
        assert!((m.l1_interleave_at(64, 28 * kib).share(1.0) - 26.6 / 64.0).abs() < 1e-12);
        m.l1_interleave = vec![
            (224, 16, 2.0, 12.0),
            (224, 16, 8.0, 8.0),
            (224, 64, 8.0, 16.0),
        ];
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let at = |m: &super::MachineModel, w, l| m.l1_interleave_at(w, 224 * kib).share(l);
        assert!(close(at(&m, 16, 8.0), 0.5));
        assert!(close(at(&m, 16, 4.0), 0.625));
        assert!(close(at(&m, 16, 1.0), 0.75));
        assert!(close(at(&m, 64, 8.0), 0.25));
        // A row without a line count takes its nearest (64 warps has only 8 lines).
        assert!(close(at(&m, 64, 2.0), 0.25));
        // Between rows linear in log2 of the warps; from a share of 1 at one warp below them.
        assert!(close(at(&m, 32, 8.0), 0.375));
        assert!(close(at(&m, 4, 8.0), 0.75));
        assert!(close(at(&m, 1, 8.0), 1.0));
        assert!(close(at(&m, 128, 8.0), 0.25));
        // One L1 size measured: every L1 takes it.
        assert!(close(m.l1_interleave_at(16, 28 * kib).share(8.0), 0.5));
        // Between two L1 sizes linear in bytes; the nearest's beyond them.
        m.l1_interleave = vec![(28, 16, 8.0, 4.0), (124, 16, 8.0, 12.0)];
        assert!(close(m.l1_interleave_at(16, 28 * kib).share(8.0), 0.25));
        assert!(close(m.l1_interleave_at(16, 76 * kib).share(8.0), 0.5));
        assert!(close(m.l1_interleave_at(16, 124 * kib).share(8.0), 0.75));
        assert!(close(m.l1_interleave_at(16, 16 * kib).share(8.0), 0.25));
        assert!(close(m.l1_interleave_at(16, 248 * kib).share(8.0), 0.75));
        m.l1_interleave.clear();
        assert_eq!(m.l1_interleave_at(64, 224 * kib).share(8.0), 1.0);
    }

    #[test]
    fn one_block_per_sm_issues_its_first_burst_in_lockstep() {
        let m = crate::spec::load_machine("h100-sxm").unwrap();
        let kib = 1024;
        let at = |warps, blocks| m.l1_interleave_for(warps, blocks, 248 * kib).share(32.0);
        // One block of 32 warps: all of them between two loads of a warp's first burst; two
        // blocks of 16 warps: the table's 10.9 of 32 (224 KiB, the nearest).
        assert_eq!(at(32, 1), 1.0);
        assert_eq!(at(16, 1), 1.0);
        assert!((at(16, 2) - 10.9 / 32.0).abs() < 1e-12);
        assert_eq!(at(16, 2), m.l1_interleave_at(32, 248 * kib).share(32.0));
    }

    #[test]
    fn smaller_l1s_take_their_listed_ways() {
        let mut m = crate::spec::load_machine("h100-sxm").unwrap();
        let kib = 1024;
        // The preset: 1 way at 28 KiB, 2 up to 60, 3 up to 92, the usual 4 above.
        let ways: Vec<usize> = [28, 40, 60, 92, 124, 224, 248]
            .iter()
            .map(|&k| m.l1_conflict_ways_at(k * kib))
            .collect();
        assert_eq!(ways, [1, 2, 2, 3, 4, 4, 4]);
        m.l1_conflict_ways_by_l1.clear();
        assert_eq!(m.l1_conflict_ways_at(28 * kib), m.l1_conflict_ways);
    }

    #[test]
    fn dependent_masks_are_refused() {
        assert!(SetIndex::new(&[1, 2, 3]).unwrap_err().contains("mask 2"));
        assert!(SetIndex::new(&[0]).is_err());
        assert!(SetIndex::new(&[0b110, 0b011, 0b101]).is_err());
        assert!(SetIndex::new(&[0b110, 0b011, 0b111]).is_ok());
        let json = serde_json::to_string(&SetIndex::new(&[6, 3]).unwrap()).unwrap();
        assert_eq!(json, "[6,3]");
        assert!(serde_json::from_str::<SetIndex>("[1,1]").is_err());
    }
}
