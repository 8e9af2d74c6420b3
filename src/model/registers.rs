//! A register estimate from the IR, for the occupancy calculation when no compiler report is given.

use crate::config::LaunchConfig;
use crate::ir::{AccessKind, Kernel};

/// Registers per thread the generated code is expected to use.
///
/// A thread keeps its index arithmetic (about 16 registers), and per folded point the values it
/// holds at once: the temporaries and up to 16 loads in flight (compilers hoist independent loads
/// for latency hiding, but not without bound). f64 values take two registers. Capped at the
/// architectural 255; `rank --registers N` overrides the estimate.
pub fn estimate_registers(kernel: &Kernel, config: &LaunchConfig) -> usize {
    let words = kernel.dtype().size().div_ceil(4);
    let loads = kernel.distinct_accesses(AccessKind::Load).len().min(16);
    let live = kernel.temps.len() + loads;
    let per_point = live * words;
    // Folded points are unrolled; the compiler interleaves at most two of them.
    let points = config.points_per_thread().min(2);
    (16 + per_point * points).min(255)
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
        let f64_one = estimate_registers(&k, &one);
        assert_eq!(f64_one, 16 + 16 * 2);
        assert!(estimate_registers(&k, &two) > f64_one);
        k.set_dtype(crate::ir::Dtype::F32);
        assert!(estimate_registers(&k, &one) < f64_one);
    }
}
