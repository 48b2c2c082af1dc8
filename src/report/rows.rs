//! Rows: the points of study results merged by target and swept values
//! (repetitions and files merge by histogram), and what a set of rows says
//! about its sweep.

use std::collections::BTreeMap;

use super::figures::{self, AsideFigures, StaleFigures};
use crate::results::RunResult;
use crate::results::stats::{Percentiles, decode_histogram, new_histogram};
use crate::results::study::StudyResult;

/// One row of the merged results: a target at one set of swept values.
#[derive(Clone, Debug)]
pub struct Row {
    /// Target label.
    pub target: String,
    /// Product (redis, postgres, ...).
    pub product: String,
    /// Whether the target is a cache rather than a database.
    pub cache: bool,
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
    /// The pooler in front of the server, if any, and its CPU µs per request
    /// (part of `server_us`), when known.
    pub pooler: Option<(String, Option<f64>)>,
    /// Throughput of the first repetition over time: (the middle of each
    /// timeline entry, its requests per second), entries of a second or, past
    /// the per-second part, a minute.
    pub timeline: Vec<(f64, f64)>,
    /// The rate a shaped schedule offered over the same entries (empty
    /// unless `--rate-shape` moved it).
    pub offered_timeline: Vec<(f64, f64)>,
    /// Whether any repetition saturated the client.
    pub saturated: bool,
    /// Read-write ratio label.
    pub ratio: String,
    /// Cache-aside figures, when the target had a cache in front.
    pub aside: Option<AsideFigures>,
    /// Run open-loop at a fixed rate (latency from the intended start).
    pub paced: bool,
    /// The rate offered, req/s (open loop only).
    pub offered: Option<f64>,
    /// An open-loop point that did not carry its rate: a failed point, not a figure.
    pub not_sustained: bool,
    /// Stale reads, when tracked.
    pub stale: Option<StaleFigures>,
    /// Cores the servers kept busy on average (their CPU over the window).
    pub server_cores: Option<f64>,
    /// The servers' peak resident memory together, MiB (the largest run's).
    pub server_mib: Option<f64>,
    /// A near cache's share of the reads it answered (`None`: none).
    pub near_hit_ratio: Option<f64>,
}

/// A target and its swept values: what merges across repetitions and files.
type PointKey = (String, Vec<(String, String)>);

/// Merges the points of `results` by (target, swept values).
pub fn rows(results: &[StudyResult]) -> Vec<Row> {
    let mut groups: BTreeMap<PointKey, Vec<&RunResult>> = BTreeMap::new();
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
                if let Ok(x) = decode_histogram(&r.histograms.histogram) {
                    let _ = h.add(&x);
                }
            }
            let ok: f64 = runs
                .iter()
                .map(|r| r.totals.throughput_rps * r.totals.duration_s)
                .sum();
            let dur: f64 = runs.iter().map(|r| r.totals.duration_s).sum();
            let requests: u64 = runs.iter().map(|r| r.totals.requests).sum();
            let server: Option<f64> = runs.iter().map(|r| r.server.server_cpu_s).sum();
            let pooler_cpu: Option<f64> = runs
                .iter()
                .map(|r| r.pooler.as_ref().and_then(|p| p.pooler_cpu_s))
                .sum();
            Row {
                target: key.0.clone(),
                product: runs[0].target.product.clone(),
                cache: !runs[0].config.target.kind.is_sql(),
                params: key.1.into_iter().collect(),
                rps: ok / dur.max(1e-9),
                latency: Percentiles::of(&h),
                errors: runs.iter().map(|r| r.totals.errors).sum(),
                requests,
                server_us: server.map(|s| s * 1e6 / requests.max(1) as f64),
                client_us: runs.iter().map(|r| r.client.client_cpu_s).sum::<f64>() * 1e6
                    / requests.max(1) as f64,
                pooler: runs[0].pooler.as_ref().map(|p| {
                    (
                        p.name.clone(),
                        pooler_cpu.map(|c| c * 1e6 / requests.max(1) as f64),
                    )
                }),
                timeline: runs[0]
                    .timeline
                    .iter()
                    .map(|s| (s.midpoint(), s.rps()))
                    .collect(),
                offered_timeline: runs[0]
                    .timeline
                    .iter()
                    .filter_map(|s| Some((s.midpoint(), s.offered_rps?)))
                    .collect(),
                saturated: runs.iter().any(|r| r.client.client_saturated),
                ratio: runs[0].config.workload.ratio.to_string(),
                aside: figures::figures(runs),
                paced: runs[0].latency.schedule.is_some(),
                offered: runs[0].config.load.rate,
                not_sustained: runs.iter().any(|r| {
                    r.latency
                        .schedule
                        .as_ref()
                        .is_some_and(|s| s.not_sustained.is_some())
                }),
                stale: figures::stale_figures(runs),
                server_cores: server.map(|s| s / dur.max(1e-9)),
                server_mib: runs
                    .iter()
                    .filter_map(|r| r.server.server_peak_rss_kb)
                    .max()
                    .map(|kb| kb as f64 / 1024.0),
                near_hit_ratio: near_hit_ratio(runs),
            }
        })
        .collect()
}

/// The swept axis to chart along: the first whose value varies.
pub(super) fn axis(rows: &[Row]) -> Option<String> {
    let mut varying: Vec<String> = rows
        .first()?
        .params
        .keys()
        .filter(|k| varies(rows, k))
        .cloned()
        .collect();
    // Prefer the load axes in this order, then server settings.
    let pref = [
        "connections",
        "pipeline",
        "threads",
        "rate",
        "rtt",
        "value_size",
    ];
    varying.sort_by_key(|k| pref.iter().position(|p| p == k).unwrap_or(pref.len()));
    varying.into_iter().next()
}

/// The targets of `rows`, in order of first appearance.
pub(super) fn target_order(rows: &[Row]) -> Vec<String> {
    let mut t: Vec<String> = Vec::new();
    for r in rows {
        if !t.contains(&r.target) {
            t.push(r.target.clone());
        }
    }
    t
}

/// Whether swept value `key` takes more than one value across `rows`.
pub(super) fn varies(rows: &[Row], key: &str) -> bool {
    let mut vals: Vec<&String> = rows.iter().filter_map(|r| r.params.get(key)).collect();
    vals.sort();
    vals.dedup();
    vals.len() > 1
}

/// The swept values of `r` that vary across `rows`, each as `key` `sep`
/// `value`.
pub(super) fn swept(r: &Row, rows: &[Row], sep: &str) -> Vec<String> {
    r.params
        .iter()
        .filter(|(k, _)| varies(rows, k))
        .map(|(k, v)| format!("{k}{sep}{v}"))
        .collect()
}

/// Where on the sweep `r` lies: its value of `axis`, else its connections.
pub(super) fn describe(r: &Row, axis: Option<&str>) -> String {
    match axis.and_then(|a| r.params.get(a).map(|v| (a, v))) {
        Some((a, v)) => format!("{a} {v}"),
        None => format!(
            "{} connections",
            r.params.get("connections").map_or("?", String::as_str)
        ),
    }
}

/// The share of reads the near caches of `runs` answered (`None`: none had one).
fn near_hit_ratio(runs: &[&RunResult]) -> Option<f64> {
    let near: Vec<_> = runs.iter().filter_map(|r| r.near_cache.as_ref()).collect();
    let (hits, reads) = near
        .iter()
        .fold((0, 0), |(h, n), x| (h + x.hits, n + x.hits + x.misses));
    (!near.is_empty()).then(|| hits as f64 / reads.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Second;

    #[test]
    fn the_timeline_is_charted_as_rates_at_the_middle_of_each_entry() {
        let mut s: StudyResult =
            serde_json::from_str(include_str!("../../tests/fixtures/study.json")).unwrap();
        let at = |second, span_s, requests| Second {
            second,
            span_s,
            requests,
            ..Second::default()
        };
        // A second, then a minute, then a last minute clipped to 30 s.
        s.points[0].result.as_mut().unwrap().timeline =
            vec![at(0, 1, 1000), at(1, 60, 60_000), at(61, 30, 15_000)];
        let rows = rows(&[s]);
        assert_eq!(
            rows[0].timeline,
            [(0.5, 1000.0), (31.0, 1000.0), (76.0, 500.0)]
        );
    }
}
