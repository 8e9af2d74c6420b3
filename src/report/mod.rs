//! Reports: terminal tables, JSON (serde, in the modules that own the data) and self-contained HTML
//! pages with SVG plots.

mod bench;
mod counters;
mod ranking;
pub mod svg;

pub use bench::{bench_html, bench_markdown, bench_text};
pub use counters::{counters_html, counters_table};
pub use ranking::{ranking_html, ranking_table};

/// A complete HTML page around `body`, with the project's minimal style.
pub fn html_page(title: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{t}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
th {{ background: #f3f3f3; }}
td.l, th.l {{ text-align: left; }}
.figure {{ margin: 1.5em 0; overflow-x: auto; }}
.note {{ color: #555; font-size: 13px; }}
</style></head><body>
<h1>{t}</h1>
{body}
</body></html>
"#,
        t = svg::escape(title)
    )
}

/// Seconds in the most readable unit.
pub fn format_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} µs", s * 1e6)
    }
}
