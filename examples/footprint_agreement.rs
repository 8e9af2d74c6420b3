//! Prints the distribution of the disagreement between the footprint visitor and the cache
//! simulator:
//!
//! `cargo run --release --example footprint_agreement -- [configs] [l2 KiB ...] [--sms N]
//! [--l1 KiB] [--domain X,Y,Z]`
//!
//! Defaults: 60 configurations, L2 16 MiB, the agreement machine of the tests (61 SMs, 2 blocks
//! each, L1 64 KiB) and a 64×40×24 domain. `VERBOSE=1` prints every configuration.

#[path = "../tests/support/agreement.rs"]
mod agreement;

use agreement::*;
use stencilscope::ir::{Domain, Layout};
use stencilscope::spec::ShapeKind;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut n = 60;
    let mut l2s: Vec<usize> = Vec::new();
    let mut p = params(0);
    let mut domain = Domain::new3(64, 40, 24);
    let mut first = true;
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> String {
            args.next()
                .unwrap_or_else(|| panic!("{name} needs a value"))
        };
        match a.as_str() {
            "--sms" => p.sms = value("--sms").parse().expect("--sms N"),
            "--l1" => p.l1_bytes = value("--l1").parse::<usize>().expect("--l1 KiB") << 10,
            "--domain" => {
                let v: Vec<usize> = value("--domain")
                    .split(',')
                    .map(|x| x.parse().expect("--domain X,Y,Z"))
                    .collect();
                domain = Domain::from_slice(&v).expect("--domain X,Y,Z");
            }
            v if first => {
                n = v.parse().expect("the number of configurations");
                first = false;
            }
            v => l2s.push(v.parse().expect("an L2 size in KiB")),
        }
    }
    if l2s.is_empty() {
        l2s.push(16 << 10);
    }
    let verbose = std::env::var("VERBOSE").is_ok();
    let kernels = [
        ("star3d_r1", shape(ShapeKind::Star, 1)),
        ("star3d_r4", shape(ShapeKind::Star, 4)),
        ("box3d_r1", shape(ShapeKind::Box, 1)),
        ("d3q19_pull_soa", d3q19_pull(Layout::Fzyx)),
        ("d3q19_pull_aos", d3q19_pull(Layout::Zyxf)),
    ];
    let cfgs = configs(n);
    for l2 in l2s {
        p.l2_bytes = l2 << 10;
        println!(
            "L2 {l2} KiB, L1 {} KiB, {} SMs × {} blocks, domain {domain}, {} configurations; \
             |estimate/simulation - 1| quantiles min / median / p90 / max",
            p.l1_bytes >> 10,
            p.sms,
            p.blocks_per_sm,
            cfgs.len()
        );
        for (name, k) in &kernels {
            let rows = compare(k, &domain, &cfgs, &p);
            for (l, level) in LEVELS.iter().enumerate() {
                let q = quantiles(&rows, l);
                println!(
                    "  {name:<15} {level:<17} {:>7.2}% {:>7.2}% {:>7.2}% {:>7.2}%",
                    100.0 * q[0],
                    100.0 * q[1],
                    100.0 * q[2],
                    100.0 * q[3]
                );
            }
            if verbose {
                for (c, e, s) in &rows {
                    println!(
                        "    {c}: est {e:.2?}\n    {:>w$}  sim {s:.2?}",
                        "",
                        w = c.to_string().len()
                    );
                }
            }
        }
    }
}
