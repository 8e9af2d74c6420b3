//! Ranking end to end: sanity of the model, determinism, JSON round trip, errors.

use stencilscope::config::{LaunchConfig, SpaceOptions};
use stencilscope::ir::{Domain, Dtype, Kernel};
use stencilscope::rank::{evaluate, rank, Pruning, RankError, RankOptions, Ranking};
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

fn pruned(margin: f64, keep: usize) -> RankOptions {
    RankOptions {
        pruning: Some(Pruning { margin, keep }),
        ..opts()
    }
}

#[test]
fn a_pruned_ranking_is_the_full_one_up_to_its_threshold() {
    let cases = [
        ("star3d_r4", "h100-sxm", Domain::new3(320, 256, 128)),
        ("box3d_r1", "h200", Domain::new3(256, 128, 64)),
    ];
    for (name, machine, d) in cases {
        let k = kernel(name);
        let m = load_machine(machine).unwrap();
        let full = rank(&k, &d, &m, &opts()).unwrap();
        assert!(full.pruned.is_none() && full.bounded.is_empty());
        let predicted = |c: &LaunchConfig| {
            &full
                .ranked
                .iter()
                .find(|x| x.config == *c)
                .expect("in the full ranking")
                .prediction
        };
        for (margin, keep) in [(1.0, 5), (1.25, 0), (1.5, 20)] {
            let p = rank(&k, &d, &m, &pruned(margin, keep)).unwrap();
            let s = p.pruned.expect("pruned");
            let what = format!("{name} margin {margin} keep {keep}");
            assert_eq!(p.legal(), full.ranked.len(), "{what}");
            assert_eq!(p.refused, full.refused, "{what}");
            assert!(!p.bounded.is_empty(), "{what}: nothing pruned");
            // The exact ranks are the full ranking's first, with the same predictions, and all
            // of those within the threshold.
            assert_eq!(
                p.ranked[..s.exact_ranks],
                full.ranked[..s.exact_ranks],
                "{what}"
            );
            let within = full
                .ranked
                .iter()
                .filter(|x| x.prediction.seconds <= s.threshold_seconds)
                .count();
            assert_eq!(within, s.exact_ranks, "{what}");
            assert!(s.exact_ranks >= keep, "{what}");
            let best = full.ranked[0].prediction.seconds;
            assert!(s.threshold_seconds >= margin * best, "{what}");
            for x in &p.ranked {
                assert_eq!(&x.prediction, predicted(&x.config), "{what}: {}", x.config);
            }
            // A bound is never above the estimate, per level, and lies above the threshold.
            for b in &p.bounded {
                let (f, v, fv) = (
                    predicted(&b.config),
                    &b.bound.volumes,
                    &predicted(&b.config).volumes,
                );
                assert!(b.bound.seconds <= f.seconds, "{what}: {}", b.config);
                assert!(
                    b.bound.seconds > s.threshold_seconds,
                    "{what}: {}",
                    b.config
                );
                for ((level, lo), (_, est)) in v.levels().into_iter().zip(fv.levels()) {
                    assert!(
                        lo <= est,
                        "{what}: {}: {level} bound {lo} above {est}",
                        b.config
                    );
                }
            }
            assert!(p
                .bounded
                .windows(2)
                .all(|w| w[0].bound.seconds <= w[1].bound.seconds));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<Ranking>(&json).unwrap(), p);
            // Which configurations are estimated does not depend on the threads.
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let q = pool.install(|| rank(&k, &d, &m, &pruned(margin, keep)).unwrap());
                assert_eq!(q, p, "{what}: {threads} threads");
            }
        }
    }
}

#[test]
fn a_margin_below_one_is_refused() {
    let k = kernel("star3d_r1");
    let m = load_machine("h100-sxm").unwrap();
    for margin in [0.5, f64::NAN] {
        let e = rank(&k, &Domain::new3(64, 64, 64), &m, &pruned(margin, 1)).unwrap_err();
        assert!(matches!(e, RankError::BadMargin(_)), "{e}");
        assert!(e.to_string().contains("at least 1"), "{e}");
    }
}
