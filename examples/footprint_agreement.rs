//! Prints the distribution of the disagreement between the footprint visitor and the cache
//! simulator: `cargo run --release --example footprint_agreement [configs] [l2 KiB ...]`.

#[path = "../tests/support/agreement.rs"]
mod agreement;

use agreement::*;
use stencilscope::ir::{Domain, Layout};
use stencilscope::spec::ShapeKind;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(60);
    let l2s: Vec<usize> = if args.len() > 2 {
        args[2..].iter().filter_map(|s| s.parse().ok()).collect()
    } else {
        vec![16 << 10]
    };
    let verbose = std::env::var("VERBOSE").is_ok();
    let kernels = [
        ("star3d_r1", shape(ShapeKind::Star, 1)),
        ("star3d_r4", shape(ShapeKind::Star, 4)),
        ("box3d_r1", shape(ShapeKind::Box, 1)),
        ("d3q19_pull_soa", d3q19_pull(Layout::Fzyx)),
        ("d3q19_pull_aos", d3q19_pull(Layout::Zyxf)),
    ];
    let domain = Domain::new3(64, 40, 24);
    let cfgs = configs(n);
    for l2 in l2s {
        println!("L2 {l2} KiB, domain {domain}, {} configurations; |estimate/simulation - 1| quantiles min / median / p90 / max", cfgs.len());
        for (name, k) in &kernels {
            let rows = compare(k, &domain, &cfgs, &params(l2 << 10));
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
