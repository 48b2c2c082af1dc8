//! Charts drawn and read back: tick labels, bars, goal lines, percentile axes.

use super::*;

fn series(name: &str, points: &[(f64, f64)]) -> Series {
    Series {
        name: name.into(),
        points: points.to_vec(),
        color: None,
        dashed: false,
    }
}

fn chart(y: Axis, series: Vec<Series>) -> Chart {
    Chart {
        title: "t".into(),
        x_label: "x".into(),
        y_label: y,
        series,
        x_categories: None,
        log_x: false,
        markers: Vec::new(),
    }
}

/// Numeric attribute `name` of the tag starting `t`.
fn attr(t: &str, name: &str) -> f64 {
    let t = &t[..t.find('>').unwrap()];
    let k = format!(" {name}=\"");
    let i = t.find(&k).unwrap() + k.len();
    t[i..i + t[i..].find('"').unwrap()].parse().unwrap()
}

/// Attribute `name` of every tag that starts with `open`.
fn attrs(svg: &str, open: &str, name: &str) -> Vec<f64> {
    svg.match_indices(open)
        .map(|(i, _)| attr(&svg[i..], name))
        .collect()
}

/// Every `<text class="{class}" x=.. y=..>label</text>`: (x, y, label).
fn ticks(svg: &str, class: &str) -> Vec<(f64, f64, String)> {
    svg.match_indices(&format!("<text class=\"{class}\""))
        .map(|(i, _)| {
            let t = &svg[i..];
            let (gt, end) = (t.find('>').unwrap(), t.find("</text>").unwrap());
            (attr(t, "x"), attr(t, "y"), t[gt + 1..end].into())
        })
        .collect()
}

/// A tick label as a number: `1.5k` is 1500, `99.9%` is 99.9.
fn value(label: &str) -> f64 {
    let (n, m) = match label.chars().last() {
        Some('k') => (&label[..label.len() - 1], 1e3),
        Some('M') => (&label[..label.len() - 1], 1e6),
        Some('%') => (&label[..label.len() - 1], 1.0),
        _ => (label, 1.0),
    };
    n.parse::<f64>().unwrap() * m
}

#[test]
fn draws_every_series_and_labels() {
    let c = Chart {
        title: "Throughput".into(),
        x_label: "connections".into(),
        y_label: "requests/s".into(),
        series: vec![
            series("cache-a", &[(10.0, 1000.0), (100.0, 5000.0)]),
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
    assert!(s.contains("pg &lt;x&gt;") && s.contains("requests/s") && s.contains("connections"));
    assert_eq!(short(1500.0), "1.5k");
    assert_eq!(short(2_000_000.0), "2M");
    assert_eq!(short(0.25), "0.25");
}

#[test]
fn a_hit_ratio_axis_stops_at_100_percent() {
    let c = chart(
        "hit ratio (%)".into(),
        vec![series(
            "redis",
            &[(10.0, 61.0), (50.0, 97.5), (100.0, 100.0)],
        )],
    );
    let y: Vec<f64> = ticks(&svg(&c), "ytick")
        .iter()
        .map(|t| value(&t.2))
        .collect();
    assert_eq!(y.len(), 6, "{y:?}");
    assert!(y.iter().all(|v| *v <= 100.0), "{y:?}");
    assert_eq!(y.iter().copied().fold(0.0, f64::max), 100.0);
}

#[test]
fn a_chart_of_one_x_is_bars_not_a_line() {
    let c = chart(
        "requests per second".into(),
        vec![
            series("redis", &[(50.0, 80_000.0)]),
            series("postgres", &[(50.0, 20_000.0)]),
        ],
    );
    let s = svg(&c);
    assert!(!s.contains("<polyline"), "{s}");
    assert_eq!(s.matches("<rect class=\"bar\"").count(), 2);
    assert_eq!(s.matches("<circle").count(), 2);
    // Side by side, not on top of each other; the taller bar is redis's.
    let bar_x = attrs(&s, "<rect class=\"bar\"", "x");
    assert!(bar_x[0] < bar_x[1], "{bar_x:?}");
    let bar_h = attrs(&s, "<rect class=\"bar\"", "height");
    assert!(bar_h[0] > 3.0 * bar_h[1], "{bar_h:?}");
    let x = ticks(&s, "xtick");
    assert_eq!(x.len(), 1);
    assert_eq!(x[0].2, "50");
    // One point, or several at the one x, is no line either.
    for points in [&[(1.0, 1.0)][..], &[(1.0, 1.0), (1.0, 2.0)]] {
        let s = svg(&chart("y".into(), vec![series("a", points)]));
        assert!(!s.contains("<polyline"), "{s}");
        assert!(s.contains("<circle") && s.contains("class=\"bar\""));
    }
}

#[test]
fn a_goal_is_a_dashed_labelled_line_the_axis_reaches() {
    let c = chart(
        Axis::new("latency (µs)").with_line(2000.0, "p99 goal 2 ms"),
        vec![series("redis", &[(1.0, 300.0), (2.0, 900.0)])],
    );
    let s = svg(&c);
    assert!(s.contains("<line class=\"goal\""), "{s}");
    assert!(s.contains(">p99 goal 2 ms</text>"));
    let top = ticks(&s, "ytick")
        .iter()
        .map(|t| value(&t.2))
        .fold(0.0, f64::max);
    assert!(top >= 2000.0, "{top}");
    // The line at 2000 µs lies at its height on the axis (0 at 305, top at 40).
    let y1 = attrs(&s, "<line class=\"goal\"", "y1")[0];
    assert!(
        (y1 - (H - B - 2000.0 / top * (H - T - B))).abs() < 0.2,
        "{y1}"
    );
}

#[test]
fn a_spectrum_spreads_percentiles_and_logs_latency() {
    let ps = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999];
    let lat = [30.0, 45.0, 120.0, 800.0, 9_000.0, 56_000.0];
    let c = Chart {
        title: "spectrum".into(),
        x_label: Axis::new("percentile").scaled(Scale::Percentile),
        y_label: Axis::new("latency (µs)").scaled(Scale::Log),
        series: vec![series(
            "redis",
            &ps.iter().copied().zip(lat).collect::<Vec<_>>(),
        )],
        x_categories: None,
        log_x: false,
        markers: Vec::new(),
    };
    let s = svg(&c);
    let x = ticks(&s, "xtick");
    let labels: Vec<&str> = x.iter().map(|t| t.2.as_str()).collect();
    assert_eq!(labels, ["50%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
    // Each further nine takes the same room; 50% to 90% takes log10(5) of it.
    let gaps: Vec<f64> = x.windows(2).map(|w| w[1].0 - w[0].0).collect();
    for g in &gaps[1..] {
        assert!((g - gaps[1]).abs() < 0.2, "{gaps:?}");
    }
    assert!((gaps[0] / gaps[1] - 5f64.log10()).abs() < 0.01, "{gaps:?}");
    // Latency by decades: p50 is off the floor, p99.999 under the top.
    let y = ticks(&s, "ytick");
    let labels: Vec<&str> = y.iter().map(|t| t.2.as_str()).collect();
    assert_eq!(labels, ["10", "100", "1k", "10k", "100k"]);
    let decade: Vec<f64> = y.windows(2).map(|w| w[0].1 - w[1].1).collect();
    assert!(
        decade.iter().all(|d| (d - decade[0]).abs() < 0.2),
        "{decade:?}"
    );
    let cy = attrs(&s, "<circle", "cy");
    assert_eq!(cy.len(), 6);
    assert!(cy.iter().all(|y| H - B - y > 20.0), "{cy:?}");
}
