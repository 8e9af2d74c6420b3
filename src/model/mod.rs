//! The cache-aware roofline: data volumes + machine → predicted time, limiter and evidence.
//!
//! Each memory level and the arithmetic give a time (volume over bandwidth); the level with the
//! largest time is the limiter. The predicted time is a soft maximum of the level times, scaled
//! for latency that too few resident warps leave exposed and for the partial last wave, plus the
//! launch overhead.

mod registers;

pub use registers::estimate_registers;

use crate::config::LaunchConfig;
use crate::footprint::DataVolumes;
use crate::ir::{Domain, Kernel};
use crate::machine::{MachineModel, Occupancy};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Exponent of the soft maximum that combines the level times (∞ would be the plain maximum).
pub const OVERLAP_EXPONENT: f64 = 4.0;

/// Latency hiding: the level times are reached only with enough resident warps. With `w` warps
/// per SM the soft maximum is scaled by `1 + w_h / w`, where `w_h` is this many bytes over the
/// bytes of one warp-wide load (`warp_size × element size`): 8 warps for f64, 16 for f32.
/// Measured on the H200 (`bench/calibrate-model.py`): with the volumes the hardware counters
/// measured (`bench/results/h200/counters`, star3d_r4 f64 at 256³ and 768×768×64, 8 to 64 warps
/// per SM; volume errors cannot enter), the time over the soft maximum of the level times follows
/// `1 + w_h / w` best for `w_h` = 4 (256³) to 10 (768×768×64) f64 warps, at 8 a common scale of
/// 1.02 over all stencil records; and with it one DRAM bandwidth explains both copy kernels (64
/// warps: f64 4.18 TB/s = 4.70 / 1.125, f32 3.77 TB/s = 4.71 / 1.25).
pub const LATENCY_HIDING_BYTES: f64 = 2048.0;

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
    /// The time latency adds where too few warps are resident to hide it (the soft maximum of the
    /// other levels times `hiding_factor − 1`).
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
    /// Factor for latency too few warps leave exposed (`1 + w_h / warps`, see
    /// [`LATENCY_HIDING_BYTES`]).
    pub hiding_factor: f64,
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

    let f = kernel.flops();
    // Throughput in instructions: an fma is one instruction, divisions and roots cost about four.
    let instructions = (f.add + f.mul + f.fma + f.other + 4 * (f.div + f.sqrt)) as f64;
    let instr_rate = machine.peak_flops(elem) / 2.0;

    let mut times = LevelTimes {
        dram: dram_bytes / machine.dram_bandwidth,
        latency: 0.0,
        l2: l2_bytes / machine.l2_bandwidth,
        l1: l1_bytes / machine.l1_bandwidth(),
        compute: instructions * n / instr_rate,
    };
    // Levels overlap imperfectly: a soft maximum (the p-norm of the level times) stays close to
    // the limiter's time but still separates configurations that share a limiter and differ in
    // the other levels' traffic (Stevens & Klöckner's smooth overlap).
    let p = OVERLAP_EXPONENT;
    let t = [times.dram, times.l2, times.l1, times.compute]
        .iter()
        .map(|x| x.powf(p))
        .sum::<f64>()
        .powf(1.0 / p);

    // Latency hiding, a smooth Little's law: the bytes in flight grow with the resident warps,
    // each with a warp-wide load of `warp_size × elem` bytes, and w warps reach w / (w + w_h) of
    // the bandwidth-bound rate at every level. The time latency adds is the latency level; it
    // does not depend on any bandwidth, so a faster level never predicts slower.
    let warps = occupancy.warps_per_sm.max(1) as f64;
    let hiding_warps = LATENCY_HIDING_BYTES / (machine.warp_size * elem) as f64;
    let hiding_factor = 1.0 + hiding_warps / warps;
    times.latency = t * (hiding_factor - 1.0);
    let levels = [
        (Limiter::Dram, times.dram),
        (Limiter::Latency, times.latency),
        (Limiter::L2, times.l2),
        (Limiter::L1, times.l1),
        (Limiter::Compute, times.compute),
    ];
    let (limiter, _) =
        levels.into_iter().fold(
            (Limiter::Dram, 0.0),
            |best, c| if c.1 > best.1 { c } else { best },
        );

    let slots = (machine.sms * occupancy.blocks_per_sm.max(1)) as f64;
    let waves = config.blocks(domain) as f64 / slots;
    let wave_factor = (waves.ceil() / waves).max(1.0);
    let seconds = t * hiding_factor * wave_factor + machine.launch_overhead_s;
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
        hiding_factor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::OccupancyLimiter;
    use crate::spec::{load_machine, load_stencil};

    fn volumes(dram: f64, l2: f64, wavefronts: f64) -> DataVolumes {
        DataVolumes {
            l1_load_requests: l2,
            l1_wavefronts: wavefronts,
            l2_load: l2 - 8.0,
            l2_store: 8.0,
            dram_load: dram - 8.0,
            dram_store: 8.0,
        }
    }

    #[test]
    fn limiter_waves_and_overlap() {
        let k = load_stencil("stencils/star3d_r1.toml".as_ref())
            .unwrap()
            .kernel;
        let m = load_machine("h100-sxm").unwrap();
        let d = Domain::new3(512, 512, 512);
        let occ = Occupancy {
            blocks_per_sm: 8,
            warps_per_sm: 64,
            limiter: OccupancyLimiter::Warps,
        };
        let c = LaunchConfig::new([32, 4, 2], [1, 1, 1]);
        let p = predict(&k, &c, &d, &m, &volumes(16.0, 20.0, 0.1), occ, 32);
        assert_eq!(p.limiter, Limiter::Dram);
        // DRAM time is 16 B × 512³ over the DRAM bandwidth; the soft maximum adds a little for
        // the other levels, and 64 warps hide all but 8/64 of the latency (f64: w_h = 8).
        let t_dram = 16.0 * 512f64.powi(3) / m.dram_bandwidth;
        assert!((p.times.dram - t_dram).abs() < 1e-12);
        assert!((p.hiding_factor - (1.0 + 8.0 / 64.0)).abs() < 1e-12);
        let hidden = (p.seconds - m.launch_overhead_s) / (p.hiding_factor * p.wave_factor);
        assert!(hidden > t_dram && hidden < 1.1 * t_dram);
        // 512³ / (32·4·2) = 524288 blocks over 132·8 slots = 496.5 waves → factor 497/496.5.
        assert!((p.waves - 524288.0 / 1056.0).abs() < 1e-9);
        assert!((p.wave_factor - (p.waves.ceil() / p.waves)).abs() < 1e-12);
        // Heavy L1 traffic moves the limiter to L1.
        let p = predict(&k, &c, &d, &m, &volumes(16.0, 20.0, 4.0), occ, 32);
        assert_eq!(p.limiter, Limiter::L1);
        // One resident warp per SM cannot cover DRAM latency.
        let low = Occupancy {
            blocks_per_sm: 1,
            warps_per_sm: 1,
            limiter: OccupancyLimiter::Registers,
        };
        let c32 = LaunchConfig::new([32, 1, 1], [1, 1, 1]);
        let p = predict(&k, &c32, &d, &m, &volumes(16.0, 20.0, 0.1), low, 255);
        assert_eq!(p.limiter, Limiter::Latency);
    }

    #[test]
    fn fewer_warps_expose_latency() {
        let mut k = load_stencil("stencils/star3d_r1.toml".as_ref())
            .unwrap()
            .kernel;
        let m = load_machine("h200").unwrap();
        let d = Domain::new3(512, 512, 512);
        let c = LaunchConfig::new([32, 4, 2], [1, 1, 1]);
        let occ = |warps| Occupancy {
            blocks_per_sm: warps / 8,
            warps_per_sm: warps,
            limiter: OccupancyLimiter::Registers,
        };
        let v = volumes(16.0, 20.0, 0.1);
        let t = |k: &Kernel, w| predict(k, &c, &d, &m, &v, occ(w), 32);
        // Same volumes, fewer resident warps: never faster, and slower by 1 + w_h / w (f64:
        // w_h = 2048 / 256 = 8 warps).
        let mut last = 0.0;
        for w in [64, 48, 32, 16, 8] {
            let p = t(&k, w);
            assert!(p.seconds > last);
            assert!((p.hiding_factor - (1.0 + 8.0 / w as f64)).abs() < 1e-12);
            let soft = (p.seconds - m.launch_overhead_s) / (p.hiding_factor * p.wave_factor);
            assert!((p.times.latency - soft * 8.0 / w as f64).abs() < 1e-12);
            last = p.seconds;
        }
        // f64 at 16 warps: the exposed latency (8/16 of the time) stays below the DRAM time.
        assert_eq!(t(&k, 16).limiter, Limiter::Dram);
        // A warp-wide f32 load carries half the bytes: twice the warps hide the same latency,
        // and at 8 warps the exposed latency (16/8 of the time) is the limiter.
        k.set_dtype(crate::ir::Dtype::F32);
        assert!((t(&k, 64).hiding_factor - (1.0 + 16.0 / 64.0)).abs() < 1e-12);
        assert_eq!(t(&k, 8).limiter, Limiter::Latency);
    }
}
