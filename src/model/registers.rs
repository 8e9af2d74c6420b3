//! A register estimate from the IR, for the occupancy calculation when no compiler report is given.

use crate::config::LaunchConfig;
use crate::ir::{AccessKind, Kernel};

/// Registers per thread the generated code is expected to use.
///
/// A thread keeps its index arithmetic (about 16 registers) and, per point, its temporaries and
/// about half of its loads (up to 16) live at once, at most 16 values; each further folded point
/// adds about two values (its accumulator and the loads it does not share). f64 values take two
/// registers. Capped at the architectural 255; `rank --registers N` overrides the estimate.
///
/// Measured against the compiled kernels (`CU_FUNC_ATTRIBUTE_NUM_REGS`, NVRTC for sm_90, H200
/// counter sweeps in `bench/results/h200/counters`): star3d_r4 f64 uses 30 registers unfolded,
/// 38–64 with 4 points, 40–164 with 16 and 96–170 with 32; box3d_r1 f32 30–32 up to 4 points
/// and 32–64 with 16; D3Q19 f32 40 unfolded. The former estimate (all loads live, two points at
/// most) was 27–40 registers too high for few points and too low for many; this one halves the
/// mean error of the resident warps it implies (`bench/calibrate-model.py --registers`).
pub fn estimate_registers(kernel: &Kernel, config: &LaunchConfig) -> usize {
    let words = kernel.dtype().size().div_ceil(4);
    let loads = kernel.distinct_accesses(AccessKind::Load).len().min(16);
    let first = (kernel.temps.len() + loads.div_ceil(2)).min(16);
    let more = 2 * config.points_per_thread().saturating_sub(1);
    (16 + words * (first + more)).min(255)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_stencil;

    #[test]
    fn grows_with_dtype_and_folding() {
        let mut k = load_stencil("stencils/star3d_r4.toml".as_ref())
            .unwrap()
            .kernel;
        let one = LaunchConfig::new([32, 4, 2], [1, 1, 1]);
        let two = LaunchConfig::new([32, 4, 2], [1, 1, 2]);
        let sixteen = LaunchConfig::new([32, 4, 2], [1, 4, 4]);
        // 25 loads: 8 live values of two registers each (the compiled kernel has 30).
        let f64_one = estimate_registers(&k, &one);
        assert_eq!(f64_one, 16 + 2 * 8);
        assert_eq!(estimate_registers(&k, &two), f64_one + 4);
        // 16 points: 16 + 2 × (8 + 30) = 92 (compiled: 40–164, median about 70).
        assert_eq!(estimate_registers(&k, &sixteen), 92);
        k.set_dtype(crate::ir::Dtype::F32);
        assert!(estimate_registers(&k, &one) < f64_one);
    }

    #[test]
    fn capped_at_the_architectural_limit() {
        let k = load_stencil("stencils/star3d_r4.toml".as_ref())
            .unwrap()
            .kernel;
        let many = LaunchConfig::new([4, 4, 4], [4, 4, 8]);
        assert_eq!(estimate_registers(&k, &many), 255);
    }
}
