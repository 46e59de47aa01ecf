//! Inline SVG charts with no JavaScript and no external assets: line charts with
//! linear or logarithmic axes (bus bandwidth against message size, queue depth
//! against time) and step charts for CDFs.
//!
//! Output is deterministic text: the same data gives the same bytes, so reports
//! can be snapshot-tested and diffed.

use std::fmt::Write;

/// One named line on a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// (x, y) points in drawing order. Non-finite values are skipped.
    pub points: Vec<(f64, f64)>,
    /// Draw as a step function (CDFs) instead of straight segments.
    pub step: bool,
}

/// Axis scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Base-2 logarithmic (message sizes).
    Log2,
    /// Base-10 logarithmic (latencies).
    Log10,
}

/// A line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Formats a tick value on the x axis (e.g. bytes as "4 KiB").
    pub x_fmt: TickFormat,
    pub y_fmt: TickFormat,
    pub series: Vec<Series>,
}

/// How tick labels are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickFormat {
    /// Plain number with up to 3 significant digits.
    Number,
    /// Bytes with binary prefixes.
    Bytes,
    /// Percent (the value is a fraction 0..1).
    Percent,
}

/// Colour-blind-safe palette (Okabe & Ito, 2008).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// Drawing width (the SVG scales to the page's width) and the plot's height.
const W: f64 = 1100.0;
const PH: f64 = 300.0;
const ML: f64 = 70.0;
const MR: f64 = 20.0;
const MT: f64 = 34.0;
/// Below the plot: tick labels and the axis title.
const MB: f64 = 48.0;
/// One legend row.
const LEGEND_ROW: f64 = 18.0;
/// Width of one character of 11 px legend text, generously (DejaVu Sans averages
/// about 0.6 em), so that a legend entry never runs past its column.
const CHAR_W: f64 = 7.0;

/// Dash patterns, one per series (after colour, so lines differ in print and
/// for readers who cannot tell the colours apart).
const DASHES: [&str; 8] = ["", "9 4", "2 3", "12 3 2 3", "5 5", "1 2", "14 4 2 4 2 4", "6 2"];

/// Marker shapes, one per series.
#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
    Plus,
    Down,
    Bar,
}

const MARKERS: [Marker; 8] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Cross,
    Marker::Plus,
    Marker::Down,
    Marker::Bar,
];

/// A marker at (x, y).
fn marker(m: Marker, x: f64, y: f64, color: &str) -> String {
    let r = 3.5;
    match m {
        Marker::Circle => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{color}"/>"#),
        Marker::Square => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="{}" height="{}" fill="{color}"/>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        Marker::Triangle => format!(
            r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{color}"/>"#,
            y - r - 0.5,
            x + r,
            y + r,
            x - r,
            y + r
        ),
        Marker::Down => format!(
            r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{color}"/>"#,
            y + r + 0.5,
            x + r,
            y - r,
            x - r,
            y - r
        ),
        Marker::Diamond => format!(
            r#"<path d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z" fill="{color}"/>"#,
            y - r - 0.5,
            x + r + 0.5,
            y + r + 0.5,
            x - r - 0.5
        ),
        Marker::Cross => format!(
            r#"<path d="M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}" stroke="{color}" stroke-width="2"/>"#,
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r
        ),
        Marker::Plus => format!(
            r#"<path d="M{:.1},{y:.1} L{:.1},{y:.1} M{x:.1},{:.1} L{x:.1},{:.1}" stroke="{color}" stroke-width="2"/>"#,
            x - r - 0.5,
            x + r + 0.5,
            y - r - 0.5,
            y + r + 0.5
        ),
        Marker::Bar => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="2.5" height="{}" fill="{color}"/>"#,
            x - 1.25,
            y - r - 1.0,
            2.0 * r + 2.0
        ),
    }
}

/// Legend layout: columns and rows for `names`, each entry a 30 px line sample
/// and its name.
fn legend_layout(names: &[&str]) -> (usize, usize, f64) {
    let widest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64 * CHAR_W + 44.0;
    let avail = W - ML - MR;
    let cols = ((avail / widest).floor() as usize).clamp(1, 3).min(names.len().max(1));
    let rows = names.len().div_ceil(cols);
    (cols, rows, avail / cols as f64)
}

fn tr(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log2 => v.max(f64::MIN_POSITIVE).log2(),
        Scale::Log10 => v.max(f64::MIN_POSITIVE).log10(),
    }
}

fn valid(scale: Scale, v: f64) -> bool {
    v.is_finite() && (scale == Scale::Linear || v > 0.0)
}

/// Write a tick label.
pub fn fmt_tick(f: TickFormat, v: f64) -> String {
    match f {
        TickFormat::Number => fmt_num(v),
        TickFormat::Percent => format!("{}%", fmt_num(v * 100.0)),
        TickFormat::Bytes => {
            let units = ["B", "KiB", "MiB", "GiB", "TiB"];
            let mut x = v;
            let mut i = 0;
            while x >= 1024.0 && i + 1 < units.len() {
                x /= 1024.0;
                i += 1;
            }
            format!("{} {}", fmt_num(x), units[i])
        }
    }
}

/// A number with at most three significant digits and no trailing zeros.
pub fn fmt_num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() { "0".into() } else { "n/a".into() };
    }
    let a = v.abs();
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Evenly spaced "nice" ticks over [lo, hi] in transformed space.
fn ticks(scale: Scale, lo: f64, hi: f64) -> Vec<f64> {
    match scale {
        Scale::Log2 | Scale::Log10 => {
            let base: f64 = if scale == Scale::Log2 { 2.0 } else { 10.0 };
            let (a, b) = (lo.floor() as i32, hi.ceil() as i32);
            let span = (b - a).max(1);
            let step = ((span as f64) / 8.0).ceil().max(1.0) as i32;
            (a..=b).step_by(step as usize).map(|e| base.powi(e)).collect()
        }
        Scale::Linear => {
            let span = (hi - lo).max(f64::MIN_POSITIVE);
            let raw = span / 6.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| span / s <= 7.0)
                .unwrap_or(10.0 * mag);
            let mut t = (lo / step).ceil() * step;
            let mut out = Vec::new();
            while t <= hi + step * 1e-9 {
                out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
                t += step;
            }
            out
        }
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Chart {
    /// Render as a standalone `<svg>` element.
    pub fn render(&self) -> String {
        let pts = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| valid(self.x_scale, *x) && valid(self.y_scale, *y));
        let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
        for &(x, y) in pts {
            let (tx, ty) = (tr(self.x_scale, x), tr(self.y_scale, y));
            x0 = x0.min(tx);
            x1 = x1.max(tx);
            y0 = y0.min(ty);
            y1 = y1.max(ty);
        }
        let names: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
        let (cols, rows, col_w) = legend_layout(&names);
        let legend_top = MT + PH + MB + 8.0;
        let h = legend_top + rows as f64 * LEGEND_ROW + 6.0;
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{}" viewBox="0 0 {W} {h}" width="100%" preserveAspectRatio="xMinYMin meet" role="img" aria-label="{}">"#,
            esc(&self.id),
            esc(&self.title)
        );
        let _ = write!(out, r#"<title>{}</title>"#, esc(&self.title));
        let _ = write!(
            out,
            r#"<text x="{}" y="20" font-size="15" font-weight="bold">{}</text>"#,
            ML,
            esc(&self.title)
        );
        if !x0.is_finite() {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" font-size="13">no data</text></svg>"#,
                W / 2.0 - 30.0,
                (MT + PH) / 2.0
            );
            return out;
        }
        if self.y_scale == Scale::Linear {
            y0 = y0.min(0.0);
        }
        if (x1 - x0).abs() < 1e-12 {
            x0 -= 1.0;
            x1 += 1.0;
        }
        if (y1 - y0).abs() < 1e-12 {
            y1 += 1.0;
        }
        let pw = W - ML - MR;
        let ph = PH;
        let sx = |v: f64| ML + (tr(self.x_scale, v) - x0) / (x1 - x0) * pw;
        let sy = |v: f64| MT + ph - (tr(self.y_scale, v) - y0) / (y1 - y0) * ph;
        // axes and grid
        let _ = write!(
            out,
            r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
        );
        for t in ticks(self.x_scale, x0, x1) {
            let tx = tr(self.x_scale, t);
            if tx < x0 - 1e-9 || tx > x1 + 1e-9 {
                continue;
            }
            let px = sx(t);
            let _ = write!(
                out,
                r##"<line x1="{px:.1}" y1="{MT}" x2="{px:.1}" y2="{:.1}" stroke="#eee"/>"##,
                MT + ph
            );
            let _ = write!(
                out,
                r#"<text x="{px:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
                MT + ph + 16.0,
                esc(&fmt_tick(self.x_fmt, t))
            );
        }
        for t in ticks(self.y_scale, y0, y1) {
            let ty = tr(self.y_scale, t);
            if ty < y0 - 1e-9 || ty > y1 + 1e-9 {
                continue;
            }
            let py = sy(t);
            let _ = write!(
                out,
                r##"<line x1="{ML}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#eee"/>"##,
                ML + pw
            );
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"#,
                ML - 6.0,
                py + 4.0,
                esc(&fmt_tick(self.y_fmt, t))
            );
        }
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
            ML + pw / 2.0,
            MT + ph + MB - 8.0,
            esc(&self.x_label)
        );
        let _ = write!(
            out,
            r#"<text x="16" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"#,
            MT + ph / 2.0,
            MT + ph / 2.0,
            esc(&self.y_label)
        );
        // series: colour, dash pattern and marker each tell them apart
        for (i, s) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let dash = DASHES[i % DASHES.len()];
            let mark = MARKERS[i % MARKERS.len()];
            let dash_attr = if dash.is_empty() {
                String::new()
            } else {
                format!(r#" stroke-dasharray="{dash}""#)
            };
            let mut d = String::new();
            let mut prev: Option<(f64, f64)> = None;
            for &(x, y) in s
                .points
                .iter()
                .filter(|(x, y)| valid(self.x_scale, *x) && valid(self.y_scale, *y))
            {
                let (px, py) = (sx(x), sy(y));
                match prev {
                    None => {
                        let _ = write!(d, "M{px:.1},{py:.1}");
                    }
                    Some((_, ppy)) if s.step => {
                        let _ = write!(d, " L{px:.1},{ppy:.1} L{px:.1},{py:.1}");
                    }
                    Some(_) => {
                        let _ = write!(d, " L{px:.1},{py:.1}");
                    }
                }
                prev = Some((px, py));
            }
            let _ = write!(
                out,
                r#"<path class="series" data-series="{}" d="{}" fill="none" stroke="{color}" stroke-width="2"{dash_attr}/>"#,
                esc(&s.name),
                d
            );
            if !s.step && s.points.len() <= 40 {
                for &(x, y) in s
                    .points
                    .iter()
                    .filter(|(x, y)| valid(self.x_scale, *x) && valid(self.y_scale, *y))
                {
                    out.push_str(&marker(mark, sx(x), sy(y), color));
                }
            }
            // legend below the plot, in columns wide enough for the longest name
            let (c, r) = (i % cols, i / cols);
            let lx = ML + c as f64 * col_w;
            let ly = legend_top + r as f64 * LEGEND_ROW + 6.0;
            let _ = write!(
                out,
                r#"<g class="legend"><line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"{dash_attr}/>{}<text x="{:.1}" y="{:.1}" font-size="11">{}</text></g>"#,
                lx + 30.0,
                marker(mark, lx + 15.0, ly, color),
                lx + 38.0,
                ly + 4.0,
                esc(&s.name)
            );
        }
        out.push_str("</svg>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>, x_scale: Scale) -> Chart {
        Chart {
            id: "c1".into(),
            title: "busbw <by> size".into(),
            x_label: "size".into(),
            y_label: "GB/s".into(),
            x_scale,
            y_scale: Scale::Linear,
            x_fmt: TickFormat::Bytes,
            y_fmt: TickFormat::Number,
            series,
        }
    }

    #[test]
    fn renders_one_path_per_series_and_escapes_text() {
        let s = vec![
            Series {
                name: "IB".into(),
                points: vec![(1024.0, 1.0), (1048576.0, 40.0)],
                step: false,
            },
            Series {
                name: "RoCE & co".into(),
                points: vec![(1024.0, 0.5), (1048576.0, 30.0)],
                step: true,
            },
        ];
        let svg = chart(s, Scale::Log2).render();
        assert_eq!(svg.matches("<path class=\"series\"").count(), 2);
        assert!(svg.contains("RoCE &amp; co"));
        assert!(svg.contains("busbw &lt;by&gt; size"));
        assert!(svg.contains("1 KiB") && svg.contains("1 MiB"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn log_axis_skips_non_positive_points_and_empty_chart_says_so() {
        let s = vec![Series {
            name: "a".into(),
            points: vec![(0.0, 1.0), (f64::NAN, 2.0), (8.0, 3.0), (64.0, 4.0)],
            step: false,
        }];
        let svg = chart(s, Scale::Log2).render();
        // two points drawn, and the legend's sample
        assert_eq!(svg.matches("<circle").count(), 3);
        let empty = chart(vec![], Scale::Linear).render();
        assert!(empty.contains("no data"));
    }

    /// Series differ by colour, dash pattern and marker; the legend sits below the
    /// plot in columns wide enough for the longest name.
    #[test]
    fn series_are_told_apart_without_colour_and_the_legend_fits() {
        let names = [
            "InfiniBand NDR (SM, ftree)",
            "RoCEv2 misconfigured (RDMA DSCP lossy on one hop)",
            "c",
        ];
        let s: Vec<Series> = names
            .iter()
            .map(|n| Series {
                name: n.to_string(),
                points: vec![(1.0, 1.0), (2.0, 2.0)],
                step: false,
            })
            .collect();
        let svg = chart(s, Scale::Linear).render();
        assert_eq!(
            svg.matches("stroke-dasharray=\"9 4\"").count(),
            2,
            "line and legend sample"
        );
        assert_eq!(svg.matches("stroke-dasharray=\"2 3\"").count(), 2);
        assert_eq!(
            svg.matches("<rect x=").count() - 1,
            3,
            "two square markers and the legend's (plus the frame)"
        );
        let (cols, rows, col_w) = legend_layout(&names);
        assert!(col_w >= 50.0 * CHAR_W + 44.0, "{cols} columns of {col_w}");
        assert!(cols * rows >= names.len());
    }

    #[test]
    fn tick_formats() {
        assert_eq!(fmt_tick(TickFormat::Bytes, 4096.0), "4 KiB");
        assert_eq!(fmt_tick(TickFormat::Bytes, 1536.0), "1.5 KiB");
        assert_eq!(fmt_tick(TickFormat::Percent, 0.25), "25%");
        assert_eq!(fmt_num(46.04), "46");
        assert_eq!(fmt_num(0.125), "0.125");
        assert_eq!(fmt_num(3.5), "3.5");
    }

    #[test]
    fn linear_ticks_are_round_numbers() {
        let t = ticks(Scale::Linear, 0.0, 48.0);
        assert_eq!(t, vec![0.0, 10.0, 20.0, 30.0, 40.0]);
    }
}
