//! Speed of the footprint visitor, single-threaded: `cargo bench --bench footprint`.
//!
//! Estimates a systematic sample (every `STRIDE`-th) of the legal configurations of the `rank`
//! space of `star3d_r4` (f64) on its 640×512×512 domain for an H100, each with the resident
//! blocks that `rank` gives it, reusing one `Estimator` as each `rank` worker does. The throughput
//! line is in configurations per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use stencilscope::config::{check_legal, enumerate, LaunchConfig};
use stencilscope::footprint::{CacheParams, Estimator};
use stencilscope::model::estimate_registers;
use stencilscope::rank::RankOptions;
use stencilscope::spec::{load_machine, load_stencil};

/// Every `STRIDE`-th legal configuration of the space is estimated: a mix of every block shape and
/// folding, in the space's own proportions.
const STRIDE: usize = 8;

fn bench(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/stencils/star3d_r4.toml");
    let def = load_stencil(std::path::Path::new(path)).expect("star3d_r4");
    let domain = def.domain.expect("the file gives a domain");
    let machine = load_machine("h100-sxm").expect("preset");
    let opts = RankOptions::default();
    // The legal configurations as `rank` evaluates them: legal, with positive occupancy.
    let legal: Vec<(LaunchConfig, CacheParams)> = enumerate(&domain, &opts.space)
        .into_iter()
        .filter(|c| check_legal(c, &domain, machine.max_threads_per_block, opts.max_extent).is_ok())
        .filter_map(|c| {
            let occ = machine.occupancy(c.threads(), estimate_registers(&def.kernel, &c), 0);
            (occ.blocks_per_sm > 0).then(|| {
                (
                    c,
                    CacheParams::from_machine(&machine, c.threads(), occ.blocks_per_sm),
                )
            })
        })
        .collect();
    let jobs: Vec<_> = legal.iter().step_by(STRIDE).collect();
    let mut est = Estimator::default();
    let mut g = c.benchmark_group("footprint");
    g.throughput(Throughput::Elements(jobs.len() as u64));
    g.sample_size(10);
    g.bench_function(
        format!(
            "star3d_r4_f64_h100_{}_of_{}_legal_configs",
            jobs.len(),
            legal.len()
        ),
        |b| {
            b.iter(|| {
                for (cfg, p) in &jobs {
                    black_box(
                        est.estimate(&def.kernel, &domain, cfg, p)
                            .expect("estimate"),
                    );
                }
            })
        },
    );
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
