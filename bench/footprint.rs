//! Speed of the footprint visitor: `cargo bench --bench footprint`.
//!
//! Estimates every configuration of a space of block shapes and foldings for `star3d_r4` (f64) on
//! its 640×512×512 domain with an H100 model, reusing one `Estimator`, and reports the time per
//! configuration; the throughput line is in configurations per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use stencilscope::config::LaunchConfig;
use stencilscope::footprint::{CacheParams, Estimator};
use stencilscope::spec::{load_machine, load_stencil};

fn configs() -> Vec<LaunchConfig> {
    let mut v = Vec::new();
    for bx in [8, 16, 32, 64, 128, 256, 512, 1024] {
        for by in [1, 2, 4, 8, 16, 32] {
            for bz in [1, 2, 4, 8] {
                for fold in [
                    [1, 1, 1],
                    [2, 1, 1],
                    [1, 2, 1],
                    [1, 1, 2],
                    [1, 2, 2],
                    [1, 4, 1],
                ] {
                    let c = LaunchConfig::new([bx, by, bz], fold);
                    if (32..=1024).contains(&c.threads()) {
                        v.push(c);
                    }
                }
            }
        }
    }
    v
}

fn bench(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/stencils/star3d_r4.toml");
    let def = load_stencil(std::path::Path::new(path)).expect("star3d_r4");
    let domain = def.domain.expect("the file gives a domain");
    let machine = load_machine("h100-sxm").expect("preset");
    let space = configs();
    let params: Vec<CacheParams> = space
        .iter()
        .map(|c| {
            let bps = machine.occupancy(c.threads(), 32, 0).blocks_per_sm.max(1);
            CacheParams::from_machine(&machine, bps)
        })
        .collect();
    let mut est = Estimator::default();
    let mut g = c.benchmark_group("footprint");
    g.throughput(Throughput::Elements(space.len() as u64));
    g.sample_size(10);
    g.bench_function(format!("star3d_r4_f64_{}_configs", space.len()), |b| {
        b.iter(|| {
            for (cfg, p) in space.iter().zip(&params) {
                black_box(
                    est.estimate(&def.kernel, &domain, cfg, p)
                        .expect("estimate"),
                );
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
