//! The limits a capacity search holds each step to: a run judged against
//! them, its headroom under them, why kvlab limited a failed run, and the
//! flags that set them checked.

use crate::error::{UsageError, positive};
use crate::results::RunResult;
use crate::results::capacity::MoreLimits;

/// Why a failed step `r` failed on kvlab's side, when it did: its workers were
/// saturated, or its p99 over `p99_ms` came from waiting before the send
/// (late sends, no free connection) while the server answered within it.
pub fn client_limited(r: &RunResult, p99_ms: f64) -> Option<String> {
    let busy = r.client.client_busy.unwrap_or(0.0);
    if busy >= 0.9 {
        return Some(format!(
            "client-limited: kvlab's workers were busy {:.0}% of the time; raise --threads (or give kvlab more cores)",
            busy * 100.0
        ));
    }
    let service = r.latency.service_time_us.as_ref()?.p99;
    let late = r.latency.schedule.as_ref().map_or(0, |s| s.late_requests);
    (r.latency.latency_us.p99 > p99_ms * 1000.0 && service <= p99_ms * 1000.0 && late > 0).then(|| {
        format!(
            "client-limited: p99 {:.2} ms from the intended start but {:.2} ms from the send, {late} sends late: requests waited in kvlab (workers busy {:.0}%), not in the server; raise --threads or --connections",
            r.latency.latency_us.p99 / 1000.0,
            service / 1000.0,
            busy * 100.0
        )
    })
}

/// The least share of the offered rate a passing step must carry.
pub const CARRIED: f64 = 0.95;

/// The latency limits of `r` as (name, measured ms, limit ms).
fn latencies(r: &RunResult, p99_ms: f64, more: MoreLimits) -> Vec<(&'static str, f64, f64)> {
    let l = &r.latency.latency_us;
    [
        ("p50", l.p50, more.p50_ms),
        ("p99", l.p99, Some(p99_ms)),
        ("p99.9", l.p999, more.p999_ms),
    ]
    .into_iter()
    .filter_map(|(n, us, lim)| lim.map(|ms| (n, us / 1000.0, ms)))
    .collect()
}

/// Whether `r`, run at `rate`, met every limit; else why not.
pub fn judge(r: &RunResult, rate: f64, p99_ms: f64, more: MoreLimits) -> Result<(), String> {
    if r.totals.errors > 0 {
        return Err(format!("{} errors", r.totals.errors));
    }
    let over: Vec<String> = latencies(r, p99_ms, more)
        .into_iter()
        .filter(|(_, got, lim)| got > lim)
        .map(|(n, got, lim)| format!("{n} {got:.2} ms over {lim} ms"))
        .collect();
    if !over.is_empty() {
        return Err(over.join(", "));
    }
    let unsent = r.latency.schedule.as_ref().map_or(0, |s| s.unsent) as f64;
    if unsent > 0.001 * rate * r.totals.duration_s {
        return Err(format!("{unsent:.0} scheduled requests never sent"));
    }
    if r.totals.throughput_rps < CARRIED * rate {
        return Err(format!(
            "served {:.0} req/s of {rate:.0} (under {:.0}%)",
            r.totals.throughput_rps,
            CARRIED * 100.0
        ));
    }
    Ok(())
}

/// How far under each limit `r` stayed, one line each.
pub fn headroom(r: &RunResult, p99_ms: f64, more: MoreLimits) -> Vec<String> {
    latencies(r, p99_ms, more)
        .into_iter()
        .map(|(n, got, lim)| {
            format!(
                "{n} {got:.3} ms of {lim} ms: {:.0}% under",
                (1.0 - got / lim) * 100.0
            )
        })
        .collect()
}

/// Checks the limits a search holds rates to (`--p99-ms`, `--p50-ms`,
/// `--p999-ms`): each a positive number of milliseconds.
pub fn check_limits(p99_ms: f64, more: MoreLimits) -> Result<(), UsageError> {
    positive("--p99-ms", p99_ms, "give milliseconds, e.g. --p99-ms 1")?;
    for (flag, v) in [("--p50-ms", more.p50_ms), ("--p999-ms", more.p999_ms)] {
        if let Some(v) = v {
            positive(flag, v, &format!("give milliseconds, e.g. {flag} 1"))?;
        }
    }
    // A p50 is never above the p99, nor a p99.9 below it: such a goal never
    // binds, and was most likely meant the other way round.
    if let Some(p50) = more.p50_ms.filter(|&v| v > p99_ms) {
        return Err(UsageError::bad(
            "--p50-ms",
            format!("{p50} ms is above the p99 goal ({p99_ms} ms), so it never binds"),
            "give a p50 goal below --p99-ms, or drop it",
        ));
    }
    if let Some(p999) = more.p999_ms.filter(|&v| v < p99_ms) {
        return Err(UsageError::bad(
            "--p999-ms",
            format!("{p999} ms is below the p99 goal ({p99_ms} ms), so the p99 goal never binds"),
            "give a p99.9 goal above --p99-ms, or drop it",
        ));
    }
    Ok(())
}
