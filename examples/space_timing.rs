//! Times the footprint visitor over the whole `rank` space of a stencil or LBM kernel (the domain
//! its file gives), single-threaded, and lists the slowest configurations:
//! `cargo run --release --example space_timing [kernel.toml] [machine] [volumes.txt]`.
//! With a third argument, every configuration's volumes are written there, one line each with
//! all digits, to check that a change of the visitor's speed leaves its results alone.
//! `SPACE_TIMING_STRIDE=k` takes every k-th configuration only (for instruction counts under
//! valgrind, which are steadier than times on a shared machine). `SPACE_TIMING_ALL=1` lists every
//! configuration's time (lines `ALL µs config`), to see how the cost spreads over the space.

use stencilscope::config::{check_legal, enumerate, SpaceOptions};
use stencilscope::footprint::{CacheParams, Estimator};
use stencilscope::model::estimate_registers;
use stencilscope::spec::{load_definition, load_machine};

/// CPU seconds of this process so far (Linux; `None` elsewhere), less noisy than wall time on a
/// shared machine.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = args
        .get(1)
        .map_or("stencils/star3d_r4.toml", String::as_str);
    let machine = args.get(2).map_or("h100-sxm", String::as_str);
    let def = load_definition(std::path::Path::new(file)).expect("stencil or LBM file");
    let domain = def.domain.expect("the file gives a domain");
    let m = load_machine(machine).expect("machine");
    let mut jobs = Vec::new();
    let stride: usize = std::env::var("SPACE_TIMING_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for c in enumerate(&domain, &SpaceOptions::default())
        .into_iter()
        .step_by(stride)
    {
        if check_legal(&c, &domain, m.max_threads_per_block, [1024, 1024, 64]).is_err() {
            continue;
        }
        let occ = m.occupancy(c.threads(), estimate_registers(&def.kernel, &c), 0);
        if occ.blocks_per_sm == 0 {
            continue;
        }
        jobs.push((
            c,
            CacheParams::from_machine(&m, c.threads(), occ.blocks_per_sm),
        ));
    }
    let mut est = Estimator::default();
    let mut times = Vec::with_capacity(jobs.len());
    let mut volumes = Vec::with_capacity(jobs.len());
    let cpu0 = cpu_seconds();
    let t0 = std::time::Instant::now();
    for (c, p) in &jobs {
        let t = std::time::Instant::now();
        volumes.push(est.estimate(&def.kernel, &domain, c, p).expect("estimate"));
        times.push((t.elapsed().as_secs_f64(), *c));
    }
    let el = t0.elapsed().as_secs_f64();
    if let (Some(a), Some(b)) = (cpu0, cpu_seconds()) {
        println!(
            "CPU time {:.2} s: {:.0} configurations per CPU second",
            b - a,
            jobs.len() as f64 / (b - a)
        );
    }
    println!(
        "{} legal configurations of {} on {machine}, domain {domain}: {el:.3} s, {:.0}/s",
        jobs.len(),
        def.kernel.name,
        jobs.len() as f64 / el
    );
    if let Some(path) = args.get(3) {
        let lines: Vec<String> = jobs
            .iter()
            .zip(&volumes)
            .map(|((c, _), v)| format!("{c} {v:?}"))
            .collect();
        std::fs::write(path, lines.join("\n") + "\n").expect("writing the volumes");
    }
    times.sort_by(|a, b| b.0.total_cmp(&a.0));
    let n = times.len();
    for (q, i) in [("median", n / 2), ("p90", n / 10), ("p99", n / 100)] {
        println!("{q}: {:.1} µs", 1e6 * times[i].0);
    }
    if std::env::var_os("SPACE_TIMING_ALL").is_some() {
        for (t, c) in &times {
            println!("ALL {:.1} {c}", 1e6 * t);
        }
    }
    for (t, c) in times.iter().take(12) {
        println!("{:9.2} ms {c}", 1e3 * t);
    }
}
