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
    /// Total L2 capacity.
    pub l2_bytes: usize,
    /// L2 capacity a single SM's data effectively sees (half on split-L2 parts).
    pub l2_effective_bytes: usize,
    /// Sector size (transfer granularity between L1 and L2, L2 and DRAM).
    pub sector_bytes: usize,
    /// L1 line size.
    pub line_bytes: usize,
    /// L1 wavefronts (128 B each) an SM processes per cycle.
    pub l1_wavefronts_per_cycle_per_sm: f64,
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

impl MachineModel {
    /// The names of all preset machines.
    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|(n, _)| *n).collect()
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
