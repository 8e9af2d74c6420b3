//! The H200 preset against the copy kernels measured on it (bench/results/h200/sweeps/measured/
//! copy-calibration.log, CUDA, 512³, block 128x2x1 fold 1x1x2): one DRAM bandwidth and the
//! model's latency hiding reproduce both element sizes.

use stencilscope::config::LaunchConfig;
use stencilscope::ir::{Domain, Dtype};
use stencilscope::rank::{evaluate, RankOptions};
use stencilscope::runtime::measure::copy_kernel;
use stencilscope::spec::load_machine;

fn copy_bandwidth(dtype: Dtype) -> f64 {
    let m = load_machine("h200").unwrap();
    let d = Domain::new3(512, 512, 512);
    let k = copy_kernel(3, dtype);
    let c = LaunchConfig::new([128, 2, 1], [1, 1, 2]);
    let p = evaluate(&k, &d, &m, &c, &RankOptions::default()).unwrap();
    // Minimal volume: one load and one store per point.
    2.0 * dtype.size() as f64 * d.points() as f64 / p.seconds
}

#[test]
fn h200_copy_bandwidths() {
    let (f64_bw, f32_bw) = (copy_bandwidth(Dtype::F64), copy_bandwidth(Dtype::F32));
    println!("model copy: f64 {f64_bw:.4e} B/s, f32 {f32_bw:.4e} B/s");
    // Measured: f64 4.179 TB/s, f32 3.773 TB/s.
    assert!((f64_bw / 4.179e12 - 1.0).abs() < 0.03, "f64 {f64_bw:e}");
    assert!((f32_bw / 3.773e12 - 1.0).abs() < 0.03, "f32 {f32_bw:e}");
}
