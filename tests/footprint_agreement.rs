//! The footprint visitor against the exact cache simulator on small domains: 50 configurations per
//! kernel (block shapes of 32 to 512 threads, with and without folding), caches holding the
//! in-block and inter-wave working sets; then the capacity transitions as L2 and L1 shrink. Prints
//! the quantiles of the disagreement (run with `--nocapture`); `examples/footprint_agreement.rs`
//! prints more.

#[path = "support/agreement.rs"]
mod agreement;

use agreement::*;
use stencilscope::cachesim::IssueOrder;
use stencilscope::config::LaunchConfig;
use stencilscope::footprint::CacheParams;
use stencilscope::ir::{Domain, Kernel, Layout};
use stencilscope::spec::ShapeKind;

type Rows = Vec<(LaunchConfig, [f64; 6], [f64; 6])>;

fn report(name: &str, what: &str, rows: &Rows, levels: &[usize]) {
    for &l in levels {
        let q = quantiles(rows, l);
        println!(
            "{name:<15} {what:<12} {:<17} |rel. error| min {:.2}% median {:.2}% p90 {:.2}% max {:.2}%",
            LEVELS[l],
            100.0 * q[0],
            100.0 * q[1],
            100.0 * q[2],
            100.0 * q[3]
        );
    }
}

fn run(name: &str, k: &Kernel) {
    let domain = Domain::new3(48, 24, 20);
    let cfgs = configs(50);
    assert_eq!(cfgs.len(), 50);
    let mut p = params(16 << 20);
    p.l1_bytes = 256 << 10;
    let rows = compare(k, &domain, &cfgs, &p);
    report(name, "", &rows, &[0, 1, 2, 3, 4, 5]);
    // Per-warp levels are exact.
    for l in [0, 1, 3] {
        assert!(quantiles(&rows, l)[3] < 1e-9, "{name} {}", LEVELS[l]);
    }
    // DRAM (the unions over the grid) within 5% for every configuration.
    for l in [4, 5] {
        let q = quantiles(&rows, l);
        assert!(q[3] <= 0.05, "{name} {}: {q:?}", LEVELS[l]);
    }
    // L2 load within 5% for 90% of the configurations; the L1 model (working sets) is the
    // weakest part where a block's footprint only just exceeds L1 (the worst: D3Q19 AoS 64×8×1
    // fold 1×2×2, 15.1 % under).
    let q = quantiles(&rows, 2);
    assert!(q[2] <= 0.05 && q[3] <= 0.16, "{name} L2 load: {q:?}");
}

#[test]
fn star3d_r1_agrees() {
    run("star3d_r1", &shape(ShapeKind::Star, 1));
}

#[test]
fn star3d_r4_agrees() {
    run("star3d_r4", &shape(ShapeKind::Star, 4));
}

#[test]
fn box3d_r1_agrees() {
    run("box3d_r1", &shape(ShapeKind::Box, 1));
}

#[test]
fn d3q19_soa_agrees() {
    run("d3q19_pull_soa", &d3q19_pull(Layout::Fzyx));
}

#[test]
fn d3q19_aos_agrees() {
    run("d3q19_pull_aos", &d3q19_pull(Layout::Zyxf));
}

/// Estimates and simulations, one row per configuration and one column per cache size.
fn sweep(
    k: &Kernel,
    domain: &Domain,
    cfgs: &[LaunchConfig],
    sizes: &[usize],
    set: impl Fn(&mut CacheParams, usize),
) -> Vec<Rows> {
    sweep_in(k, domain, cfgs, sizes, IssueOrder::Lockstep, set)
}

/// As [`sweep`], against the simulator issuing in `order`.
fn sweep_in(
    k: &Kernel,
    domain: &Domain,
    cfgs: &[LaunchConfig],
    sizes: &[usize],
    order: IssueOrder,
    set: impl Fn(&mut CacheParams, usize),
) -> Vec<Rows> {
    sizes
        .iter()
        .map(|&size| {
            let mut p = params(16 << 20);
            set(&mut p, size);
            compare_in(k, domain, cfgs, &p, order)
        })
        .collect()
}

/// Both the estimates and the simulations of `level` grow as the cache shrinks, and the
/// estimated growth follows the simulated one.
fn check_transition(name: &str, level: usize, sweeps: &[Rows], min_growth: f64) {
    let mean = |r: &Rows, i: usize| r.iter().map(|x| [x.1, x.2][i][level]).sum::<f64>();
    for (c, row) in sweeps[0].iter().enumerate() {
        for w in sweeps.windows(2) {
            let (big, small) = (&w[0][c], &w[1][c]);
            assert!(
                small.1[level] >= big.1[level] * (1.0 - 1e-9),
                "{name} {}: estimate not monotone in capacity",
                row.0
            );
        }
    }
    let (first, last) = (&sweeps[0], &sweeps[sweeps.len() - 1]);
    let sim_growth = mean(last, 1) / mean(first, 1);
    let est_growth = mean(last, 0) / mean(first, 0);
    println!(
        "{name:<15} {}: shrinking the cache multiplies it by {sim_growth:.2} (simulated), {est_growth:.2} (estimated)",
        LEVELS[level]
    );
    assert!(
        sim_growth >= min_growth,
        "{name}: no transition to reproduce"
    );
    assert!(
        (est_growth / sim_growth - 1.0).abs() <= 0.10,
        "{name}: growth {est_growth} vs {sim_growth}"
    );
}

/// Shrinking L2 moves DRAM load from the compulsory volume towards the no-reuse bound: reuse
/// between blocks holds only while what the machine moves through L2 between the two uses fits.
/// A longer domain than above, so that a sweep takes several waves and reuse crosses waves.
/// The simulator starts blocks at their launch offsets, as the visitor's L2 links and windows
/// assume (`IssueOrder::Launched`): median disagreement 1-7 %, largest 26 % (star3d_r4 64×8×1
/// fold 1×1×2 at 256 KiB, on the step of an LRU). Against the simulator's lockstep waves the
/// medians are 6-15 % and the largest 35 %.
#[test]
fn l2_capacity_transitions_are_reproduced() {
    let domain = Domain::new3(96, 48, 12);
    let cfgs = configs(8);
    let sizes = [2048, 256, 32];
    for (name, k) in [
        ("star3d_r1", shape(ShapeKind::Star, 1)),
        ("star3d_r4", shape(ShapeKind::Star, 4)),
    ] {
        let sweeps = sweep_in(
            &k,
            &domain,
            &cfgs,
            &sizes,
            IssueOrder::Launched,
            |p, kib| p.l2_bytes = kib << 10,
        );
        for (rows, kib) in sweeps.iter().zip(sizes) {
            report(name, &format!("L2 {kib} KiB"), rows, &[4, 5]);
            let q = quantiles(rows, 4);
            assert!(q[1] <= 0.10 && q[3] <= 0.30, "{name} L2 {kib} KiB: {q:?}");
            assert!(quantiles(rows, 5)[3] <= 0.15, "{name} L2 {kib} KiB");
        }
        check_transition(name, 4, &sweeps, 1.3);
    }
}

/// Shrinking L1 moves L2 load from the blocks' footprints towards the L1 requests: a line is
/// still in L1 when used again only if what the resident blocks touched in between fits.
#[test]
fn l1_capacity_transition_is_reproduced() {
    let domain = Domain::new3(48, 24, 20);
    let cfgs = configs(20);
    let sizes = [256, 32, 16];
    let k = shape(ShapeKind::Star, 4);
    let sweeps = sweep(&k, &domain, &cfgs, &sizes, |p, kib| p.l1_bytes = kib << 10);
    for (rows, kib) in sweeps.iter().zip(sizes) {
        report("star3d_r4", &format!("L1 {kib} KiB"), rows, &[2]);
        let q = quantiles(rows, 2);
        assert!(q[1] <= 0.05 && q[3] <= 0.60, "L1 {kib} KiB: {q:?}");
    }
    check_transition("star3d_r4", 2, &sweeps, 1.1);
}

/// Where L1 overflows, a line reused after `g` steps is evicted when the working set of the
/// window between its touches exceeds the block's share of L1. That window's distinct lines are
/// not the lines of the whole steps between plus those of the two partial steps added up: a
/// stencil's consecutive steps touch mostly the same lines. Adding them up evicted too early:
/// box3d_r1 at L1 32 KiB estimated up to 2.35× the simulated L2 load (p90 1 %, max 135 %).
#[test]
fn l1_reuse_windows_count_distinct_lines() {
    let domain = Domain::new3(64, 40, 24);
    let cfgs = configs(40);
    let mut p = params(16 << 20);
    p.l1_bytes = 32 << 10;
    let rows = compare(&shape(ShapeKind::Box, 1), &domain, &cfgs, &p);
    report("box3d_r1", "L1 32 KiB", &rows, &[2]);
    let q = quantiles(&rows, 2);
    assert!(q[2] <= 0.05 && q[3] <= 0.20, "box3d_r1 L2 load: {q:?}");
}

/// Tiles narrower than a sector (1 × 8 B along x here): the blocks sharing a sector touch it at
/// the same step, and the first of them in the issue order takes the link to its previous access
/// (often in the previous wave). The representative block used to be the first of its sector
/// (block `grid / 2`, sector-aligned) and, with a multiple of 8 blocks per SM, to sit on the
/// first SM at every sampled wave position, so it took all those links: the wave window then
/// counted the L2 accesses of a whole wave several times over and the L2 reuse of narrow tiles
/// was lost (1×32×2 fold 1×2×2: 46.3 B/LUP estimated, 11.0 simulated).
#[test]
fn narrow_tiles_share_their_sectors_links() {
    let k = shape(ShapeKind::Star, 4);
    let domain = Domain::new3(64, 64, 64);
    let mut p = params(2 << 20);
    (p.sms, p.blocks_per_sm, p.l1_bytes) = (16, 8, 112 << 10);
    let cfgs = [
        LaunchConfig::new([1, 32, 2], [1, 2, 2]),
        LaunchConfig::new([1, 64, 2], [1, 1, 2]),
    ];
    let rows = compare(&k, &domain, &cfgs, &p);
    for (c, e, s) in &rows {
        println!(
            "{c}: DRAM load {:.2} estimated, {:.2} simulated",
            e[4], s[4]
        );
        assert!(rel(e[4], s[4]).abs() <= 0.15, "{c}: {} vs {}", e[4], s[4]);
    }
}

/// star3d_r4 at `c` with `blocks_per_sm` on a machine of 16 SMs, a 112 KiB L1 and a 2 MiB L2
/// (64×128×64): the estimated and simulated levels, with the DRAM ones printed.
fn narrow_star_dram(c: LaunchConfig, blocks_per_sm: usize) -> ([f64; 6], [f64; 6]) {
    narrow_star_dram_l2(c, blocks_per_sm, 2 << 20)
}

/// As [`narrow_star_dram`], with an L2 of `l2_bytes`.
fn narrow_star_dram_l2(
    c: LaunchConfig,
    blocks_per_sm: usize,
    l2_bytes: usize,
) -> ([f64; 6], [f64; 6]) {
    let mut p = params(l2_bytes);
    (p.sms, p.l1_bytes, p.blocks_per_sm) = (16, 112 << 10, blocks_per_sm);
    let rows = compare(
        &shape(ShapeKind::Star, 4),
        &Domain::new3(64, 128, 64),
        &[c],
        &p,
    );
    let (e, s) = (rows[0].1, rows[0].2);
    println!(
        "{c}: DRAM load {:.2} / store {:.2} estimated, {:.2} / {:.2} simulated",
        e[4], e[5], s[4], s[5]
    );
    (e, s)
}

/// Tiles narrower than a line that L1 cannot hold re-fetch their lines from L2 at every fold
/// point, and every block sharing a line re-fetches it. A re-fetch is linked only to its own
/// block's previous touch, so a window of the wave counted a shared line once per block
/// re-fetching it, twice the wave's whole footprint for a third of the run: re-fetches and the
/// consecutive partial writes of a sector "missed" L2 (2×1×32 fold 4×1×1: 101.5 B/LUP DRAM load
/// estimated, 11.9 simulated; on the H100 at 256³ 73.3 estimated, 13.8 measured). The stream of
/// re-fetches now counts the wave's distinct share of the sectors, as the first touches do.
///
/// With a 4 MiB L2: the simulator's L2 holds whole lines (as measured), and this tile's 16 bytes
/// of a 128-byte line per fold point are re-fetched in windows whose lines do not fit 2 MiB.
/// There the simulator reads 54.5 B/LUP and the visitor 86.7: it counts a window's lines, but
/// keeps recency per sector where L2 renews a whole line on any of its sectors' accesses (issue
/// 8). At 4 MiB both keep them (10.8 estimated, 11.5 simulated).
#[test]
fn refetches_of_shared_lines_count_once_in_l2() {
    let c = LaunchConfig::new([2, 1, 32], [4, 1, 1]);
    let (e, s) = narrow_star_dram_l2(c, 32, 4 << 20);
    assert!(
        rel(e[4], s[4]).abs() <= 0.25,
        "{c}: DRAM load {} vs {}",
        e[4],
        s[4]
    );
    assert!(
        rel(e[5], s[5]).abs() <= 0.05,
        "{c}: DRAM store {} vs {}",
        e[5],
        s[5]
    );
}

/// Not yet right (issue 8; run with `--ignored`): where blocks share few lines but re-fetch many
/// of their own, the links still do not form one chain in time across blocks. A block's first
/// touch is linked to the neighbours' *first* touches, not to their later re-fetches, and the
/// wave's link tables are binned (64 bins), so a window of 26 of 832 steps counts the short
/// re-fetch links inside it only roughly. For 1×16×8 fold 4×2×4 below (one wave of 128 blocks),
/// the consecutive partial writes one fold point apart (26 steps) "miss" L2: 25.9 B/LUP DRAM load
/// and 11.0 store estimated, 17.1 and 8.0 simulated (when this test was written, 59.4 and 26.0
/// against 16.3 and 8.0; H100 at 256³: 16.4 measured). Its re-fetches have no neighbour that
/// touches their sectors at the same steps (`RowPass::mirrored` leaves them as they were).
#[test]
#[ignore = "issue 8: re-fetches and first touches do not chain across blocks"]
fn refetches_chain_across_blocks() {
    let c = LaunchConfig::new([1, 16, 8], [4, 2, 4]);
    let (e, s) = narrow_star_dram(c, 8);
    assert!(
        rel(e[4], s[4]).abs() <= 0.15,
        "{c}: DRAM load {} vs {}",
        e[4],
        s[4]
    );
    assert!(
        rel(e[5], s[5]).abs() <= 0.15,
        "{c}: DRAM store {} vs {}",
        e[5],
        s[5]
    );
}

/// An L1 of 4-way sets that lines fall into by a hash (`l1_conflict_ways`, as measured on the
/// H100 and H200) loses lines before it is full: a line survives a window when fewer than 4 of
/// the window's other lines fell into its set. The visitor's survival law (Poisson over the
/// window's working set) against the simulator with such sets, from an L1 the resident blocks
/// fill partly to one they overflow: the L2 load the sets add over a fully associative LRU agrees
/// to 3 points (box3d_r1 at 16 KiB: 28.9 % simulated, 26.9 % estimated).
#[test]
fn l1_set_conflicts_are_reproduced() {
    let domain = Domain::new3(48, 24, 20);
    let cfgs = configs(20);
    let sizes = [48, 24, 16, 8];
    let total = |r: &Rows, i: usize| r.iter().map(|x| [x.1, x.2][i][2]).sum::<f64>();
    for (name, k) in [
        ("star3d_r4", shape(ShapeKind::Star, 4)),
        ("box3d_r1", shape(ShapeKind::Box, 1)),
    ] {
        let lru = sweep(&k, &domain, &cfgs, &sizes, |p, kib| p.l1_bytes = kib << 10);
        let sets = sweep(&k, &domain, &cfgs, &sizes, |p, kib| {
            (p.l1_bytes, p.l1_conflict_ways) = (kib << 10, 4)
        });
        let mut largest = 0.0f64;
        for ((rows, fully), kib) in sets.iter().zip(&lru).zip(sizes) {
            report(name, &format!("L1 {kib} KiB 4-way"), rows, &[2]);
            let added = |i| total(rows, i) / total(fully, i) - 1.0;
            let (est, sim) = (added(0), added(1));
            println!(
                "{name:<15} L1 {kib} KiB: 4-way sets add {:.1} % L2 load simulated, {:.1} % estimated",
                100.0 * sim,
                100.0 * est
            );
            assert!(
                (est - sim).abs() <= 0.03,
                "{name} L1 {kib} KiB: {est} vs {sim}"
            );
            if kib >= 16 {
                let q = quantiles(rows, 2);
                assert!(q[1] <= 0.10, "{name} L1 {kib} KiB: {q:?}");
            }
            largest = largest.max(sim);
        }
        assert!(largest >= 0.09, "{name}: the sets add nothing to reproduce");
    }
}

/// Tiles narrower than a sector, folded along x, that L1 cannot hold from one x-fold point to
/// the next re-fetch every sector at the next fold point, as does the x-neighbour that shares
/// it, launched just before: L2 last saw the sector at the neighbour's re-fetch, not at this
/// block's previous touch half a run earlier (`RowPass::mirrored`). D3Q19 SoA (the LBM file's
/// kernel, rows aligned to sectors) at 128×128×64 on 132 SMs with an LRU L2 of 30 MiB, against
/// the simulator in launch order. Linked to their own previous touch only, the re-fetches all
/// missed L2: DRAM load +30.9, +3.0, +6.8 and +68.1 % against the simulator (now +4.5, −2.1,
/// +3.5 and +28.0 %). The one-thread-wide 1×2×32 fold 4×2×1 writes each sector in eight
/// pieces, two blocks' four x-fold points, whose chain of write pairs keeps it over.
#[test]
fn refetches_follow_the_neighbour_that_shares_their_sector() {
    let def = stencilscope::spec::load_definition(std::path::Path::new("lbm/d3q19_srt_pull.toml"))
        .expect("lbm/d3q19_srt_pull.toml");
    let mut p = params(30 << 20);
    (p.sms, p.blocks_per_sm, p.l1_bytes) = (132, 8, 200 << 10);
    let cfgs = [
        (LaunchConfig::new([2, 8, 64], [2, 1, 1]), 0.10),
        (LaunchConfig::new([2, 4, 64], [4, 1, 1]), 0.10),
        (LaunchConfig::new([4, 1, 64], [2, 1, 1]), 0.10),
        (LaunchConfig::new([1, 2, 32], [4, 2, 1]), 0.35),
    ];
    let configs: Vec<LaunchConfig> = cfgs.iter().map(|c| c.0).collect();
    let rows = compare_in(
        &def.kernel,
        &Domain::new3(128, 128, 64),
        &configs,
        &p,
        IssueOrder::Launched,
    );
    for ((c, e, s), (_, bound)) in rows.iter().zip(cfgs) {
        println!(
            "{c}: DRAM load {:.2} estimated, {:.2} simulated",
            e[4], s[4]
        );
        assert!(rel(e[4], s[4]).abs() <= bound, "{c}: {} vs {}", e[4], s[4]);
    }
}
