//! Every point of a study at a glance: the table of all points, and the
//! charts by the swept axis (throughput, latency, server CPU), the latency
//! spectrum and the per-second throughput of each target's best point.

use super::chart::{Axis, Chart, Scale, Series};
use super::rows::{Row, describe, swept, target_order};
use super::series::{p99_goal, series_by_target};
use super::table::Table;
use crate::results::study::StudyResult;

/// The table of every point, repetitions merged; with the stale reads of
/// runs that wrote, where there were any.
pub(super) fn table(rows: &[Row]) -> Table {
    let mut table = Table {
        title: "All points (repetitions merged by histogram)".into(),
        headers: [
            "target",
            "swept values",
            "req/s",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "p99.999 µs",
            "errors",
            "server CPU µs/req",
            "server cores",
            "server MiB",
            "client CPU µs/req",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    // Runs that wrote were judged for stale reads: show it beside their figures.
    let any_stale = rows.iter().any(|r| r.stale.is_some());
    if any_stale {
        table.headers.push("stale reads".into());
        table.headers.push("stale per million".into());
    }
    let any_near = rows.iter().any(|r| r.near_hit_ratio.is_some());
    if any_near {
        table.headers.push("near cache hits".into());
    }
    for r in rows {
        let mut row = cells(rows, r);
        if any_stale {
            row.push(
                r.stale
                    .as_ref()
                    .map_or("-".into(), |s| format!("{} of {}", s.stale, s.checked)),
            );
            row.push(
                r.stale
                    .as_ref()
                    .map_or("-".into(), |s| format!("{:.0}", s.per_million())),
            );
        }
        if any_near {
            row.push(
                r.near_hit_ratio
                    .map_or("-".into(), |h| format!("{:.1}%", h * 100.0)),
            );
        }
        table.rows.push(row);
    }
    table
}

/// One point's cells: its target, the values swept across `rows`, its
/// figures.
fn cells(rows: &[Row], r: &Row) -> Vec<String> {
    let params = swept(r, rows, "=");
    vec![
        r.target.clone(),
        if params.is_empty() {
            "-".into()
        } else {
            params.join(" ")
        },
        format!("{:.0}", r.rps),
        format!("{:.0}", r.latency.p50),
        format!("{:.0}", r.latency.p99),
        format!("{:.0}", r.latency.p999),
        format!("{:.0}", r.latency.p99999),
        r.errors.to_string(),
        r.server_us.map_or("-".into(), |u| format!("{u:.1}")),
        r.server_cores.map_or("-".into(), |c| format!("{c:.2}")),
        r.server_mib.map_or("-".into(), |m| format!("{m:.0}")),
        format!("{:.1}", r.client_us),
    ]
}

/// The charts of every point (none without points): by the swept `axis`
/// (connections when none is swept), then at each target's `best` point.
pub(super) fn charts(
    results: &[StudyResult],
    rows: &[Row],
    axis: Option<&str>,
    best: &[&Row],
) -> Vec<Chart> {
    if rows.is_empty() {
        return Vec::new();
    }
    // Latency charts show the study's p99 goal, where it states one.
    let goal = p99_goal(results);
    let latency = || {
        let a = Axis::new("latency (µs)");
        match &goal {
            Some((us, label)) => a.with_line(*us, label.clone()),
            None => a,
        }
    };
    let mut charts = by_axis(rows, axis.unwrap_or("connections"), latency());
    charts.extend(spectrum(rows, axis, best, latency()));
    charts.extend(timelines(rows, best));
    charts
}

/// Whether the values of `axis` span two orders of magnitude (connections
/// 10..1000, keys 1k..1M): then they read best on a log scale.
fn log_x(rows: &[Row], axis: &str) -> bool {
    let xs: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.params.get(axis)?.parse::<f64>().ok())
        .filter(|x| *x > 0.0)
        .collect();
    xs.len() == rows.len()
        && !xs.is_empty()
        && xs.iter().cloned().fold(f64::MIN, f64::max) / xs.iter().cloned().fold(f64::MAX, f64::min)
            >= 50.0
}

/// Throughput, latency (p50 and p99, on the `latency` axis) and, where
/// measured, server CPU against the swept `axis`, a line per target.
fn by_axis(rows: &[Row], axis: &str, latency: Axis) -> Vec<Chart> {
    let log_x = log_x(rows, axis);
    let chart = |title: String, y_label: Axis, series, x_categories| Chart {
        title,
        x_label: axis.into(),
        y_label,
        series,
        x_categories,
        log_x,
        markers: Vec::new(),
    };
    let (s, cats) = series_by_target(rows, axis, |r| Some(r.rps), "");
    let mut charts = vec![chart(
        format!("Throughput vs {axis}"),
        "requests per second".into(),
        s,
        cats.clone(),
    )];
    let (mut s, _) = series_by_target(rows, axis, |r| Some(r.latency.p50), " p50");
    let (s99, _) = series_by_target(rows, axis, |r| Some(r.latency.p99), " p99");
    s.extend(s99);
    charts.push(chart(
        format!("Latency p50 and p99 vs {axis}"),
        latency,
        s,
        cats.clone(),
    ));
    if rows.iter().any(|r| r.server_us.is_some()) {
        let (s, _) = series_by_target(rows, axis, |r| r.server_us.map(|u| u * 0.1), "");
        charts.push(chart(
            "Server CPU per 100k requests".into(),
            "CPU seconds per 100k requests".into(),
            s,
            cats,
        ));
    }
    charts
}

/// The latency spectrum (p50 to p99.999) of each target's `best` point, as
/// HdrHistogram plots it: each nine its own room, latency by decades.
fn spectrum(rows: &[Row], axis: Option<&str>, best: &[&Row], latency: Axis) -> Option<Chart> {
    let series: Vec<Series> = best
        .iter()
        .map(|r| Series {
            name: format!("{} @ {}", r.target, describe(r, axis)),
            points: vec![
                (50.0, r.latency.p50),
                (90.0, r.latency.p90),
                (99.0, r.latency.p99),
                (99.9, r.latency.p999),
                (99.99, r.latency.p9999),
                (99.999, r.latency.p99999),
            ],
            color: target_order(rows).iter().position(|t| *t == r.target),
            dashed: false,
        })
        .collect();
    (!series.is_empty()).then(|| Chart {
        title: "Latency spectrum at each target's best point".into(),
        x_label: Axis::new("percentile").scaled(Scale::Percentile),
        y_label: latency.scaled(Scale::Log),
        series,
        x_categories: None,
        log_x: false,
        markers: Vec::new(),
    })
}

/// The per-second throughput of each target's `best` point, and beside it,
/// dashed, the rate a shaped schedule offered.
fn timelines(rows: &[Row], best: &[&Row]) -> Option<Chart> {
    let series: Vec<Series> = best
        .iter()
        .flat_map(|r| {
            let color = target_order(rows).iter().position(|t| *t == r.target);
            [
                Series {
                    name: r.target.clone(),
                    points: r.timeline.clone(),
                    color,
                    dashed: false,
                },
                Series {
                    name: format!("{} offered", r.target),
                    points: r.offered_timeline.clone(),
                    color,
                    dashed: true,
                },
            ]
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    (!series.is_empty()).then(|| Chart {
        title: "Per-second throughput at each target's best point".into(),
        x_label: "second of the measured run".into(),
        y_label: "requests per second".into(),
        series,
        x_categories: None,
        log_x: false,
        markers: Vec::new(),
    })
}
