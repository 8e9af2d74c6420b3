//! The counter-validation report: per level, estimated against measured volumes (scatter and
//! table) and the distribution of the relative error.

use super::svg::{escape, Bars, Scatter};
use crate::counters::{CountersSweep, Level, TOLERANCE};
use std::fmt::Write;

fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:+.1}%", v * 100.0)
    } else {
        "–".into()
    }
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}"),
        None => "–".into(),
    }
}

/// The issue order a record's estimate took.
fn issue_order(r: &crate::counters::ConfigRecord) -> &'static str {
    if r.compiled_order {
        "compiled"
    } else {
        "emitted"
    }
}

/// The HTML issue-order cell: the order, and where the compiled code's stores go out back to
/// back, at what share of the fold points.
fn issue_order_html(r: &crate::counters::ConfigRecord) -> String {
    match r.stores_back_to_back {
        Some(b) if b > 0.0 => format!(
            "{} <small>(stores back to back at {b:.2} of the fold points)</small>",
            issue_order(r)
        ),
        _ => issue_order(r).to_string(),
    }
}

/// Where the record's kernel spills: its stack bytes per thread, and whether the estimate counts
/// its stack accesses (from the compiled order).
fn spills(r: &crate::counters::ConfigRecord) -> Option<(usize, bool)> {
    r.local_bytes
        .filter(|&b| b > 0)
        .map(|b| (b, r.stack_accesses > 0))
}

/// A record's registers, marked where the kernel spills: `*` where the estimate counts its
/// stack accesses, `!` where it lacks them.
fn registers_cell(r: &crate::counters::ConfigRecord) -> String {
    match spills(r) {
        Some((_, true)) => format!("{}*", r.registers),
        Some((_, false)) => format!("{}!", r.registers),
        None => r.registers.to_string(),
    }
}

/// The HTML registers cell: the count, and where the kernel spills its stack and whether the
/// estimate counts it.
fn registers_html(r: &crate::counters::ConfigRecord) -> String {
    match spills(r) {
        Some((b, true)) => format!(
            "{} <small>(spills, {b} B stack; estimated with its {} accesses)</small>",
            r.registers, r.stack_accesses
        ),
        Some((b, false)) => format!(
            "{} <small>(spills, {b} B stack; not in the estimate)</small>",
            r.registers
        ),
        None => r.registers.to_string(),
    }
}

/// A terminal table: one row per configuration, estimate / measured for each level.
pub fn counters_table(s: &CountersSweep) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{:<28} {:>5} {:>3} {:>6} {:>8}",
        "configuration", "regs", "bps", "L1 KiB", "order"
    );
    for l in Level::ALL {
        let _ = write!(out, " {:>20}", l.name());
    }
    out.push('\n');
    for r in &s.records {
        let _ = write!(
            out,
            "{:<28} {:>5} {:>3} {:>6} {:>8}",
            r.config.to_string(),
            registers_cell(r),
            r.blocks_per_sm,
            r.l1_bytes / 1024,
            issue_order(r)
        );
        for (i, l) in Level::ALL.iter().enumerate() {
            let cell = format!(
                "{}/{} {}",
                num(Some(l.estimate(&r.estimate))),
                num(r.measured.get(*l)),
                r.errors[i].map(pct).unwrap_or_default()
            );
            let _ = write!(out, " {cell:>20}");
        }
        out.push('\n');
    }
    out.push_str("(estimate/measured relative error; wavefronts per LUP, the rest B/LUP)\n");
    if s.records.iter().any(|r| spills(r).is_some()) {
        out.push_str("(regs* / regs!: the kernel spills; its counters hold its local loads and stores, which the estimate counts from the compiled order (*) or lacks (!))\n");
    }
    let _ = writeln!(
        out,
        "{:<18} {:>4} {:>9} {:>9} {:>9} {:>9}",
        "level", "n", "median", "p90 |e|", "max |e|", "±10%"
    );
    for e in &s.summary {
        let _ = writeln!(
            out,
            "{:<18} {:>4} {:>9} {:>9} {:>9} {:>8.0}%",
            e.level.name(),
            e.count,
            pct(e.signed_quantiles[2]),
            pct(e.p90_abs),
            pct(e.max_abs),
            e.within_tolerance * 100.0
        );
    }
    out
}

/// The self-contained HTML page of a sweep.
pub fn counters_html(s: &CountersSweep) -> String {
    let mut b = String::new();
    let device = s
        .device
        .as_ref()
        .map(|d| {
            format!(
                "{} (compute capability {}, {} SMs, {:.1} MB L2), CUDA driver API {}",
                d.name,
                d.compute_capability,
                d.sms,
                d.l2_bytes as f64 / 1e6,
                d.driver_api
            )
        })
        .unwrap_or_else(|| "unknown".into());
    let _ = write!(
        b,
        "<table><tr><th class=l>kernel</th><td class=l>{} ({:?})</td></tr>\
         <tr><th class=l>domain</th><td class=l>{} ({} lattice updates per launch)</td></tr>\
         <tr><th class=l>machine model</th><td class=l>{}</td></tr>\
         <tr><th class=l>device</th><td class=l>{}</td></tr>\
         <tr><th class=l>ncu</th><td class=l>{}</td></tr>\
         <tr><th class=l>wavefront metric</th><td class=l>{}</td></tr>\
         <tr><th class=l>L1 / shared memory</th><td class=l>{}</td></tr>\
         <tr><th class=l>command</th><td class=l><code>{}</code></td></tr>\
         <tr><th class=l>ncu command</th><td class=l><code>{}</code></td></tr>\
         <tr><th class=l>commit, date</th><td class=l>{}, {}</td></tr></table>",
        escape(&s.kernel),
        s.dtype,
        s.domain,
        s.updates,
        escape(&s.machine),
        escape(&device),
        escape(s.ncu_version.as_deref().unwrap_or("–")),
        escape(&s.wavefront_metrics.join(" + ")),
        escape(&format!(
            "carve-out preference: {}; shared-memory configuration reported by ncu: {}; \
             L2 fetch size limit: {}",
            s.carveout
                .map(|c| format!("{c}% of the largest"))
                .unwrap_or_else(|| "driver's choice".into()),
            s.shared_config_bytes
                .map(|b| format!("{:.0} KiB", b / 1024.0))
                .unwrap_or_else(|| "not reported".into()),
            s.l2_fetch_bytes
                .map(|b| format!("{b} B"))
                .unwrap_or_else(|| "driver's".into())
        )),
        escape(&s.command),
        escape(s.ncu_command.as_deref().unwrap_or("–")),
        escape(s.commit.as_deref().unwrap_or("unknown")),
        escape(&s.date)
    );
    let _ = write!(
        b,
        "<p class=note>Relative error = (estimate − measured) / measured. Per lattice update; \
         DRAM store counts the kernel's DRAM writes plus the write-backs of its dirty L2 lines \
         that the eviction kernel after it causes. Agreement: |error| ≤ {:.0}%.</p>",
        TOLERANCE * 100.0
    );

    b.push_str("<h2>Error distribution per level</h2><table><tr><th class=l>level</th><th>n</th><th>min</th><th>p10</th><th>median</th><th>p90</th><th>max</th><th>median |e|</th><th>p90 |e|</th><th>max |e|</th><th>within ±10%</th><th class=l>worst configuration</th></tr>");
    for e in &s.summary {
        let q = e.signed_quantiles;
        let _ = write!(
            b,
            "<tr><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}%</td><td class=l>{}</td></tr>",
            e.level.name(),
            e.count,
            pct(q[0]),
            pct(q[1]),
            pct(q[2]),
            pct(q[3]),
            pct(q[4]),
            pct(e.median_abs),
            pct(e.p90_abs),
            pct(e.max_abs),
            e.within_tolerance * 100.0,
            e.worst.map(|c| c.to_string()).unwrap_or_default()
        );
    }
    b.push_str("</table>");
    let groups: Vec<String> = s
        .summary
        .iter()
        .map(|e| e.level.name().to_string())
        .collect();
    let series = vec![
        (
            "median |error| %".to_string(),
            s.summary.iter().map(|e| e.median_abs * 100.0).collect(),
        ),
        (
            "p90 |error| %".to_string(),
            s.summary.iter().map(|e| e.p90_abs * 100.0).collect(),
        ),
        (
            "max |error| %".to_string(),
            s.summary.iter().map(|e| e.max_abs * 100.0).collect(),
        ),
    ];
    let _ = write!(
        b,
        "<div class=figure>{}</div>",
        Bars {
            title: "Relative error of the estimate, per level",
            groups: &groups,
            series: &series,
            y_caption: "|error| (%)",
            reference: Some((TOLERANCE * 100.0, "±10%".into())),
        }
        .render()
    );

    b.push_str("<h2>Estimated against measured</h2>");
    let categories = vec![
        format!("within ±{:.0}%", TOLERANCE * 100.0),
        "outside".to_string(),
    ];
    for (i, level) in Level::ALL.iter().enumerate() {
        let points: Vec<(f64, f64, usize, String)> = s
            .records
            .iter()
            .filter_map(|r| {
                let m = r.measured.get(*level)?;
                let e = level.estimate(&r.estimate);
                let err = r.errors[i];
                let outside = usize::from(err.is_none_or(|e| e.abs() > TOLERANCE));
                Some((
                    m,
                    e,
                    outside,
                    format!(
                        "{}: estimate {e:.3}, measured {m:.3} {} ({})",
                        r.config,
                        level.unit(),
                        err.map(pct).unwrap_or_default()
                    ),
                ))
            })
            .collect();
        if points.is_empty() {
            let _ = write!(b, "<p class=note>{}: not measured.</p>", level.name());
            continue;
        }
        let title = format!("{} ({})", level.name(), level.unit());
        let x = format!("measured ({})", level.unit());
        let y = format!("estimated ({})", level.unit());
        let _ = write!(
            b,
            "<div class=figure>{}</div>",
            Scatter {
                title: &title,
                points: &points,
                categories: &categories,
                captions: (&x, &y),
                log: false,
                diagonal: true,
            }
            .render()
        );
    }

    b.push_str("<h2>Every configuration</h2><table><tr><th class=l>configuration</th><th>regs</th><th>blocks/SM</th><th title=\"the L1 the estimate took: what the launch's shared-memory configuration leaves\">L1 KiB</th><th title=\"the order the estimate issued the loads in: the compiled code's (--compiled-order) or the emitted one\">issue order</th><th>time</th>");
    for l in Level::ALL {
        let _ = write!(
            b,
            "<th>{} est.</th><th>meas.</th><th>error</th>",
            escape(l.name())
        );
    }
    b.push_str("</tr>");
    for r in &s.records {
        let _ = write!(
            b,
            "<tr><td class=l>{}</td><td title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            r.config,
            escape(&r.registers_from),
            registers_html(r),
            r.blocks_per_sm,
            r.l1_bytes / 1024,
            issue_order_html(r),
            r.duration_s.map(super::format_seconds).unwrap_or_default()
        );
        for (i, l) in Level::ALL.iter().enumerate() {
            let err = r.errors[i];
            let style = if err.is_some_and(|e| e.abs() > TOLERANCE) {
                " style=\"color:#b00\""
            } else {
                ""
            };
            let _ = write!(
                b,
                "<td>{}</td><td>{}</td><td{style}>{}</td>",
                num(Some(l.estimate(&r.estimate))),
                num(r.measured.get(*l)),
                err.map(pct).unwrap_or_else(|| "–".into())
            );
        }
        b.push_str("</tr>");
    }
    b.push_str("</table>");
    if !s.notes.is_empty() {
        b.push_str("<h2>Notes</h2><ul>");
        for n in &s.notes {
            let _ = write!(b, "<li>{}</li>", escape(n));
        }
        b.push_str("</ul>");
    }
    super::html_page(
        &format!(
            "Counters: {} ({:?}) on {}",
            s.kernel,
            s.dtype,
            s.device
                .as_ref()
                .map(|d| d.name.as_str())
                .unwrap_or(&s.machine)
        ),
        &b,
    )
}
