//! Charts as self-contained SVG: axes with ticks and units (linear,
//! logarithmic, or percentiles spread as HdrHistogram plots them), a title, a
//! legend; one polyline per series, or bars where every point has one x;
//! dashed lines across the plot (a goal) and event markers. A pure function of
//! the chart data.

mod scale;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;

pub use scale::{Axis, Scale};
use scale::{Span, place_span, value_span};

/// One line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points `(x, y)`, x ascending.
    pub points: Vec<(f64, f64)>,
    /// Colour slot (series of one target share it); `None`: by position.
    pub color: Option<usize>,
    /// Drawn dashed (e.g. p99 beside a solid p50).
    pub dashed: bool,
}

/// A chart to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis: label with unit (a label converts), scale, lines across.
    pub x_label: Axis,
    /// Y axis: label with unit (a label converts), scale, lines across (a
    /// p99 goal).
    pub y_label: Axis,
    /// The lines.
    pub series: Vec<Series>,
    /// Labels for x positions 0, 1, 2, ... (categorical axis), if any.
    pub x_categories: Option<Vec<String>>,
    /// Logarithmic x axis (e.g. connections 1 ... 1000), as `Scale::Log`.
    pub log_x: bool,
    /// Vertical lines at x with a label (events during a run).
    pub markers: Vec<(f64, String)>,
}

const W: f64 = 780.0;
const H: f64 = 360.0;
const L: f64 = 80.0;
const R: f64 = 230.0;
const T: f64 = 40.0;
const B: f64 = 55.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A compact number for tick labels: 1.2k, 35M, 0.5.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if x.abs() >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

/// Renders the chart as an `<svg>` element.
pub fn svg(c: &Chart) -> String {
    let p = Plot::of(c);
    let mut s = String::new();
    p.frame(&mut s);
    p.ticks(&mut s);
    p.axes(&mut s);
    p.lines_across(&mut s);
    for (i, ser) in c.series.iter().enumerate() {
        p.series(&mut s, i, ser);
    }
    s.push_str("</svg>");
    s
}

/// Where a chart's values land: its x scale, both spans, and whether it
/// draws bars (every point at one x) rather than lines.
struct Plot<'a> {
    /// The chart drawn.
    c: &'a Chart,
    /// The x axis's scale: linear for categories, else as asked.
    x_scale: Scale,
    /// The x values' span and ticks.
    xspan: Span,
    /// The y values' span and ticks.
    yspan: Span,
    /// Every point at one x: bars side by side, not lines from nowhere.
    bars: bool,
}

impl<'a> Plot<'a> {
    /// The placement of chart `c`.
    fn of(c: &'a Chart) -> Plot<'a> {
        let pts: Vec<(f64, f64)> = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .collect();
        let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
        let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let x_scale = match (&c.x_categories, c.log_x) {
            (Some(_), _) => Scale::Linear,
            (None, true) => Scale::Log,
            (None, false) => c.x_label.scale,
        };
        let x_axis = Axis {
            scale: x_scale,
            ..c.x_label.clone()
        };
        let xspan = place_span(&x_axis, &xs, &|x| tick_label(c, x_scale, x));
        Plot {
            c,
            x_scale,
            xspan,
            yspan: value_span(&c.y_label, &ys),
            bars: !pts.is_empty() && xs.iter().all(|x| *x == xs[0]),
        }
    }

    /// The x of value `x` in the picture.
    fn px(&self, x: f64) -> f64 {
        let span = &self.xspan;
        L + (self.x_scale.pos(x) - span.lo) / (span.hi - span.lo) * (W - L - R)
    }

    /// The y of value `y` in the picture (clamped to the plot).
    fn py(&self, y: f64) -> f64 {
        let f = (self.c.y_label.scale.pos(y) - self.yspan.lo) / (self.yspan.hi - self.yspan.lo);
        H - B - f.clamp(0.0, 1.0) * (H - T - B)
    }

    /// The label of x value `x`.
    fn tick_label(&self, x: f64) -> String {
        tick_label(self.c, self.x_scale, x)
    }

    /// The `<svg>` element's opening, a white ground and the title.
    fn frame(&self, s: &mut String) {
        let title = esc(&self.c.title);
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{title}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(
            s,
            r##"<rect width="{W}" height="{H}" fill="#fff"/><text x="{}" y="22" font-size="15" font-weight="bold" text-anchor="middle">{title}</text>"##,
            (L + W - R) / 2.0
        );
    }

    /// The y grid with its labels, and the x ticks with theirs.
    fn ticks(&self, s: &mut String) {
        for (v, label) in &self.yspan.ticks {
            let y = self.py(*v);
            let _ = write!(
                s,
                r##"<line x1="{L}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#e5e5e5"/><text class="ytick" x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                W - R,
                L - 6.0,
                y + 4.0,
                esc(label)
            );
        }
        for (x, label) in &self.xspan.ticks {
            let _ = write!(
                s,
                r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#999"/><text class="xtick" x="{0:.1}" y="{3}" text-anchor="middle">{4}</text>"##,
                self.px(*x),
                H - B,
                H - B + 5.0,
                H - B + 18.0,
                esc(label)
            );
        }
    }

    /// The two axes and their labels.
    fn axes(&self, s: &mut String) {
        let _ = write!(
            s,
            r##"<line x1="{L}" y1="{0}" x2="{1}" y2="{0}" stroke="#333"/><line x1="{L}" y1="{T}" x2="{L}" y2="{0}" stroke="#333"/>"##,
            H - B,
            W - R
        );
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            (L + W - R) / 2.0,
            H - 12.0,
            esc(&self.c.x_label.label)
        );
        let _ = write!(
            s,
            r#"<text x="16" y="{0}" text-anchor="middle" transform="rotate(-90 16 {0})">{1}</text>"#,
            (T + H - B) / 2.0,
            esc(&self.c.y_label.label)
        );
    }

    /// Dashed lines across the plot: events and the x axis's lines upright
    /// (each label a line lower than the one before, on the plot's side of
    /// its line), the y axis's (a goal) level.
    fn lines_across(&self, s: &mut String) {
        for (i, (x, label)) in self
            .c
            .markers
            .iter()
            .chain(&self.c.x_label.lines)
            .enumerate()
        {
            let px = self.px(*x);
            let (tx, anchor) = match px > L + (W - L - R) / 2.0 {
                true => (px - 3.0, "end"),
                false => (px + 3.0, "start"),
            };
            let _ = write!(
                s,
                r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#555" stroke-dasharray="3 3"/><text x="{3:.1}" y="{4}" text-anchor="{5}" font-size="11">{6}</text>"##,
                px,
                T,
                H - B,
                tx,
                T + 10.0 + 12.0 * (i % 4) as f64,
                anchor,
                esc(label)
            );
        }
        for (y, label) in &self.c.y_label.lines {
            let _ = write!(
                s,
                r##"<line class="goal" x1="{L}" y1="{0:.1}" x2="{1}" y2="{0:.1}" stroke="#b00" stroke-width="1.5" stroke-dasharray="8 4"/><text x="{2}" y="{3:.1}" text-anchor="end" font-size="11" fill="#b00">{4}</text>"##,
                self.py(*y),
                W - R,
                W - R - 4.0,
                self.py(*y) - 4.0,
                esc(label)
            );
        }
    }

    /// Series `i`: its bars or line, a circle per point, its legend entry.
    fn series(&self, s: &mut String, i: usize, ser: &Series) {
        let color = COLORS[ser.color.unwrap_or(i) % COLORS.len()];
        let dash = if ser.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let n = self.c.series.len().max(1) as f64;
        let slot = (48f64).min((W - L - R) * 0.6 / n);
        // A bar's middle: its slot beside the others' around the one x.
        let at = |x: f64| match self.bars {
            true => self.px(x) - n * slot / 2.0 + (i as f64 + 0.5) * slot,
            false => self.px(x),
        };
        let opacity = if ser.dashed { 0.45 } else { 0.85 };
        if self.bars {
            for p in &ser.points {
                let _ = write!(
                    s,
                    r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}" fill-opacity="{opacity}"/>"#,
                    at(p.0) - slot / 2.0 + 3.0,
                    self.py(p.1),
                    slot - 6.0,
                    (H - B - self.py(p.1)).max(0.0)
                );
            }
        } else if ser.points.len() > 1 {
            let path: Vec<String> = ser
                .points
                .iter()
                .map(|p| format!("{:.1},{:.1}", at(p.0), self.py(p.1)))
                .collect();
            let _ = write!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
                path.join(" ")
            );
        }
        for p in &ser.points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{}: {} at {}</title></circle>"#,
                at(p.0),
                self.py(p.1),
                esc(&ser.name),
                short(p.1),
                self.tick_label(p.0)
            );
        }
        let ly = T + 10.0 + i as f64 * 20.0;
        let (lx0, lx1, tx, ty, name) = (
            W - R + 12.0,
            W - R + 32.0,
            W - R + 38.0,
            ly + 2.0,
            esc(&ser.name),
        );
        let _ = match self.bars {
            true => write!(
                s,
                r#"<rect x="{lx0}" y="{}" width="20" height="10" fill="{color}" fill-opacity="{opacity}"/><text x="{tx}" y="{ty}">{name}</text>"#,
                ly - 5.0
            ),
            false => write!(
                s,
                r#"<line x1="{lx0}" y1="{ly}" x2="{lx1}" y2="{ly}" stroke="{color}" stroke-width="3"{dash}/><text x="{tx}" y="{ty}">{name}</text>"#
            ),
        };
    }
}

/// The label of x value `x` on chart `c` with x scale `x_scale`: its
/// category, a percentile, or a compact number.
fn tick_label(c: &Chart, x_scale: Scale, x: f64) -> String {
    match &c.x_categories {
        Some(cats) => cats.get(x as usize).cloned().unwrap_or_default(),
        None if x_scale == Scale::Percentile => scale::percent(x),
        None => short(x),
    }
}
