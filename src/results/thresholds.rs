//! A study's `[thresholds]` checked against its points: one line per point
//! and limit, passed or failed. A pure function of the results, so that
//! `kvlab report` shows the same table and `kvlab study` gates on it.

use serde::{Deserialize, Serialize};

use crate::plan::study::Thresholds;
use crate::results::study::PointResult;

/// One limit on one point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThresholdCheck {
    /// The point: target and parameters.
    pub point: String,
    /// The limit, e.g. `p99 <= 2 ms`.
    pub limit: String,
    /// What the point measured (or why it has nothing).
    pub value: String,
    /// Whether it met the limit.
    pub passed: bool,
}

/// Every limit of `t` on every point of `points` (a point without a result
/// fails each limit).
pub fn check(t: &Thresholds, points: &[PointResult]) -> Vec<ThresholdCheck> {
    let mut out = Vec::new();
    // A point is named by its target and the parameters that vary.
    let varies = |k: &str| {
        let mut vals = points.iter().filter_map(|p| p.params.get(k));
        let first = vals.next();
        vals.any(|v| Some(v) != first)
    };
    let reps = points.iter().any(|p| p.repetition > 1);
    for p in points {
        let mut name = vec![p.target.clone()];
        name.extend(
            p.params
                .iter()
                .filter(|(k, _)| varies(k))
                .map(|(k, v)| format!("{k}={v}")),
        );
        if reps {
            name.push(format!("#{}", p.repetition));
        }
        let point = name.join(" ");
        let r = p.result.as_ref();
        let ms = |name: &str, limit: Option<f64>, got: Option<f64>| {
            limit.map(|l| {
                (
                    format!("{name} <= {l} ms"),
                    got.map(|g| (g / 1e3, g / 1e3 <= l)),
                )
            })
        };
        let checks = [
            ms("p50", t.p50_ms, r.map(|r| r.latency.latency_us.p50)),
            ms("p99", t.p99_ms, r.map(|r| r.latency.latency_us.p99)),
            ms("p99.9", t.p999_ms, r.map(|r| r.latency.latency_us.p999)),
            t.errors.map(|l| {
                (
                    format!("errors <= {l}"),
                    r.map(|r| (r.totals.errors as f64, r.totals.errors <= l)),
                )
            }),
            t.stale_reads.map(|l| {
                let stale = r.map(|r| r.consistency.as_ref().map_or(0, |c| c.stale_reads));
                (
                    format!("stale reads <= {l}"),
                    stale.map(|s| (s as f64, s <= l)),
                )
            }),
            t.min_rps.map(|l| {
                (
                    format!("throughput >= {l} req/s"),
                    r.map(|r| (r.totals.throughput_rps, r.totals.throughput_rps >= l)),
                )
            }),
        ];
        for (limit, got) in checks.into_iter().flatten() {
            let (value, passed) = match got {
                Some((v, ok)) => (trim(v), ok),
                None => (p.error.clone().unwrap_or_else(|| "no result".into()), false),
            };
            out.push(ThresholdCheck {
                point: point.clone(),
                limit,
                value,
                passed,
            });
        }
    }
    out
}

/// A figure as text: whole from 1000, else with at most 3 decimals.
fn trim(v: f64) -> String {
    if v.abs() >= 1000.0 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
