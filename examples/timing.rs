use stencilscope::config::LaunchConfig;
use stencilscope::footprint::{CacheParams, Estimator};
use stencilscope::spec::{load_machine, load_stencil};
fn main() {
    let def = load_stencil(std::path::Path::new("stencils/star3d_r4.toml")).unwrap();
    let domain = def.domain.unwrap();
    let m = load_machine("h100-sxm").unwrap();
    let big_l1: bool = std::env::var("BIGL1").is_ok();
    let mut est = Estimator::default();
    let mut worst = vec![];
    let t0 = std::time::Instant::now();
    let mut n = 0;
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
                    if !(32..=1024).contains(&c.threads()) {
                        continue;
                    }
                    let mut p = CacheParams::from_machine(
                        &m,
                        c.threads(),
                        m.occupancy(c.threads(), 32, 0).blocks_per_sm.max(1),
                    );
                    if big_l1 {
                        p.l1_bytes = 1 << 30;
                    }
                    let t = std::time::Instant::now();
                    est.estimate(&def.kernel, &domain, &c, &p).unwrap();
                    worst.push((t.elapsed().as_secs_f64(), c));
                    n += 1;
                }
            }
        }
    }
    let el = t0.elapsed().as_secs_f64();
    println!("{n} configs in {el:.3} s: {:.0}/s", n as f64 / el);
    worst.sort_by(|a, b| b.0.total_cmp(&a.0));
    for w in &worst[..8] {
        println!("{:.4} s {}", w.0, w.1);
    }
}
