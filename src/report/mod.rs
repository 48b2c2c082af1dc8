//! Reports: a pure function from study results to a verdict, tables and charts,
//! rendered as Markdown and as one self-contained HTML file with inline SVG.
//! Repetitions and files merge by histogram, never by averaging percentiles.

pub mod aside;
mod baseline;
pub mod chart;
pub mod compare;
mod figures;
pub mod fill;
pub mod html;
pub mod markdown;
pub mod replay;
mod rows;
mod series;
pub mod sizing;
pub mod summary;
mod table;
mod verdict;
mod working_set;

use crate::results::study::StudyResult;
use chart::{Axis, Chart, Scale, Series};
pub use figures::{AsideFigures, StaleFigures};
pub use rows::{Row, rows};
use rows::{axis, describe, target_order, varies};
use series::{p99_goal, series_by_target};
pub use table::Table;

/// Everything a report shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Title.
    pub title: String,
    /// What the study asked.
    pub description: String,
    /// Plain sentences with numbers: the answer first.
    pub verdict: Vec<String>,
    /// Caveats that matter.
    pub caveats: Vec<String>,
    /// Tables.
    pub tables: Vec<Table>,
    /// Charts.
    pub charts: Vec<Chart>,
}

/// Builds the report for `results` (one or more study runs).
pub fn build(results: &[StudyResult]) -> Report {
    let rows = rows(results);
    let axis = axis(&rows);
    let study = results.first().map(|r| &r.study);
    let title = study.map_or("kvlab report".into(), |s| {
        format!("kvlab study: {}", s.name)
    });
    let description = study.map(|s| s.description.clone()).unwrap_or_default();
    let fill = fill::section(results);
    let (mut verdict, best) = verdict::verdict(results, &rows, axis.as_deref(), fill.as_ref());
    if let Some(s) = study {
        verdict.extend(baseline::lines(&s.comparisons(), &rows));
    }
    let mut caveats = verdict::caveats(results, &rows);

    let axis_name = axis.clone().unwrap_or_else(|| "connections".into());
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
    }
    for r in &rows {
        let params: Vec<String> = r
            .params
            .iter()
            .filter(|(k, _)| varies(&rows, k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        table.rows.push(vec![
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
            format!("{:.1}", r.client_us),
        ]);
        if any_stale {
            let cell = r
                .stale
                .as_ref()
                .map_or("-".into(), |s| format!("{} of {}", s.stale, s.checked));
            table.rows.last_mut().expect("just pushed").push(cell);
        }
    }
    let mut charts = Vec::new();
    // A numeric axis spanning two orders of magnitude (connections 10..1000,
    // keys 1k..1M) reads best on a log scale.
    let xs: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.params.get(&axis_name)?.parse::<f64>().ok())
        .filter(|x| *x > 0.0)
        .collect();
    let log_x = xs.len() == rows.len()
        && !xs.is_empty()
        && xs.iter().cloned().fold(f64::MIN, f64::max)
            / xs.iter().cloned().fold(f64::MAX, f64::min)
            >= 50.0;
    let (s, cats) = series_by_target(&rows, &axis_name, |r| Some(r.rps), "");
    charts.push(Chart {
        title: format!("Throughput vs {axis_name}"),
        x_label: axis_name.clone().into(),
        y_label: "requests per second".into(),
        series: s,
        x_categories: cats.clone(),
        log_x,
        markers: Vec::new(),
    });
    // Latency charts show the study's p99 goal, where it states one.
    let goal = p99_goal(results);
    let latency_axis = || {
        let a = Axis::new("latency (µs)");
        match &goal {
            Some((us, label)) => a.with_line(*us, label.clone()),
            None => a,
        }
    };
    let (mut s, _) = series_by_target(&rows, &axis_name, |r| Some(r.latency.p50), " p50");
    let (s99, _) = series_by_target(&rows, &axis_name, |r| Some(r.latency.p99), " p99");
    s.extend(s99);
    charts.push(Chart {
        title: format!("Latency p50 and p99 vs {axis_name}"),
        x_label: axis_name.clone().into(),
        y_label: latency_axis(),
        series: s,
        x_categories: cats.clone(),
        log_x,
        markers: Vec::new(),
    });
    if rows.iter().any(|r| r.server_us.is_some()) {
        let (s, _) = series_by_target(&rows, &axis_name, |r| r.server_us.map(|u| u * 0.1), "");
        charts.push(Chart {
            title: "Server CPU per 100k requests".into(),
            x_label: axis_name.clone().into(),
            y_label: "CPU seconds per 100k requests".into(),
            series: s,
            x_categories: cats,
            log_x,
            markers: Vec::new(),
        });
    }
    let spectrum: Vec<Series> = best
        .iter()
        .map(|r| Series {
            name: format!("{} @ {}", r.target, describe(r, axis.as_deref())),
            points: vec![
                (50.0, r.latency.p50),
                (90.0, r.latency.p90),
                (99.0, r.latency.p99),
                (99.9, r.latency.p999),
                (99.99, r.latency.p9999),
                (99.999, r.latency.p99999),
            ],
            color: target_order(&rows).iter().position(|t| *t == r.target),
            dashed: false,
        })
        .collect();
    if !spectrum.is_empty() {
        charts.push(Chart {
            title: "Latency spectrum at each target's best point".into(),
            // As HdrHistogram plots it: each nine its own room, latency by decades.
            x_label: Axis::new("percentile").scaled(Scale::Percentile),
            y_label: latency_axis().scaled(Scale::Log),
            series: spectrum,
            x_categories: None,
            log_x: false,
            markers: Vec::new(),
        });
    }
    let timelines: Vec<Series> = best
        .iter()
        .map(|r| Series {
            name: r.target.clone(),
            points: r.timeline.clone(),
            color: target_order(&rows).iter().position(|t| *t == r.target),
            dashed: false,
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if !timelines.is_empty() {
        charts.push(Chart {
            title: "Per-second throughput at each target's best point".into(),
            x_label: "second of the measured run".into(),
            y_label: "requests per second".into(),
            series: timelines,
            x_categories: None,
            log_x: false,
            markers: Vec::new(),
        });
    }
    if rows.is_empty() {
        charts.clear();
    }
    let mut tables = Vec::new();
    if let Some(f) = fill {
        charts.insert(0, f.chart);
        tables.push(f.table);
    }
    if let Some(a) = aside::section(&rows) {
        verdict.extend(a.verdict);
        caveats.extend(a.caveats);
        tables.extend(a.tables);
        charts.extend(a.charts);
    }
    if let Some(w) = working_set::section(results) {
        verdict.extend(w.verdict);
        tables.extend(w.tables);
        charts.extend(w.charts);
    }
    if let Some(z) = sizing::section(results) {
        verdict.extend(z.verdict);
        caveats.extend(z.caveats);
        tables.insert(0, z.table);
    }
    if let Some((line, t)) = thresholds(results) {
        verdict.insert(0, line);
        tables.insert(0, t);
    }
    if !table.rows.is_empty() {
        tables.push(table);
    }
    Report {
        title,
        description,
        verdict,
        caveats,
        tables,
        charts,
    }
}

/// The study's `[thresholds]` checked on every point: the verdict's first
/// line and the table of pass and fail (`None` without thresholds).
fn thresholds(results: &[StudyResult]) -> Option<(String, Table)> {
    let t = &results.first()?.study.thresholds;
    if t.is_empty() {
        return None;
    }
    let checks: Vec<_> = results
        .iter()
        .flat_map(|r| crate::results::thresholds::check(t, &r.points))
        .collect();
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{}: {} (got {})", c.point, c.limit, c.value))
        .collect();
    let line = match failed.is_empty() {
        true => format!("Thresholds: all {} checks passed.", checks.len()),
        false => format!(
            "Thresholds: {} of {} checks FAILED: {}.",
            failed.len(),
            checks.len(),
            failed.join("; ")
        ),
    };
    let table = Table {
        title: "Thresholds".into(),
        headers: ["point", "limit", "measured", "result"]
            .map(String::from)
            .to_vec(),
        rows: checks
            .into_iter()
            .map(|c| {
                let result = if c.passed { "pass" } else { "FAIL" };
                vec![c.point, c.limit, c.value, result.to_string()]
            })
            .collect(),
    };
    Some((line, table))
}
