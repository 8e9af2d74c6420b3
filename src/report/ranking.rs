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
        "{} ({}) on {} ({}), domain {}: {} legal configurations{}, {} refused; minimal {} B/LUP",
        r.kernel,
        r.dtype,
        r.machine.name,
        r.machine.description,
        r.domain,
        r.legal(),
        pruned_clause(r),
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

/// How many configurations a pruned ranking estimated in full, for a sentence (empty unpruned).
fn pruned_clause(r: &Ranking) -> String {
    match &r.pruned {
        Some(p) => format!(
            " ({} estimated in full, ranks 1-{} exact; {} bounded: slower than {})",
            r.ranked.len(),
            p.exact_ranks,
            r.bounded.len(),
            format_seconds(p.threshold_seconds)
        ),
        None => String::new(),
    }
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
        "<p>Kernel <b>{}</b> ({}), domain {}, machine <b>{}</b> ({}). {} legal configurations ranked{}, {} refused. \
         Minimal volume {} B per lattice update; {} flops per lattice update.</p>",
        escape(&r.kernel),
        r.dtype,
        r.domain,
        escape(&r.machine.name),
        escape(&r.machine.description),
        r.legal(),
        escape(&pruned_clause(r)),
        r.refused.len(),
        r.min_bytes_per_lup,
        r.flops_per_lup
    );
    if let Some(p) = &r.pruned {
        let _ = write!(
            body,
            "<p class=note>Pruned ranking: every configuration was first bounded from below (the \
             exact per-warp volumes, every block's footprint in L2 and the compulsory DRAM traffic); \
             those whose bound lies within {}× of the best predicted time (or the {} best) were \
             estimated in full. The others cannot take less than {}, so ranks 1-{} are those of \
             the full ranking. <code>rank --exhaustive</code> estimates every configuration.</p>",
            p.pruning.margin,
            p.pruning.keep,
            format_seconds(p.threshold_seconds),
            p.exact_ranks
        );
    }
    body.push_str("<h2>Top configurations</h2>");
    body.push_str(&table_html(r, &r.ranked[..top.min(r.ranked.len())]));

    // Heat map: predicted GLUP/s by block shape (rows, the best 48 shapes) and folding (columns);
    // a bounded configuration shows its bound, hatched (it is at most that fast).
    struct Cell {
        lups: f64,
        tip: String,
        bounded: bool,
    }
    // Shapes by their best estimated configuration; shapes only bounded after them, by bound.
    let order = |a: &(bool, f64), b: &(bool, f64)| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1));
    let mut best_by_block: BTreeMap<[usize; 3], (bool, f64)> = BTreeMap::new();
    let mut cells: BTreeMap<([usize; 3], [usize; 3]), Cell> = BTreeMap::new();
    let mut folds: Vec<[usize; 3]> = Vec::new();
    let all = r
        .ranked
        .iter()
        .map(|x| (&x.config, &x.prediction, Some(x.rank)))
        .chain(r.bounded.iter().map(|x| (&x.config, &x.bound, None)));
    for (c, p, rank) in all {
        let e = best_by_block.entry(c.block).or_insert((false, 0.0));
        let key = (rank.is_some(), p.lups);
        if order(&key, e).is_gt() {
            *e = key;
        }
        let glups = p.lups / 1e9;
        let tip = match rank {
            Some(k) => format!(
                "block {} fold {}: rank {k}, {glups:.2} GLUP/s, {}",
                shape(c.block),
                shape(c.fold),
                p.limiter
            ),
            None => format!(
                "block {} fold {}: at most {glups:.2} GLUP/s (bounded, not estimated in full)",
                shape(c.block),
                shape(c.fold)
            ),
        };
        cells.insert(
            (c.block, c.fold),
            Cell {
                lups: glups,
                tip,
                bounded: rank.is_none(),
            },
        );
        if !folds.contains(&c.fold) {
            folds.push(c.fold);
        }
    }
    folds.sort();
    let mut blocks: Vec<([usize; 3], (bool, f64))> = best_by_block.into_iter().collect();
    blocks.sort_by(|a, b| order(&b.1, &a.1).then(a.0.cmp(&b.0)));
    blocks.truncate(48);
    let rows: Vec<String> = blocks.iter().map(|b| shape(b.0)).collect();
    let cols: Vec<String> = folds.iter().map(|f| shape(*f)).collect();
    let mut values = Vec::new();
    let mut tips = Vec::new();
    let mut limits = Vec::new();
    for (b, _) in &blocks {
        let row = folds.iter().map(|f| cells.get(&(*b, *f)));
        values.push(row.clone().map(|c| c.map(|c| c.lups)).collect());
        tips.push(
            row.clone()
                .map(|c| c.map_or(String::new(), |c| c.tip.clone()))
                .collect(),
        );
        limits.push(row.map(|c| c.is_some_and(|c| c.bounded)).collect());
    }
    body.push_str("<h2>Predicted performance over the space</h2><div class=figure>");
    body.push_str(
        &HeatMap {
            title: "Predicted GLUP/s (brighter is faster; hatched: at most; grey: not legal)",
            rows: &rows,
            cols: &cols,
            values: &values,
            tooltips: &tips,
            captions: ("block (best 48 shapes)", "thread folding"),
            limits: &limits,
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
        "<p class=note>Predicted time = a soft maximum ({}-norm) of the DRAM (or latency), L2, L1 and arithmetic times, \
         scaled for the partial last wave, plus launch overhead. Machine figures and their sources are in the JSON report.</p>",
        crate::model::OVERLAP_EXPONENT
    );
    html_page(&format!("stencilscope ranking: {}", r.kernel), &body)
}
