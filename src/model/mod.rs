//! The cache-aware roofline: data volumes + machine → predicted time, limiter and evidence.

mod registers;

pub use registers::estimate_registers;

use crate::config::LaunchConfig;
use crate::footprint::DataVolumes;
use crate::ir::{Domain, Kernel};
use crate::machine::{MachineModel, Occupancy};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What bounds the predicted time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limiter {
    /// DRAM bandwidth.
    Dram,
    /// L2 bandwidth.
    L2,
    /// L1 wavefront throughput.
    L1,
    /// Arithmetic throughput.
    Compute,
    /// Too few bytes in flight to cover DRAM latency (low occupancy).
    Latency,
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Limiter::Dram => "DRAM",
            Limiter::L2 => "L2",
            Limiter::L1 => "L1",
            Limiter::Compute => "compute",
            Limiter::Latency => "latency",
        })
    }
}

/// Seconds per sweep that each level alone would need.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LevelTimes {
    /// DRAM volume over DRAM bandwidth.
    pub dram: f64,
    /// DRAM volume over the bandwidth the bytes in flight can sustain (Little's law).
    pub latency: f64,
    /// L2 volume over L2 bandwidth.
    pub l2: f64,
    /// L1 wavefronts over the L1 wavefront rate.
    pub l1: f64,
    /// Instructions over the arithmetic rate.
    pub compute: f64,
}

/// A prediction with all of its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Predicted seconds per sweep.
    pub seconds: f64,
    /// Lattice updates per second.
    pub lups: f64,
    /// The level that bounds the time.
    pub limiter: Limiter,
    /// Per-level times, before wave quantisation and launch overhead.
    pub times: LevelTimes,
    /// The volumes the times come from.
    pub volumes: DataVolumes,
    /// Registers per thread used for occupancy.
    pub registers: usize,
    /// Resident blocks and warps per SM.
    pub occupancy: Occupancy,
    /// Blocks over (SMs × resident blocks per SM).
    pub waves: f64,
    /// Factor for the partial last wave (`ceil(waves) / waves`, at least 1).
    pub wave_factor: f64,
}

/// Predicts one configuration. `registers` overrides the IR estimate.
pub fn predict(
    kernel: &Kernel,
    config: &LaunchConfig,
    domain: &Domain,
    machine: &MachineModel,
    volumes: &DataVolumes,
    occupancy: Occupancy,
    registers: usize,
) -> Prediction {
    let n = domain.points() as f64;
    let elem = kernel.dtype().size();
    let dram_bytes = (volumes.dram_load + volumes.dram_store) * n;
    let l2_bytes = (volumes.l2_load + volumes.l2_store) * n;
    let l1_bytes = volumes.l1_wavefronts * machine.line_bytes as f64 * n;

    // Little's law: every resident warp has its independent loads of one point in flight.
    let loads = kernel
        .distinct_accesses(crate::ir::AccessKind::Load)
        .len()
        .max(1) as f64;
    let per_warp = loads.min(32.0) * (machine.warp_size * elem) as f64;
    let in_flight = occupancy.warps_per_sm as f64 * machine.sms as f64 * per_warp;
    let latency_bw = in_flight / (machine.dram_latency_ns * 1e-9);

    let f = kernel.flops();
    // Throughput in instructions: an fma is one instruction, divisions and roots cost about four.
    let instructions = (f.add + f.mul + f.fma + f.other + 4 * (f.div + f.sqrt)) as f64;
    let instr_rate = machine.peak_flops(elem) / 2.0;

    let times = LevelTimes {
        dram: dram_bytes / machine.dram_bandwidth,
        latency: dram_bytes / latency_bw,
        l2: l2_bytes / machine.l2_bandwidth,
        l1: l1_bytes / machine.l1_bandwidth(),
        compute: instructions * n / instr_rate,
    };
    let (limiter, t) = [
        (Limiter::Dram, times.dram),
        (Limiter::Latency, times.latency),
        (Limiter::L2, times.l2),
        (Limiter::L1, times.l1),
        (Limiter::Compute, times.compute),
    ]
    .into_iter()
    .fold(
        (Limiter::Dram, 0.0),
        |best, c| if c.1 > best.1 { c } else { best },
    );

    let slots = (machine.sms * occupancy.blocks_per_sm.max(1)) as f64;
    let waves = config.blocks(domain) as f64 / slots;
    let wave_factor = (waves.ceil() / waves).max(1.0);
    let seconds = t * wave_factor + machine.launch_overhead_s;
    Prediction {
        seconds,
        lups: n / seconds,
        limiter,
        times,
        volumes: *volumes,
        registers,
        occupancy,
        waves,
        wave_factor,
    }
}
