//! Line charts as self-contained SVG: axes with ticks and units, a title, a
//! legend; one polyline per series. A pure function of the chart data.

use std::fmt::Write as _;

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
    /// X axis label with unit.
    pub x_label: String,
    /// Y axis label with unit.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Labels for x positions 0, 1, 2, ... (categorical axis), if any.
    pub x_categories: Option<Vec<String>>,
    /// Logarithmic x axis (e.g. connections 1 ... 1000).
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

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if v <= m * p {
            return m * p;
        }
    }
    10.0 * p
}

/// Renders the chart as an `<svg>` element.
pub fn svg(c: &Chart) -> String {
    let pts: Vec<(f64, f64)> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    let fx = |x: f64| if c.log_x { x.max(1e-9).log10() } else { x };
    let (mut x0, mut x1) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
        (a.min(fx(p.0)), b.max(fx(p.0)))
    });
    if pts.is_empty() {
        (x0, x1) = (0.0, 1.0);
    }
    if (x1 - x0).abs() < 1e-12 {
        x0 -= 0.5;
        x1 += 0.5;
    }
    let ymax = nice_max(pts.iter().map(|p| p.1).fold(0.0, f64::max) * 1.05);
    let px = |x: f64| L + (fx(x) - x0) / (x1 - x0) * (W - L - R);
    let py = |y: f64| H - B - y / ymax * (H - T - B);
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
    for i in 0..=5 {
        let v = ymax * i as f64 / 5.0;
        let y = py(v);
        let _ = write!(
            s,
            r##"<line x1="{L}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - R,
            L - 6.0,
            y + 4.0,
            short(v)
        );
    }
    // X ticks: categories, or the distinct x values.
    let mut xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    for x in &xs {
        let label = match &c.x_categories {
            Some(cats) => cats.get(*x as usize).cloned().unwrap_or_default(),
            None => short(*x),
        };
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#999"/><text x="{0:.1}" y="{3}" text-anchor="middle">{4}</text>"##,
            px(*x),
            H - B,
            H - B + 5.0,
            H - B + 18.0,
            esc(&label)
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
        esc(&c.x_label)
    );
    let _ = write!(
        s,
        r#"<text x="16" y="{0}" text-anchor="middle" transform="rotate(-90 16 {0})">{1}</text>"#,
        (T + H - B) / 2.0,
        esc(&c.y_label)
    );
    for (x, label) in &c.markers {
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
    for (i, ser) in c.series.iter().enumerate() {
        let color = COLORS[ser.color.unwrap_or(i) % COLORS.len()];
        let dash = if ser.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let path: Vec<String> = ser
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1)))
            .collect();
        if path.len() > 1 {
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
                px(p.0),
                py(p.1),
                esc(&ser.name),
                short(p.1),
                short(p.0)
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
        let _ = write!(
            s,
            r#"<line x1="{lx0}" y1="{ly}" x2="{lx1}" y2="{ly}" stroke="{color}" stroke-width="3"{dash}/><text x="{tx}" y="{ty}">{name}</text>"#
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_every_series_and_labels() {
        let c = Chart {
            title: "Throughput".into(),
            x_label: "connections".into(),
            y_label: "requests/s".into(),
            series: vec![
                Series {
                    name: "cache-a".into(),
                    points: vec![(10.0, 1000.0), (100.0, 5000.0)],
                    color: None,
                    dashed: false,
                },
                Series {
                    name: "pg <x>".into(),
                    points: vec![(10.0, 500.0)],
                    color: Some(3),
                    dashed: true,
                },
            ],
            x_categories: None,
            log_x: true,
            markers: Vec::new(),
        };
        let s = svg(&c);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert_eq!(s.matches("<polyline").count(), 1);
        assert_eq!(s.matches("<circle").count(), 3);
        assert!(
            s.contains("pg &lt;x&gt;") && s.contains("requests/s") && s.contains("connections")
        );
        assert_eq!(short(1500.0), "1.5k");
        assert_eq!(short(2_000_000.0), "2M");
        assert_eq!(short(0.25), "0.25");
    }
}
