//! Ranking end to end: sanity of the model, determinism, JSON round trip, errors.

use stencilscope::config::{LaunchConfig, SpaceOptions};
use stencilscope::ir::{Domain, Dtype, Kernel};
use stencilscope::rank::{evaluate, rank, RankError, RankOptions, Ranking};
use stencilscope::spec::{load_machine, load_stencil};

/// A reduced space (no folding in x, up to 512 threads) keeps these tests fast.
fn opts() -> RankOptions {
    RankOptions {
        space: SpaceOptions {
            max_threads: 512,
            folds: vec![1, 2],
            ..SpaceOptions::default()
        },
        ..RankOptions::default()
    }
}

fn kernel(name: &str) -> Kernel {
    load_stencil(format!("stencils/{name}.toml").as_ref())
        .unwrap()
        .kernel
}

#[test]
fn more_bandwidth_never_predicts_slower() {
    let k = kernel("star3d_r4");
    let d = Domain::new3(320, 256, 128);
    let m = load_machine("h100-sxm").unwrap();
    let base = rank(&k, &d, &m, &opts()).unwrap();
    for scale in [1.5, 2.0, 4.0] {
        for level in ["dram", "l2", "l1"] {
            let mut faster = m.clone();
            match level {
                "dram" => faster.dram_bandwidth *= scale,
                "l2" => faster.l2_bandwidth *= scale,
                _ => faster.l1_wavefronts_per_cycle_per_sm *= scale,
            }
            let r = rank(&k, &d, &faster, &opts()).unwrap();
            for x in &r.ranked {
                let b = base.ranked.iter().find(|y| y.config == x.config).unwrap();
                assert!(
                    x.prediction.seconds <= b.prediction.seconds * (1.0 + 1e-12),
                    "{level} x{scale}: {} slower",
                    x.config
                );
            }
        }
    }
}

#[test]
fn larger_l2_never_increases_dram_volume() {
    let k = kernel("star3d_r4");
    let d = Domain::new3(256, 256, 128);
    let m = load_machine("h100-sxm").unwrap();
    let configs = [
        LaunchConfig::new([32, 4, 2], [1, 1, 1]),
        LaunchConfig::new([64, 2, 4], [1, 1, 2]),
        LaunchConfig::new([256, 1, 1], [1, 2, 1]),
        LaunchConfig::new([16, 8, 4], [2, 1, 1]),
    ];
    for c in configs {
        let mut last = f64::INFINITY;
        for l2_mib in [1usize, 2, 4, 8, 16, 25, 50] {
            let mut mm = m.clone();
            mm.l2_effective_bytes = l2_mib << 20;
            mm.l2_bytes = mm.l2_bytes.max(mm.l2_effective_bytes);
            let p = evaluate(&k, &d, &mm, &c, &opts()).unwrap();
            let dram = p.volumes.dram_load + p.volumes.dram_store;
            assert!(
                dram <= last * (1.0 + 1e-12),
                "{c}: L2 {l2_mib} MiB gives {dram} > {last}"
            );
            last = dram;
        }
    }
}

#[test]
fn ranking_is_deterministic_and_round_trips_through_json() {
    let k = kernel("star3d_r1");
    let d = Domain::new3(256, 128, 64);
    let m = load_machine("a100-40gb").unwrap();
    let a = rank(&k, &d, &m, &opts()).unwrap();
    let b = rank(&k, &d, &m, &opts()).unwrap();
    assert_eq!(a, b);
    assert!(a.ranked.len() > 300, "{}", a.ranked.len());
    assert!(a
        .ranked
        .windows(2)
        .all(|w| w[0].prediction.seconds <= w[1].prediction.seconds));
    let json = serde_json::to_string(&a).unwrap();
    let back: Ranking = serde_json::from_str(&json).unwrap();
    assert_eq!(back, a);
    assert_eq!(back.version, stencilscope::rank::RANKING_VERSION);
}

#[test]
fn f32_moves_half_the_bytes_of_f64_at_best() {
    let mut k = kernel("star3d_r1");
    let d = Domain::new3(256, 128, 64);
    let m = load_machine("h100-sxm").unwrap();
    let r64 = rank(&k, &d, &m, &opts()).unwrap();
    k.set_dtype(Dtype::F32);
    let r32 = rank(&k, &d, &m, &opts()).unwrap();
    assert!(r32.ranked[0].prediction.seconds < r64.ranked[0].prediction.seconds);
}

#[test]
fn errors_are_clear() {
    let k = kernel("star3d_r4");
    let m = load_machine("h100-sxm").unwrap();
    let e = rank(&k, &Domain::new3(8, 64, 64), &m, &opts()).unwrap_err();
    assert!(
        matches!(e, RankError::DomainTooSmall { needed: 9, .. }),
        "{e}"
    );
    let e = rank(&k, &Domain::new2(64, 64), &m, &opts()).unwrap_err();
    assert!(matches!(e, RankError::Dims { .. }), "{e}");
    let illegal = LaunchConfig::new([64, 32, 1], [1, 1, 1]);
    let e = evaluate(&k, &Domain::new3(64, 64, 64), &m, &illegal, &opts()).unwrap_err();
    assert!(
        e.to_string()
            .contains("2048 threads per block exceed the limit of 1024"),
        "{e}"
    );
    assert!(load_machine("gtx-9000").is_err());
}
