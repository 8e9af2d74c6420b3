//! The ranking report: terminal table and HTML page.

use super::svg::{escape, Bars, HeatMap};
use super::{format_seconds, html_page};
use crate::rank::{Ranked, Ranking};
use std::collections::BTreeMap;
use std::fmt::Write;

fn shape(v: [usize; 3]) -> String {
    format!("{}x{}x{}", v[0], v[1], v[2])
}

/// The top `top` configurations as a fixed-width text table.
pub fn ranking_table(r: &Ranking, top: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} ({}) on {} ({}), domain {}: {} legal configurations, {} refused; minimal {} B/LUP",
        r.kernel,
        r.dtype,
        r.machine.name,
        r.machine.description,
        r.domain,
        r.ranked.len(),
        r.refused.len(),
        r.min_bytes_per_lup
    );
    let _ = writeln!(
        s,
        "{:>4}  {:<12} {:<8} {:>11} {:>9} {:<8} {:>8} {:>8} {:>8} {:>8}  {:>5}",
        "rank",
        "block",
        "fold",
        "time",
        "GLUP/s",
        "limiter",
        "L1 B/LUP",
        "L2 B/LUP",
        "DRAM",
        "min",
        "occ"
    );
    for x in r.ranked.iter().take(top) {
        let p = &x.prediction;
        let v = &p.volumes;
        let _ = writeln!(
            s,
            "{:>4}  {:<12} {:<8} {:>11} {:>9.2} {:<8} {:>8.1} {:>8.1} {:>8.1} {:>8}  {:>4.0}%",
            x.rank,
            shape(x.config.block),
            shape(x.config.fold),
            format_seconds(p.seconds),
            p.lups / 1e9,
            p.limiter,
            v.l1_wavefronts * r.machine.line_bytes as f64,
            v.l2_load + v.l2_store,
            v.dram_load + v.dram_store,
            r.min_bytes_per_lup,
            100.0 * p.occupancy.fraction(&r.machine)
        );
    }
    s
}

fn table_html(r: &Ranking, rows: &[Ranked]) -> String {
    let mut s = String::from(
        "<table><tr><th>rank</th><th class=l>block</th><th class=l>fold</th><th>predicted</th><th>GLUP/s</th><th class=l>limiter</th>\
         <th>L1 req B/LUP</th><th>L1 wavefront B/LUP</th><th>L2 load</th><th>L2 store</th><th>DRAM load</th><th>DRAM store</th>\
         <th>registers</th><th>blocks/SM</th><th>waves</th></tr>",
    );
    for x in rows {
        let p = &x.prediction;
        let v = &p.volumes;
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{:.2}</td><td class=l>{}</td>\
             <td>{:.1}</td><td>{:.1}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{:.2}</td></tr>",
            x.rank,
            shape(x.config.block),
            shape(x.config.fold),
            format_seconds(p.seconds),
            p.lups / 1e9,
            p.limiter,
            v.l1_load_requests,
            v.l1_wavefronts * r.machine.line_bytes as f64,
            v.l2_load,
            v.l2_store,
            v.dram_load,
            v.dram_store,
            p.registers,
            p.occupancy.blocks_per_sm,
            p.waves
        );
    }
    s.push_str("</table>");
    s
}

/// The self-contained HTML report of a ranking.
pub fn ranking_html(r: &Ranking, top: usize) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>Kernel <b>{}</b> ({}), domain {}, machine <b>{}</b> ({}). {} legal configurations ranked, {} refused. \
         Minimal volume {} B per lattice update; {} flops per lattice update.</p>",
        escape(&r.kernel),
        r.dtype,
        r.domain,
        escape(&r.machine.name),
        escape(&r.machine.description),
        r.ranked.len(),
        r.refused.len(),
        r.min_bytes_per_lup,
        r.flops_per_lup
    );
    body.push_str("<h2>Top configurations</h2>");
    body.push_str(&table_html(r, &r.ranked[..top.min(r.ranked.len())]));

    // Heat map: predicted GLUP/s by block shape (rows, the best 48 shapes) and folding (columns).
    let mut best_by_block: BTreeMap<[usize; 3], f64> = BTreeMap::new();
    let mut cells: BTreeMap<([usize; 3], [usize; 3]), &Ranked> = BTreeMap::new();
    let mut folds: Vec<[usize; 3]> = Vec::new();
    for x in &r.ranked {
        let e = best_by_block.entry(x.config.block).or_insert(0.0);
        *e = e.max(x.prediction.lups);
        cells.insert((x.config.block, x.config.fold), x);
        if !folds.contains(&x.config.fold) {
            folds.push(x.config.fold);
        }
    }
    folds.sort();
    let mut blocks: Vec<([usize; 3], f64)> = best_by_block.into_iter().collect();
    blocks.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    blocks.truncate(48);
    let rows: Vec<String> = blocks.iter().map(|b| shape(b.0)).collect();
    let cols: Vec<String> = folds.iter().map(|f| shape(*f)).collect();
    let mut values = Vec::new();
    let mut tips = Vec::new();
    for (b, _) in &blocks {
        let mut vr = Vec::new();
        let mut tr = Vec::new();
        for f in &folds {
            match cells.get(&(*b, *f)) {
                Some(x) => {
                    vr.push(Some(x.prediction.lups / 1e9));
                    tr.push(format!(
                        "block {} fold {}: rank {}, {:.2} GLUP/s, {}",
                        shape(*b),
                        shape(*f),
                        x.rank,
                        x.prediction.lups / 1e9,
                        x.prediction.limiter
                    ));
                }
                None => {
                    vr.push(None);
                    tr.push(String::new());
                }
            }
        }
        values.push(vr);
        tips.push(tr);
    }
    body.push_str("<h2>Predicted performance over the space</h2><div class=figure>");
    body.push_str(
        &HeatMap {
            title: "Predicted GLUP/s (brighter is faster; grey: not legal)",
            rows: &rows,
            cols: &cols,
            values: &values,
            tooltips: &tips,
            captions: ("block (best 48 shapes)", "thread folding"),
        }
        .render(),
    );
    body.push_str("</div>");

    // Per-level volumes of the top configurations against the minimal volume.
    let shown = &r.ranked[..r.ranked.len().min(top.clamp(1, 20))];
    let groups: Vec<String> = shown
        .iter()
        .map(|x| {
            format!(
                "#{} {}/{}",
                x.rank,
                shape(x.config.block),
                shape(x.config.fold)
            )
        })
        .collect();
    let series = vec![
        (
            "L1 wavefronts".to_string(),
            shown
                .iter()
                .map(|x| x.prediction.volumes.l1_wavefronts * r.machine.line_bytes as f64)
                .collect(),
        ),
        (
            "L2 load+store".to_string(),
            shown
                .iter()
                .map(|x| x.prediction.volumes.l2_load + x.prediction.volumes.l2_store)
                .collect(),
        ),
        (
            "DRAM load+store".to_string(),
            shown
                .iter()
                .map(|x| x.prediction.volumes.dram_load + x.prediction.volumes.dram_store)
                .collect(),
        ),
    ];
    body.push_str("<h2>Data volumes of the top configurations</h2><div class=figure>");
    body.push_str(
        &Bars {
            title: "Bytes per lattice update by memory level",
            groups: &groups,
            series: &series,
            y_caption: "B/LUP",
            reference: Some((r.min_bytes_per_lup as f64, "minimal".into())),
        }
        .render(),
    );
    body.push_str("</div>");
    let _ = write!(
        body,
        "<p class=note>Predicted time = a soft maximum (4-norm) of the DRAM (or latency), L2, L1 and arithmetic times, \
         scaled for the partial last wave, plus launch overhead. Machine figures and their sources are in the JSON report.</p>"
    );
    html_page(&format!("stencilscope ranking: {}", r.kernel), &body)
}
