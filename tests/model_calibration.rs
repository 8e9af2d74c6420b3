//! The H200 preset against the copy kernels measured on it (bench/results/h200/sweeps/measured/
//! copy-calibration.log, CUDA, 512³, block 128x2x1 fold 1x1x2: f64 4.179 TB/s, f32 3.773 TB/s).

use stencilscope::config::LaunchConfig;
use stencilscope::ir::{Domain, Dtype};
use stencilscope::model::Limiter;
use stencilscope::rank::{evaluate, RankOptions};
use stencilscope::runtime::measure::copy_kernel;
use stencilscope::spec::load_machine;

/// Predicted copy bandwidth at minimal volume (one load and one store per point) and limiter.
fn copy(dtype: Dtype) -> (f64, Limiter) {
    let m = load_machine("h200").unwrap();
    let d = Domain::new3(512, 512, 512);
    let k = copy_kernel(3, dtype);
    let c = LaunchConfig::new([128, 2, 1], [1, 1, 2]);
    let p = evaluate(&k, &d, &m, &c, &RankOptions::default()).unwrap();
    let bw = 2.0 * dtype.size() as f64 * d.points() as f64 / p.seconds;
    (bw, p.limiter)
}

#[test]
fn h200_copy_bandwidths() {
    // f64: DRAM-bound at the preset's 3.85 TB/s (3.80 predicted with the other levels' overlap).
    let (bw, limiter) = copy(Dtype::F64);
    assert_eq!(limiter, Limiter::Dram);
    assert!((bw / 4.179e12 - 1.0).abs() < 0.10, "f64 {bw:e}");
    // f32: two 128-byte loads in flight per warp at 64 warps per SM bound it (Little's law), close
    // to the measured 3.77 TB/s (3.54 predicted); counting one load per warp predicted 1.8.
    let (bw, limiter) = copy(Dtype::F32);
    assert_eq!(limiter, Limiter::Latency);
    assert!((bw / 3.773e12 - 1.0).abs() < 0.07, "f32 {bw:e}");
}
