//! The reuse probe of `bench/l1-interleave.py` in the simulator's timed issue order, printed as
//! the probe's summary table, and its distance from a measured run:
//! `cargo run --release --example reuse_probe_sim -- MACHINE [--measured interleave.json]
//! [registers,queue,l1,l2,dram ...]` (default timing: `IssueTiming::default()`).

use stencilscope::cachesim::{reuse_probe_hit_rate, IssueTiming};
use stencilscope::footprint::CacheParams;
use stencilscope::spec::load_machine;

const GAPS: [usize; 13] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96];
/// (blocks of 256 threads per SM, lines per instruction), as the probe measures them.
const ROWS: [(usize, usize); 6] = [(2, 1), (2, 8), (2, 32), (8, 1), (8, 8), (8, 32)];

/// The gap at which half the reuses hit (linear between measured gaps).
fn half_gap(rates: &[f64]) -> Option<f64> {
    (0..GAPS.len() - 1).find_map(|i| {
        let (a, b) = (rates[i], rates[i + 1]);
        (a >= 0.5 && b < 0.5)
            .then(|| GAPS[i] as f64 + (a - 0.5) / (a - b) * (GAPS[i + 1] - GAPS[i]) as f64)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let machine = args.first().map_or("h100-sxm", String::as_str);
    let m = load_machine(machine).expect("machine");
    let mut measured: Option<serde_json::Value> = None;
    let mut timings = Vec::new();
    let mut i = 1;
    while i < args.len() {
        if args[i] == "--measured" {
            let text = std::fs::read_to_string(&args[i + 1]).expect("measured JSON");
            measured = Some(serde_json::from_str(&text).expect("JSON"));
            i += 2;
        } else {
            timings.push(
                args[i]
                    .parse::<IssueTiming>()
                    .unwrap_or_else(|e| panic!("{e}")),
            );
            i += 1;
        }
    }
    if timings.is_empty() {
        timings.push(IssueTiming::default());
    }
    let meas = |w: usize, k: usize, g: usize| -> Option<f64> {
        measured.as_ref()?["results"].as_array()?.iter().find(|r| {
            r["warps_per_sm"].as_u64() == Some(w as u64)
                && r["lines_per_instruction"].as_u64() == Some(k as u64)
                && r["gap"].as_u64() == Some(g as u64)
        })?["steady_hit_rate"]
            .as_f64()
    };
    for timing in timings {
        println!("\n{machine}, {timing:?}\n");
        println!(
            "| warps/SM | lines/instr | {} | g½ | effective warps | measured eff. | cycles at g=1 |",
            GAPS.map(|g| format!("g={g}")).join(" | ")
        );
        println!("|---|---|{}---|---|---|---|", "---|".repeat(GAPS.len()));
        let (mut sq, mut n) = (0.0, 0);
        for (bps, k) in ROWS {
            let params = CacheParams::from_machine(&m, 256, bps);
            let lines = (params.l1_bytes / params.line_bytes) as f64;
            let mut rates = Vec::new();
            let mut mrates = Vec::new();
            let mut first_cycles = 0;
            for g in GAPS {
                let (h, c) =
                    reuse_probe_hit_rate(&params, &timing, k, g, (8 * g).max(256)).expect("probe");
                if g == 1 {
                    first_cycles = c;
                }
                if let Some(x) = meas(bps * 8, k, g) {
                    sq += (h - x) * (h - x);
                    n += 1;
                    mrates.push(x);
                }
                rates.push(h);
            }
            let eff = |r: &[f64]| {
                half_gap(r).map_or("—".to_string(), |h| {
                    format!("{:.1}", lines / (h * k as f64))
                })
            };
            println!(
                "| {} | {k} | {} | {} | {} | {} | {first_cycles} |",
                bps * 8,
                rates
                    .iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join(" | "),
                half_gap(&rates).map_or("—".to_string(), |h| format!("{h:.1}")),
                eff(&rates),
                if mrates.len() == GAPS.len() {
                    eff(&mrates)
                } else {
                    "—".into()
                },
            );
        }
        if n > 0 {
            println!(
                "\nRMS hit-rate difference from the measurement over {n} points: {:.3}",
                (sq / n as f64).sqrt()
            );
        }
    }
}
