//! The footprint visitor against the exact cache simulator on small domains: 50 configurations per
//! kernel, L1 and L2 holding the in-block and inter-wave working sets. Prints the quantiles of the
//! disagreement (run with `--nocapture`); `examples/footprint_agreement.rs` prints more.

#[path = "support/agreement.rs"]
mod agreement;

use agreement::*;
use stencilscope::ir::{Domain, Kernel, Layout};
use stencilscope::spec::ShapeKind;

fn run(name: &str, k: &Kernel, l2_load_p90: f64, dram_p90: f64) {
    let domain = Domain::new3(48, 24, 20);
    let cfgs = configs(50);
    assert_eq!(cfgs.len(), 50);
    let mut p = params(16 << 20);
    p.l1_bytes = 256 << 10;
    let rows = compare(k, &domain, &cfgs, &p);
    for (l, level) in LEVELS.iter().enumerate() {
        let q = quantiles(&rows, l);
        println!(
            "{name:<15} {level:<17} |rel. error| min {:.2}% median {:.2}% p90 {:.2}% max {:.2}%",
            100.0 * q[0],
            100.0 * q[1],
            100.0 * q[2],
            100.0 * q[3]
        );
    }
    // Per-warp levels are exact.
    for l in [0, 1, 3] {
        assert!(quantiles(&rows, l)[3] < 1e-9, "{name} {}", LEVELS[l]);
    }
    // DRAM within `dram_p90` for at least 90% of the configurations, never beyond 10%.
    for l in [4, 5] {
        let q = quantiles(&rows, l);
        assert!(
            q[2] <= dram_p90 && q[3] <= 0.10,
            "{name} {}: {q:?}",
            LEVELS[l]
        );
    }
    let q = quantiles(&rows, 2);
    assert!(q[2] <= l2_load_p90, "{name} L2 load: {q:?}");
}

#[test]
fn star3d_r1_agrees() {
    run("star3d_r1", &shape(ShapeKind::Star, 1), 0.05, 0.05);
}

#[test]
fn star3d_r4_agrees() {
    // Measured p90 5.9% on this domain: the inter-wave hit model (triangular spread) is the
    // weakest part of the DRAM estimate for long-range stencils on small grids.
    run("star3d_r4", &shape(ShapeKind::Star, 4), 0.05, 0.07);
}

#[test]
fn box3d_r1_agrees() {
    run("box3d_r1", &shape(ShapeKind::Box, 1), 0.05, 0.05);
}

#[test]
fn d3q19_soa_agrees() {
    run("d3q19_pull_soa", &d3q19_pull(Layout::Fzyx), 0.05, 0.05);
}

#[test]
fn d3q19_aos_agrees() {
    // AoS L2 load is the visitor's weakest level (L1 thrashing of strided rows): bounded, reported.
    run("d3q19_pull_aos", &d3q19_pull(Layout::Zyxf), 0.30, 0.05);
}

/// Shrinking the simulated L2 moves DRAM load from the compulsory volume towards the no-reuse
/// bound; the visitor must follow the same transition.
#[test]
fn l2_capacity_transition_is_reproduced() {
    let k = shape(ShapeKind::Star, 1);
    let domain = Domain::new3(64, 40, 24);
    let c = stencilscope::config::LaunchConfig::new([32, 4, 1], [1, 1, 1]);
    let mut last = (f64::INFINITY, f64::INFINITY);
    for kib in [64, 256, 1024, 4096] {
        let p = params(kib << 10);
        let rows = compare(&k, &domain, &[c], &p);
        let (e, s) = (rows[0].1[4], rows[0].2[4]);
        println!("L2 {kib:>5} KiB: DRAM load estimate {e:.2} simulated {s:.2} B/LUP");
        assert!(
            e <= last.0 + 1e-9 && s <= last.1 + 1e-9,
            "monotone in capacity"
        );
        assert!(rel(e, s).abs() < 0.35, "{kib} KiB: {e} vs {s}");
        last = (e, s);
    }
    assert!(last.0 < 0.8 * compare(&k, &domain, &[c], &params(64 << 10))[0].1[4]);
}
