//! Criterion benchmark: ranking the whole configuration space (all threads of the machine), as
//! `stencilscope rank` does (pruned: the configurations that cannot come within 1.5× of the best
//! keep their lower bounds) and as `rank --exhaustive` does, for the shipped stencils (f64, H100, 640×512×512) and two D3Q19 LBM
//! kernels (SoA pull on the H200, AoS push on the H100, 256³; AoS rows are the visitor's most
//! expensive: 19 components interleaved); the throughput is in configurations (legal or not) per
//! second.
//! Run: `cargo bench --bench rank`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stencilscope::config::enumerate;
use stencilscope::ir::{Domain, Kernel};
use stencilscope::rank::{rank, Pruning, RankOptions};
use stencilscope::spec::{load_definition, load_machine};

fn bench_rank(c: &mut Criterion) {
    let exhaustive = RankOptions::default();
    // As the CLI's defaults.
    let pruned = RankOptions {
        pruning: Some(Pruning {
            margin: Pruning::DEFAULT_MARGIN,
            keep: 20,
        }),
        ..RankOptions::default()
    };
    let mut g = c.benchmark_group("rank");
    g.sample_size(10);
    const STENCIL: [usize; 3] = [640, 512, 512];
    const LBM: [usize; 3] = [256, 256, 256];
    let cases = [
        ("stencils/star3d_r4.toml", "h100-sxm", STENCIL),
        ("stencils/star3d_r1.toml", "h100-sxm", STENCIL),
        ("stencils/box3d_r1.toml", "h100-sxm", STENCIL),
        ("lbm/d3q19_srt_pull.toml", "h200", LBM),
        ("lbm/d3q19_srt_push_aos.toml", "h100-sxm", LBM),
    ];
    for (file, machine, [x, y, z]) in cases {
        let domain = Domain::new3(x, y, z);
        let machine = load_machine(machine).expect("preset");
        let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
        let kernel: Kernel = load_definition(path.as_ref())
            .expect("shipped definition")
            .kernel;
        let n = enumerate(&domain, &exhaustive.space).len() as u64;
        g.throughput(Throughput::Elements(n));
        for (mode, opts) in [("pruned", &pruned), ("exhaustive", &exhaustive)] {
            g.bench_function(
                format!(
                    "{}_{}_{}_{x}x{y}x{z}_{mode}",
                    kernel.name,
                    kernel.dtype(),
                    machine.name
                ),
                |b| b.iter(|| rank(&kernel, &domain, &machine, opts).expect("ranks")),
            );
        }
    }
    g.finish();
}

criterion_group!(benches, bench_rank);
criterion_main!(benches);
