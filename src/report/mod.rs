//! Reports: a pure function from study results to a verdict, tables and charts,
//! rendered as Markdown and as one self-contained HTML file with inline SVG.
//! Repetitions and files merge by histogram, never by averaging percentiles.

pub mod aside;
pub mod chart;
pub mod fill;
pub mod html;
pub mod markdown;

use std::collections::BTreeMap;

use crate::stats::{Percentiles, decode_histogram, new_histogram};
use crate::study::exec::StudyResult;
use chart::{Chart, Series, short};

/// A table shared by the Markdown and HTML renderers.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Caption.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
}

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

/// One row of the merged results: a target at one set of swept values.
#[derive(Clone, Debug)]
pub struct Row {
    /// Target label.
    pub target: String,
    /// Product (redis, postgres, ...).
    pub product: String,
    /// Swept values.
    pub params: BTreeMap<String, String>,
    /// Successful requests per second (all repetitions).
    pub rps: f64,
    /// Latency percentiles of the merged histogram, µs.
    pub latency: Percentiles,
    /// Errors (all repetitions).
    pub errors: u64,
    /// Finished requests (all repetitions).
    pub requests: u64,
    /// Server CPU µs per request, when known.
    pub server_us: Option<f64>,
    /// Client CPU µs per request.
    pub client_us: f64,
    /// Per-second throughput of the first repetition.
    pub timeline: Vec<(f64, f64)>,
    /// Whether any repetition saturated the client.
    pub saturated: bool,
    /// Read-write ratio label.
    pub ratio: String,
    /// Cache-aside figures, when the target had a cache in front.
    pub aside: Option<aside::AsideFigures>,
    /// Stale reads, when tracked.
    pub stale: Option<aside::StaleFigures>,
}

fn is_cache(product: &str) -> bool {
    matches!(product, "redis" | "valkey" | "memcached")
}

/// A target and its swept values: what merges across repetitions and files.
type PointKey = (String, Vec<(String, String)>);

/// Merges the points of `results` by (target, swept values).
pub fn rows(results: &[StudyResult]) -> Vec<Row> {
    let mut groups: BTreeMap<PointKey, Vec<&crate::results::RunResult>> = BTreeMap::new();
    let mut order = Vec::new();
    for sr in results {
        for p in &sr.points {
            if let Some(r) = &p.result {
                let key = (
                    p.target.clone(),
                    p.params
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect::<Vec<_>>(),
                );
                if !groups.contains_key(&key) {
                    order.push(key.clone());
                }
                groups.entry(key).or_default().push(r);
            }
        }
    }
    order
        .into_iter()
        .map(|key| {
            let runs = &groups[&key];
            let mut h = new_histogram();
            for r in runs {
                if let Ok(x) = decode_histogram(&r.histogram) {
                    let _ = h.add(&x);
                }
            }
            let ok: f64 = runs.iter().map(|r| r.throughput_rps * r.duration_s).sum();
            let dur: f64 = runs.iter().map(|r| r.duration_s).sum();
            let requests: u64 = runs.iter().map(|r| r.requests).sum();
            let server: Option<f64> = runs.iter().map(|r| r.server_cpu_s).sum();
            Row {
                target: key.0.clone(),
                product: runs[0].target.product.clone(),
                params: key.1.into_iter().collect(),
                rps: ok / dur.max(1e-9),
                latency: Percentiles::of(&h),
                errors: runs.iter().map(|r| r.errors).sum(),
                requests,
                server_us: server.map(|s| s * 1e6 / requests.max(1) as f64),
                client_us: runs.iter().map(|r| r.client_cpu_s).sum::<f64>() * 1e6
                    / requests.max(1) as f64,
                timeline: runs[0]
                    .timeline
                    .iter()
                    .map(|s| (s.second as f64 + 1.0, s.requests as f64))
                    .collect(),
                saturated: runs.iter().any(|r| r.client_saturated),
                ratio: runs[0].config.workload.ratio.to_string(),
                aside: aside::figures(runs),
                stale: aside::stale_figures(runs),
            }
        })
        .collect()
}

/// The swept axis to chart along: the first whose value varies.
fn axis(rows: &[Row]) -> Option<String> {
    let mut varying: Vec<String> = rows
        .first()?
        .params
        .keys()
        .filter(|k| varies(rows, k))
        .cloned()
        .collect();
    // Prefer the load axes in this order, then server settings.
    let pref = ["connections", "pipeline", "threads", "rate", "value_size"];
    varying.sort_by_key(|k| pref.iter().position(|p| p == k).unwrap_or(pref.len()));
    varying.into_iter().next()
}

fn x_of(v: &str, cats: &mut Vec<String>) -> f64 {
    v.parse::<f64>().unwrap_or_else(|_| {
        if !cats.iter().any(|c| c == v) {
            cats.push(v.to_string());
        }
        cats.iter().position(|c| c == v).unwrap_or(0) as f64
    })
}

fn series_by_target(
    rows: &[Row],
    axis: &str,
    y: impl Fn(&Row) -> Option<f64>,
    suffix: &str,
) -> (Vec<Series>, Option<Vec<String>>) {
    let targets = target_order(rows);
    let mut cats = Vec::new();
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut color_of: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows {
        let Some(v) = r.params.get(axis) else {
            continue;
        };
        let Some(yv) = y(r) else { continue };
        let x = x_of(v, &mut cats);
        // Other swept axes split a target into several lines.
        let others: Vec<String> = r
            .params
            .iter()
            .filter(|(k, _)| k.as_str() != axis && varies(rows, k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let name = if others.is_empty() {
            format!("{}{suffix}", r.target)
        } else {
            format!("{} {}{suffix}", r.target, others.join(" "))
        };
        if !order.contains(&name) {
            order.push(name.clone());
            color_of.insert(
                name.clone(),
                targets.iter().position(|t| *t == r.target).unwrap_or(0),
            );
        }
        by.entry(name).or_default().push((x, yv));
    }
    let series = order
        .into_iter()
        .map(|name| {
            let mut points = by.remove(&name).unwrap_or_default();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let color = color_of.get(&name).copied();
            Series {
                name,
                points,
                color,
                dashed: suffix == " p99",
            }
        })
        .collect();
    (series, (!cats.is_empty()).then_some(cats))
}

fn target_order(rows: &[Row]) -> Vec<String> {
    let mut t: Vec<String> = Vec::new();
    for r in rows {
        if !t.contains(&r.target) {
            t.push(r.target.clone());
        }
    }
    t
}

fn varies(rows: &[Row], key: &str) -> bool {
    let mut vals: Vec<&String> = rows.iter().filter_map(|r| r.params.get(key)).collect();
    vals.sort();
    vals.dedup();
    vals.len() > 1
}

fn describe(r: &Row, axis: Option<&str>) -> String {
    match axis.and_then(|a| r.params.get(a).map(|v| (a, v))) {
        Some((a, v)) => format!("{a} {v}"),
        None => format!(
            "{} connections",
            r.params.get("connections").map_or("?", String::as_str)
        ),
    }
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
    let goal = study.map(|s| s.goal.clone()).unwrap_or_default();
    let mut verdict = Vec::new();
    // A target with swept server settings is judged once per setting.
    let settings_of = |r: &Row| -> String {
        let v: Vec<String> = r
            .params
            .iter()
            .filter(|(k, _)| k.starts_with("server.") && varies(&rows, k))
            .map(|(k, v)| format!("{}={v}", &k[7..]))
            .collect();
        if v.is_empty() {
            r.target.clone()
        } else {
            format!("{} {}", r.target, v.join(" "))
        }
    };
    let mut targets: Vec<String> = Vec::new();
    for r in &rows {
        let t = settings_of(r);
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    let within =
        |r: &Row| r.errors == 0 && goal.p99_ms.is_none_or(|ms| r.latency.p99 <= ms * 1000.0);
    // (best row, is a cache, has a cache in front)
    let mut best: Vec<(&Row, bool, bool)> = Vec::new();
    for t in &targets {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| &settings_of(r) == t && r.errors == 0)
            .collect();
        let Some(top) = mine.iter().copied().max_by(|a, b| a.rps.total_cmp(&b.rps)) else {
            verdict.push(format!("{t}: no point finished without errors."));
            continue;
        };
        let product = match &top.aside {
            Some(a) => format!(" ({} in front of {}, {})", a.cache, top.product, a.policy),
            None if top.target == top.product => String::new(),
            None => format!(" ({})", top.product),
        };
        let mut s = format!(
            "{t}{product}: best {} req/s at {}, p50 {} µs, p99 {} µs",
            short(top.rps),
            describe(top, axis.as_deref()),
            short(top.latency.p50),
            short(top.latency.p99)
        );
        if let Some(us) = top.server_us {
            let _ = std::fmt::Write::write_fmt(
                &mut s,
                format_args!("; it spent {:.2} server CPU cores per 100k req/s", us * 0.1),
            );
        }
        if let Some(ms) = goal.p99_ms {
            match mine
                .iter()
                .copied()
                .filter(|r| within(r))
                .max_by(|a, b| a.rps.total_cmp(&b.rps))
            {
                Some(g) => {
                    let _ = std::fmt::Write::write_fmt(
                        &mut s,
                        format_args!(
                            "; within p99 ≤ {ms} ms it sustains {} req/s ({})",
                            short(g.rps),
                            describe(g, axis.as_deref())
                        ),
                    );
                }
                None => {
                    let _ = std::fmt::Write::write_fmt(
                        &mut s,
                        format_args!("; no point met p99 ≤ {ms} ms"),
                    );
                }
            }
        }
        if let Some(rps) = goal.rps {
            let _ = std::fmt::Write::write_fmt(
                &mut s,
                format_args!(
                    "; goal {} req/s {}",
                    short(rps),
                    if top.rps >= rps { "met" } else { "not met" }
                ),
            );
        }
        s.push('.');
        verdict.push(s);
        best.push((top, is_cache(&top.product), top.aside.is_some()));
    }
    for sr in results {
        for c in &sr.capacity {
            let line = match c.search.capacity_rps {
                Some(rate) => format!(
                    "{}: capacity search (open loop, latency from intended start) found {} req/s within p99 ≤ {} ms.",
                    c.target,
                    short(rate),
                    c.search.p99_ms
                ),
                None => format!(
                    "{}: capacity search found no rate within p99 ≤ {} ms without errors.",
                    c.target, c.search.p99_ms
                ),
            };
            verdict.push(line);
        }
    }
    // Memory efficiency (mode = "fill").
    let fill = fill::section(results);
    if let Some(f) = &fill {
        verdict.extend(f.verdict.iter().cloned());
        if let Some(h) = &f.headline {
            verdict.insert(0, h.clone());
        }
    }
    let best_cache = best
        .iter()
        .filter(|b| b.1)
        .map(|b| b.0)
        .max_by(|a, b| a.rps.total_cmp(&b.rps));
    let best_db = best
        .iter()
        .filter(|b| !b.1 && !b.2)
        .map(|b| b.0)
        .max_by(|a, b| a.rps.total_cmp(&b.rps));
    if let (Some(c), Some(d)) = (best_cache, best_db) {
        let mut s = format!(
            "On the same work the best cache ({}) served {:.1}x the requests per second of the best database ({})",
            c.target,
            c.rps / d.rps.max(1e-9),
            d.target
        );
        if let (Some(cu), Some(du)) = (c.server_us, d.server_us) {
            let _ = std::fmt::Write::write_fmt(
                &mut s,
                format_args!(
                    " and spent {:.1}x less server CPU per request",
                    du / cu.max(1e-9)
                ),
            );
        }
        s.push('.');
        verdict.insert(0, s);
    }
    let mut caveats = Vec::new();
    if let Some(m) = results.first().map(|r| &r.machine) {
        caveats.push(format!("Client and server shared one machine: {} cores of {} with {} MiB, kernel {}; on separate machines both sides would get more CPU.", m.cores, m.cpu, m.memory_mib, m.kernel));
    }
    let ratios: Vec<&String> = rows.iter().map(|r| &r.ratio).collect();
    if ratios.is_empty() {
        caveats.push("Memory was measured against each cache's configured limit and each table's on-disk size; a database also needs memory for its buffer pool to serve that table.".into());
    } else if ratios.iter().all(|r| r.as_str() == "0:1") {
        caveats.push("Read-only point lookups (SET:GET 0:1): writes, invalidation and consistency were not measured (studies/cache-aside.toml measures them).".into());
    } else if rows.iter().all(|r| r.aside.is_none()) {
        caveats.push(format!("Mixed load (SET:GET {}); the cost of keeping a cache consistent with its database was not measured here (studies/cache-aside.toml measures it).", ratios[0]));
    }
    if rows.iter().any(|r| r.saturated) {
        caveats.push("Some points saturated kvlab's own threads: their figures describe the client or CPU contention, not the server.".into());
    }
    if rows.iter().any(|r| r.errors > 0) {
        caveats
            .push("Some points had errors; they are excluded from the best figures above.".into());
    }
    let failed: usize = results
        .iter()
        .map(|r| {
            r.points
                .iter()
                .filter(|p| p.result.is_none() && p.fill.is_none())
                .count()
        })
        .sum();
    if failed > 0 {
        caveats.push(format!(
            "{failed} point(s) failed to run; see the results file for the reasons."
        ));
    }
    if results
        .iter()
        .any(|r| r.interrupted || r.points.len() < r.planned)
    {
        caveats.push("The study was interrupted: only finished points are shown.".into());
    }

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
        x_label: axis_name.clone(),
        y_label: "requests per second".into(),
        series: s,
        x_categories: cats.clone(),
        log_x,
    });
    let (mut s, _) = series_by_target(&rows, &axis_name, |r| Some(r.latency.p50), " p50");
    let (s99, _) = series_by_target(&rows, &axis_name, |r| Some(r.latency.p99), " p99");
    s.extend(s99);
    charts.push(Chart {
        title: format!("Latency p50 and p99 vs {axis_name}"),
        x_label: axis_name.clone(),
        y_label: "latency (µs)".into(),
        series: s,
        x_categories: cats.clone(),
        log_x,
    });
    if rows.iter().any(|r| r.server_us.is_some()) {
        let (s, _) = series_by_target(&rows, &axis_name, |r| r.server_us.map(|u| u * 0.1), "");
        charts.push(Chart {
            title: "Server CPU per 100k requests".into(),
            x_label: axis_name.clone(),
            y_label: "CPU seconds per 100k requests".into(),
            series: s,
            x_categories: cats,
            log_x,
        });
    }
    let spectrum: Vec<Series> = best
        .iter()
        .map(|(r, _, _)| Series {
            name: format!("{} @ {}", r.target, describe(r, axis.as_deref())),
            points: vec![
                (0.0, r.latency.p50),
                (1.0, r.latency.p90),
                (2.0, r.latency.p99),
                (3.0, r.latency.p999),
                (4.0, r.latency.p9999),
            ],
            color: target_order(&rows).iter().position(|t| *t == r.target),
            dashed: false,
        })
        .collect();
    if !spectrum.is_empty() {
        charts.push(Chart {
            title: "Latency spectrum at each target's best point".into(),
            x_label: "percentile".into(),
            y_label: "latency (µs)".into(),
            series: spectrum,
            x_categories: Some(
                ["p50", "p90", "p99", "p99.9", "p99.99"]
                    .map(String::from)
                    .to_vec(),
            ),
            log_x: false,
        });
    }
    let timelines: Vec<Series> = best
        .iter()
        .map(|(r, _, _)| Series {
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
