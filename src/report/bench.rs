//! The benchmark report: terminal lines, a Markdown table over sweeps, and the HTML page of one
//! sweep with its plots.

use super::svg::{escape, Scatter};
use super::{format_seconds, html_page};
use crate::bench::summary::{Point, Summary};
use crate::config::LaunchConfig;
use crate::model::Limiter;
use std::fmt::Write;

const LIMITERS: [Limiter; 5] = [
    Limiter::Dram,
    Limiter::Latency,
    Limiter::L2,
    Limiter::L1,
    Limiter::Compute,
];

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

fn cfg(c: &LaunchConfig) -> String {
    let [bx, by, bz] = c.block;
    let [fx, fy, fz] = c.fold;
    format!("{bx}x{by}x{bz}/{fx}x{fy}x{fz}")
}

fn glups(s: &Summary, seconds: f64) -> f64 {
    s.domain.points() as f64 / seconds / 1e9
}

/// The summary's figures as a few lines of text.
pub fn bench_text(s: &Summary) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} ({}) on {} via {}, domain {}: {} of {} planned configurations measured and verified, {} refused, {} failed{}",
        s.kernel,
        s.dtype,
        s.device,
        s.backend,
        s.domain,
        s.configs_measured,
        s.configs_planned,
        s.configs_refused,
        s.configs_failed,
        if s.complete { "" } else { " (incomplete: rerun to resume)" }
    );
    if let (Some(o_), Some(t)) = (&s.oracle, &s.model_top1) {
        let _ = writeln!(
            o,
            "oracle {} {}; model's choice {} (rank {}) predicted {}, measured {}",
            cfg(&o_.config),
            format_seconds(o_.median_s),
            cfg(&t.config),
            t.rank,
            format_seconds(t.predicted_s),
            format_seconds(t.measured_s)
        );
    }
    let _ = writeln!(
        o,
        "top-1 {}% of oracle, best of top 5 {}%, Spearman {}, Kendall τ {}, geomean rel. error {}, speed-up over default {}{}",
        opt(s.pct_of_oracle_top1, 1),
        opt(s.pct_of_oracle_best_of_top5, 1),
        opt(s.spearman, 3),
        opt(s.kendall_tau, 3),
        opt(s.geomean_rel_error, 3),
        opt(s.speedup_over_default, 2),
        s.speedup_over_best_fixed
            .map(|v| format!(", over best fixed {v:.2}"))
            .unwrap_or_default()
    );
    o
}

/// One Markdown table row per sweep, with a header.
pub fn bench_markdown(summaries: &[Summary]) -> String {
    let mut o = String::from(
        "| sweep | device | backend | domain | measured | refused | failed | oracle | model top-1 | top-1 % of oracle | best of top 5 % | Spearman | Kendall τ | geomean rel. error | speed-up over default | over best fixed |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in summaries {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            s.device,
            s.backend,
            s.domain,
            s.configs_measured,
            if s.complete { "" } else { " (partial)" },
            s.configs_refused,
            s.configs_failed,
            s.oracle
                .as_ref()
                .map(|o| format!("{} {}", cfg(&o.config), format_seconds(o.median_s)))
                .unwrap_or_default(),
            s.model_top1
                .as_ref()
                .map(|t| format!("{} {}", cfg(&t.config), format_seconds(t.measured_s)))
                .unwrap_or_default(),
            opt(s.pct_of_oracle_top1, 1),
            opt(s.pct_of_oracle_best_of_top5, 1),
            opt(s.spearman, 3),
            opt(s.kendall_tau, 3),
            opt(s.geomean_rel_error, 3),
            opt(s.speedup_over_default, 2),
            opt(s.speedup_over_best_fixed, 2),
        );
    }
    o
}

fn limiter_index(l: Limiter) -> usize {
    LIMITERS.iter().position(|x| *x == l).unwrap_or(0)
}

fn tip(s: &Summary, p: &Point) -> String {
    format!(
        "{}: rank {}, predicted {}, measured {} ({:.1} GLUP/s), {}",
        cfg(&p.config),
        p.rank,
        format_seconds(p.predicted_s),
        format_seconds(p.measured_s),
        glups(s, p.measured_s),
        p.limiter
    )
}

/// The self-contained HTML report of one sweep.
pub fn bench_html(s: &Summary) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>Kernel <b>{}</b> ({}), domain {}, on <b>{}</b> via {} (driver {}), machine model <b>{}</b>; commit {}, {}. \
         {} timed launches per configuration (median), verification: {}.</p>",
        escape(&s.kernel),
        s.dtype,
        s.domain,
        escape(&s.device),
        s.backend,
        escape(&s.driver),
        escape(&s.machine),
        escape(&s.commit),
        escape(&s.date),
        s.reps,
        match s.verify {
            crate::runtime::measure::VerifyScope::Full => "every element".to_string(),
            crate::runtime::measure::VerifyScope::Sampled(r) => format!(
                "sampled (ghosts and padding everywhere, fixed and {} random planes per axis, {} random rows)",
                r.random_planes, r.random_rows
            ),
        }
    );
    let _ = write!(body, "<pre>{}</pre>", escape(&bench_text(s)));
    let categories: Vec<String> = LIMITERS.iter().map(|l| format!("{l}-bound")).collect();
    let scatter: Vec<(f64, f64, usize, String)> = s
        .points
        .iter()
        .map(|p| {
            (
                p.measured_s,
                p.predicted_s,
                limiter_index(p.limiter),
                tip(s, p),
            )
        })
        .collect();
    body.push_str("<h2>Predicted against measured time</h2><div class=figure>");
    body.push_str(
        &Scatter {
            title:
                "Each configuration; colour: predicted limiter; dashed: prediction = measurement",
            points: &scatter,
            categories: &categories,
            captions: ("measured seconds", "predicted seconds"),
            log: true,
            diagonal: true,
        }
        .render(),
    );
    body.push_str("</div>");
    let by_rank: Vec<(f64, f64, usize, String)> = s
        .points
        .iter()
        .map(|p| {
            (
                p.rank as f64,
                glups(s, p.measured_s),
                limiter_index(p.limiter),
                tip(s, p),
            )
        })
        .collect();
    body.push_str("<h2>Measured performance in the model's order</h2><div class=figure>");
    body.push_str(
        &Scatter {
            title: "Measured GLUP/s by predicted rank (a perfect ranking falls from left to right)",
            points: &by_rank,
            categories: &categories,
            captions: ("predicted rank", "measured GLUP/s"),
            log: false,
            diagonal: false,
        }
        .render(),
    );
    body.push_str("</div>");

    body.push_str("<h2>The model's top configurations</h2>");
    body.push_str(
        "<table><tr><th>rank</th><th class=l>block/fold</th><th>predicted</th><th>measured (median)</th><th>spread</th>\
         <th>measured GLUP/s</th><th>% of oracle</th><th>error</th><th class=l>limiter</th></tr>",
    );
    let oracle = s.oracle.as_ref().map(|o| o.median_s);
    for p in s.points.iter().take(25) {
        let _ = write!(
            body,
            "<tr><td>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.1}</td><td>{}</td><td>{:+.0}%</td><td class=l>{}</td></tr>",
            p.rank,
            cfg(&p.config),
            format_seconds(p.predicted_s),
            format_seconds(p.measured_s),
            100.0 * (p.max_s - p.min_s) / p.measured_s,
            glups(s, p.measured_s),
            opt(oracle.map(|o| 100.0 * o / p.measured_s), 1),
            100.0 * (p.predicted_s - p.measured_s) / p.measured_s,
            p.limiter
        );
    }
    body.push_str("</table>");
    if let Some(o) = &s.oracle {
        let _ = write!(
            body,
            "<p>Oracle: {} at {} (predicted rank {}, predicted {}).</p>",
            cfg(&o.config),
            format_seconds(o.median_s),
            o.rank,
            format_seconds(o.predicted_s)
        );
    }
    if !s.failures.is_empty() {
        body.push_str("<h2>Refused, failed and unmeasured configurations</h2><table><tr><th class=l>block/fold</th><th class=l>status</th><th class=l>reason</th></tr>");
        for f in &s.failures {
            let _ = write!(
                body,
                "<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td></tr>",
                cfg(&f.config),
                escape(&f.status),
                escape(&f.reason)
            );
        }
        body.push_str("</table>");
    }
    html_page(
        &format!(
            "stencilscope bench: {} {} on {}",
            s.kernel, s.dtype, s.device
        ),
        &body,
    )
}
