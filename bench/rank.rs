//! Criterion benchmark: ranking the whole star3d_r4 f64 space for an H100 (configurations per
//! second = the reported throughput). Run: `cargo bench --bench rank`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stencilscope::config::enumerate;
use stencilscope::ir::Domain;
use stencilscope::rank::{rank, RankOptions};
use stencilscope::spec::{load_machine, load_stencil};

fn bench_rank(c: &mut Criterion) {
    let machine = load_machine("h100-sxm").expect("preset");
    let domain = Domain::new3(640, 512, 512);
    let opts = RankOptions::default();
    let mut g = c.benchmark_group("rank");
    g.sample_size(10);
    for name in ["star3d_r4", "star3d_r1", "box3d_r1"] {
        let kernel = load_stencil(format!("stencils/{name}.toml").as_ref())
            .expect("shipped stencil")
            .kernel;
        let n = enumerate(&domain, &opts.space).len() as u64;
        g.throughput(Throughput::Elements(n));
        g.bench_function(format!("{name}_f64_h100_640x512x512"), |b| {
            b.iter(|| rank(&kernel, &domain, &machine, &opts).expect("ranks"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_rank);
criterion_main!(benches);
