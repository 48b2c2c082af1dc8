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
use scale::{place_span, value_span};

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
    let tick_label = |x: f64| match &c.x_categories {
        Some(cats) => cats.get(x as usize).cloned().unwrap_or_default(),
        None if x_scale == Scale::Percentile => scale::percent(x),
        None => short(x),
    };
    let xspan = place_span(&x_axis, &xs, &tick_label);
    let yspan = value_span(&c.y_label, &ys);
    // Every point at one x: bars side by side, not lines from nowhere.
    let bars = !pts.is_empty() && xs.iter().all(|x| *x == xs[0]);
    let px = |x: f64| L + (x_scale.pos(x) - xspan.lo) / (xspan.hi - xspan.lo) * (W - L - R);
    let py = |y: f64| {
        let f = (c.y_label.scale.pos(y) - yspan.lo) / (yspan.hi - yspan.lo);
        H - B - f.clamp(0.0, 1.0) * (H - T - B)
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{}" font-family="sans-serif" font-size="12">"#,
        esc(&c.title)
    );
    let _ = write!(
        s,
        r##"<rect width="{W}" height="{H}" fill="#fff"/><text x="{}" y="22" font-size="15" font-weight="bold" text-anchor="middle">{}</text>"##,
        (L + W - R) / 2.0,
        esc(&c.title)
    );
    // Y grid and ticks.
    for (v, label) in &yspan.ticks {
        let y = py(*v);
        let _ = write!(
            s,
            r##"<line x1="{L}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#e5e5e5"/><text class="ytick" x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - R,
            L - 6.0,
            y + 4.0,
            esc(label)
        );
    }
    for (x, label) in &xspan.ticks {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#999"/><text class="xtick" x="{0:.1}" y="{3}" text-anchor="middle">{4}</text>"##,
            px(*x),
            H - B,
            H - B + 5.0,
            H - B + 18.0,
            esc(label)
        );
    }
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
        esc(&c.x_label.label)
    );
    let _ = write!(
        s,
        r#"<text x="16" y="{0}" text-anchor="middle" transform="rotate(-90 16 {0})">{1}</text>"#,
        (T + H - B) / 2.0,
        esc(&c.y_label.label)
    );
    for (x, label) in c.markers.iter().chain(&c.x_label.lines) {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#555" stroke-dasharray="3 3"/><text x="{3:.1}" y="{4}" font-size="11">{5}</text>"##,
            px(*x),
            T,
            H - B,
            px(*x) + 3.0,
            T + 10.0,
            esc(label)
        );
    }
    for (y, label) in &c.y_label.lines {
        let _ = write!(
            s,
            r##"<line class="goal" x1="{L}" y1="{0:.1}" x2="{1}" y2="{0:.1}" stroke="#b00" stroke-width="1.5" stroke-dasharray="8 4"/><text x="{2}" y="{3:.1}" text-anchor="end" font-size="11" fill="#b00">{4}</text>"##,
            py(*y),
            W - R,
            W - R - 4.0,
            py(*y) - 4.0,
            esc(label)
        );
    }
    let n = c.series.len().max(1) as f64;
    let slot = (48f64).min((W - L - R) * 0.6 / n);
    for (i, ser) in c.series.iter().enumerate() {
        let color = COLORS[ser.color.unwrap_or(i) % COLORS.len()];
        let dash = if ser.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        // A bar's middle: its slot beside the others' around the one x.
        let at = |x: f64| match bars {
            true => px(x) - n * slot / 2.0 + (i as f64 + 0.5) * slot,
            false => px(x),
        };
        let path: Vec<String> = ser
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", at(p.0), py(p.1)))
            .collect();
        if bars {
            let opacity = if ser.dashed { 0.45 } else { 0.85 };
            for p in &ser.points {
                let _ = write!(
                    s,
                    r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}" fill-opacity="{opacity}"/>"#,
                    at(p.0) - slot / 2.0 + 3.0,
                    py(p.1),
                    slot - 6.0,
                    (H - B - py(p.1)).max(0.0)
                );
            }
        } else if path.len() > 1 {
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
                py(p.1),
                esc(&ser.name),
                short(p.1),
                tick_label(p.0)
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
        let _ = match bars {
            true => write!(
                s,
                r#"<rect x="{lx0}" y="{}" width="20" height="10" fill="{color}" fill-opacity="{}"/><text x="{tx}" y="{ty}">{name}</text>"#,
                ly - 5.0,
                if ser.dashed { 0.45 } else { 0.85 }
            ),
            false => write!(
                s,
                r#"<line x1="{lx0}" y1="{ly}" x2="{lx1}" y2="{ly}" stroke="{color}" stroke-width="3"{dash}/><text x="{tx}" y="{ty}">{name}</text>"#
            ),
        };
    }
    s.push_str("</svg>");
    s
}
