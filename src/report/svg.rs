//! Small self-contained SVG charts (heat map, grouped bars, scatter with log axes) for the HTML
//! reports. Plain SVG text: the reports must open in any browser with no scripts or fonts to load.

use std::fmt::Write;

/// Escapes text for SVG and HTML.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A colour from a value in `[0, 1]` (dark blue → yellow, perceptually ordered like viridis).
pub fn ramp(t: f64) -> String {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let c = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", c(a.0, b.0), c(a.1, b.1), c(a.2, b.2))
}

/// A categorical colour.
pub fn category(i: usize) -> &'static str {
    const C: [&str; 8] = [
        "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    ];
    C[i % C.len()]
}

/// A heat map: `values[row][col]`, `None` for empty cells; larger is better (brighter).
pub struct HeatMap<'a> {
    /// Title above the map.
    pub title: &'a str,
    /// Row labels.
    pub rows: &'a [String],
    /// Column labels.
    pub cols: &'a [String],
    /// Cell values.
    pub values: &'a [Vec<Option<f64>>],
    /// Tooltip per cell.
    pub tooltips: &'a [Vec<String>],
    /// Axis captions (rows, columns).
    pub captions: (&'a str, &'a str),
    /// Cells whose value is only an upper limit, drawn hatched (empty: none).
    pub limits: &'a [Vec<bool>],
}

impl HeatMap<'_> {
    /// Renders the heat map.
    pub fn render(&self) -> String {
        let cell = 22.0;
        let left = 90.0;
        let top = 40.0;
        let w = left + cell * self.cols.len() as f64 + 20.0;
        let h = top + cell * self.rows.len() as f64 + 60.0;
        let (lo, hi) = self
            .values
            .iter()
            .flatten()
            .flatten()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                (l.min(*v), h.max(*v))
            });
        let mut s = header(w, h, self.title);
        for (r, label) in self.rows.iter().enumerate() {
            let y = top + cell * r as f64;
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end" font-size="10">{}</text>"#,
                left - 4.0,
                y + cell * 0.65,
                escape(label)
            );
            for (c, v) in self.values[r].iter().enumerate() {
                let x = left + cell * c as f64;
                let (fill, tip) = match v {
                    Some(v) => (
                        ramp(if hi > lo { (v - lo) / (hi - lo) } else { 1.0 }),
                        self.tooltips[r][c].clone(),
                    ),
                    None => ("#eeeeee".to_string(), "not legal".to_string()),
                };
                let _ = write!(
                    s,
                    r#"<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="white"><title>{}</title></rect>"#,
                    escape(&tip)
                );
                if v.is_some() && self.limits.get(r).and_then(|l| l.get(c)) == Some(&true) {
                    // Hatched: the true value lies somewhere below the colour shown.
                    let _ = write!(
                        s,
                        r#"<path d="M{x} {} l{cell} -{cell} M{x} {} l{} -{} M{} {} l{} -{}" stroke="white" stroke-width="2" pointer-events="none"/>"#,
                        y + cell,
                        y + cell * 0.5,
                        cell * 0.5,
                        cell * 0.5,
                        x + cell * 0.5,
                        y + cell,
                        cell * 0.5,
                        cell * 0.5
                    );
                }
            }
        }
        for (c, label) in self.cols.iter().enumerate() {
            let x = left + cell * c as f64 + cell * 0.5;
            let y = top + cell * self.rows.len() as f64 + 8.0;
            let _ = write!(
                s,
                r#"<text x="{x}" y="{y}" font-size="10" transform="rotate(60 {x} {y})">{}</text>"#,
                escape(label)
            );
        }
        let _ = write!(
            s,
            r#"<text x="4" y="{}" font-size="11" transform="rotate(-90 12 {})">{}</text><text x="{}" y="{}" font-size="11">{}</text>"#,
            top + 60.0,
            top + 60.0,
            escape(self.captions.0),
            left,
            h - 4.0,
            escape(self.captions.1)
        );
        s.push_str("</svg>");
        s
    }
}

/// Grouped bars: one group per label, one bar per series; `reference` draws a dashed line.
pub struct Bars<'a> {
    /// Title.
    pub title: &'a str,
    /// Group labels (x axis).
    pub groups: &'a [String],
    /// Series names and their values per group.
    pub series: &'a [(String, Vec<f64>)],
    /// Y-axis caption.
    pub y_caption: &'a str,
    /// A horizontal reference line and its label.
    pub reference: Option<(f64, String)>,
}

impl Bars<'_> {
    /// Renders the bar chart.
    pub fn render(&self) -> String {
        let (left, top, plot_h) = (60.0, 40.0, 220.0);
        let bar = 10.0;
        let group_w = bar * self.series.len() as f64 + 12.0;
        let w = left + group_w * self.groups.len() as f64 + 160.0;
        let h = top + plot_h + 90.0;
        let max = self
            .series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .chain(self.reference.as_ref().map(|r| r.0))
            .fold(0.0f64, f64::max)
            .max(1e-30)
            * 1.1;
        let y = |v: f64| top + plot_h - plot_h * v / max;
        let mut s = header(w, h, self.title);
        axis_y(&mut s, left, top, plot_h, 0.0, max, false, self.y_caption);
        for (g, label) in self.groups.iter().enumerate() {
            let gx = left + 6.0 + group_w * g as f64;
            for (k, (_, vals)) in self.series.iter().enumerate() {
                let v = vals.get(g).copied().unwrap_or(0.0);
                let _ = write!(
                    s,
                    r#"<rect x="{}" y="{}" width="{bar}" height="{}" fill="{}"><title>{:.3}</title></rect>"#,
                    gx + bar * k as f64,
                    y(v),
                    top + plot_h - y(v),
                    category(k),
                    v
                );
            }
            let tx = gx + 2.0;
            let ty = top + plot_h + 10.0;
            let _ = write!(
                s,
                r#"<text x="{tx}" y="{ty}" font-size="9" transform="rotate(60 {tx} {ty})">{}</text>"#,
                escape(label)
            );
        }
        if let Some((v, label)) = &self.reference {
            let _ = write!(
                s,
                r#"<line x1="{left}" x2="{}" y1="{}" y2="{}" stroke="black" stroke-dasharray="4 3"/><text x="{}" y="{}" font-size="10">{}</text>"#,
                left + group_w * self.groups.len() as f64,
                y(*v),
                y(*v),
                left + group_w * self.groups.len() as f64 + 4.0,
                y(*v) + 3.0,
                escape(label)
            );
        }
        legend(
            &mut s,
            left + group_w * self.groups.len() as f64 + 10.0,
            top + 20.0,
            self.series.iter().map(|x| x.0.as_str()),
        );
        s.push_str("</svg>");
        s
    }
}

/// A scatter plot; points carry a category (colour) and a tooltip.
pub struct Scatter<'a> {
    /// Title.
    pub title: &'a str,
    /// (x, y, category, tooltip).
    pub points: &'a [(f64, f64, usize, String)],
    /// Category names, by index.
    pub categories: &'a [String],
    /// Axis captions (x, y).
    pub captions: (&'a str, &'a str),
    /// Logarithmic axes.
    pub log: bool,
    /// Draw the diagonal y = x.
    pub diagonal: bool,
}

impl Scatter<'_> {
    /// Renders the scatter plot.
    pub fn render(&self) -> String {
        let (left, top, pw, ph) = (70.0, 40.0, 420.0, 320.0);
        let w = left + pw + 170.0;
        let h = top + ph + 60.0;
        let t = |v: f64| if self.log { v.max(1e-300).log10() } else { v };
        let finite: Vec<(f64, f64)> = self
            .points
            .iter()
            .map(|p| (t(p.0), t(p.1)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        let (mut x0, mut x1, mut y0, mut y1) = finite.iter().fold(
            (
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ),
            |(a, b, c, d), (x, y)| (a.min(*x), b.max(*x), c.min(*y), d.max(*y)),
        );
        if self.diagonal {
            (x0, y0) = (x0.min(y0), x0.min(y0));
            (x1, y1) = (x1.max(y1), x1.max(y1));
        }
        if !x0.is_finite() {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        let pad = |a: f64, b: f64| {
            let d = if b > a { (b - a) * 0.05 } else { 0.5 };
            (a - d, b + d)
        };
        let ((x0, x1), (y0, y1)) = (pad(x0, x1), pad(y0, y1));
        let px = |x: f64| left + pw * (t(x) - x0) / (x1 - x0);
        let py = |y: f64| top + ph - ph * (t(y) - y0) / (y1 - y0);
        let mut s = header(w, h, self.title);
        axis_y(&mut s, left, top, ph, y0, y1, self.log, self.captions.1);
        axis_x(
            &mut s,
            left,
            top + ph,
            pw,
            x0,
            x1,
            self.log,
            self.captions.0,
        );
        if self.diagonal {
            let (a, b) = (x0.max(y0), x1.min(y1));
            let inv = |v: f64| if self.log { 10f64.powf(v) } else { v };
            let _ = write!(
                s,
                r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#999" stroke-dasharray="4 3"/>"##,
                px(inv(a)),
                py(inv(a)),
                px(inv(b)),
                py(inv(b))
            );
        }
        for (x, y, c, tip) in self.points {
            if !(t(*x).is_finite() && t(*y).is_finite()) {
                continue;
            }
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}" fill-opacity="0.75"><title>{}</title></circle>"#,
                px(*x),
                py(*y),
                category(*c),
                escape(tip)
            );
        }
        legend(
            &mut s,
            left + pw + 16.0,
            top + 20.0,
            self.categories.iter().map(String::as_str),
        );
        s.push_str("</svg>");
        s
    }
}

fn header(w: f64, h: f64, title: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif"><text x="8" y="18" font-size="13" font-weight="bold">{}</text>"#,
        escape(title)
    )
}

fn ticks(lo: f64, hi: f64, log: bool) -> Vec<(f64, String)> {
    if log {
        let (a, b) = (lo.ceil() as i64, hi.floor() as i64);
        return (a..=b).map(|e| (e as f64, format!("1e{e}"))).collect();
    }
    let span = (hi - lo).max(1e-300);
    let step = 10f64.powf((span / 5.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * step)
        .find(|s| span / s <= 6.0)
        .unwrap_or(step * 10.0);
    let mut v = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while v <= hi + 1e-12 * span {
        out.push((
            v,
            format!("{:.3}", v)
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
        ));
        v += step;
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn axis_y(s: &mut String, left: f64, top: f64, h: f64, lo: f64, hi: f64, log: bool, cap: &str) {
    let _ = write!(
        s,
        r#"<line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="black"/>"#,
        top + h
    );
    for (v, label) in ticks(lo, hi, log) {
        let y = top + h - h * (v - lo) / (hi - lo);
        let _ = write!(
            s,
            r##"<line x1="{}" x2="{left}" y1="{y}" y2="{y}" stroke="black"/><text x="{}" y="{}" font-size="10" text-anchor="end">{label}</text>"##,
            left - 4.0,
            left - 6.0,
            y + 3.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="12" y="{}" font-size="11" transform="rotate(-90 12 {})" text-anchor="middle">{}</text>"#,
        top + h / 2.0,
        top + h / 2.0,
        escape(cap)
    );
}

#[allow(clippy::too_many_arguments)]
fn axis_x(s: &mut String, left: f64, y0: f64, w: f64, lo: f64, hi: f64, log: bool, cap: &str) {
    let _ = write!(
        s,
        r#"<line x1="{left}" y1="{y0}" x2="{}" y2="{y0}" stroke="black"/>"#,
        left + w
    );
    for (v, label) in ticks(lo, hi, log) {
        let x = left + w * (v - lo) / (hi - lo);
        let _ = write!(
            s,
            r#"<line x1="{x}" x2="{x}" y1="{y0}" y2="{}" stroke="black"/><text x="{x}" y="{}" font-size="10" text-anchor="middle">{label}</text>"#,
            y0 + 4.0,
            y0 + 16.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
        left + w / 2.0,
        y0 + 34.0,
        escape(cap)
    );
}

fn legend<'a>(s: &mut String, x: f64, y: f64, names: impl Iterator<Item = &'a str>) {
    for (i, n) in names.enumerate() {
        let yy = y + 16.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{x}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{yy}" font-size="11">{}</text>"#,
            yy - 9.0,
            category(i),
            x + 14.0,
            escape(n)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_and_escaped() {
        let rows = vec!["a<b".to_string()];
        let cols = vec!["c".to_string(), "d".to_string()];
        let hm = HeatMap {
            title: "t & u",
            rows: &rows,
            cols: &cols,
            values: &[vec![Some(1.0), None]],
            tooltips: &[vec!["x".into(), "y".into()]],
            captions: ("r", "c"),
            limits: &[vec![true, true]],
        }
        .render();
        assert!(hm.starts_with("<svg") && hm.ends_with("</svg>"));
        assert!(hm.contains("a&lt;b") && hm.contains("t &amp; u"));
        assert_eq!(hm.matches("<rect").count(), 2);
        // Only the cell with a value is hatched.
        assert_eq!(hm.matches("<path").count(), 1);
        let sc = Scatter {
            title: "s",
            points: &[(1e-3, 2e-3, 0, "p".into()), (1e-2, 1e-2, 1, "q".into())],
            categories: &["DRAM".into(), "L2".into()],
            captions: ("measured", "predicted"),
            log: true,
            diagonal: true,
        }
        .render();
        assert_eq!(sc.matches("<circle").count(), 2);
        assert!(sc.contains("1e-2"));
        let b = Bars {
            title: "b",
            groups: &["g1".into()],
            series: &[("DRAM".into(), vec![16.0]), ("L2".into(), vec![20.0])],
            y_caption: "B/LUP",
            reference: Some((16.0, "minimal".into())),
        }
        .render();
        assert!(b.contains("stroke-dasharray"));
        assert_eq!(ramp(0.0), "#440154");
        assert_eq!(ramp(1.0), "#fde725");
    }
}
