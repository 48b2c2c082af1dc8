//! Capacity search: the highest request rate a target sustains open-loop with
//! p99 (and, if given, p50 and p99.9) under their limits, no errors, and the
//! rate carried, found by a bounded bisection over `--rate` on one server,
//! after a closed-loop run that bounds the search; a rate fails only when a
//! second run at it fails too. It ends with a bracket
//! (the highest pass, the lowest failure above it) and the headroom at the
//! answer. Latency is always from each request's intended send time.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Result, bail};

use crate::plan::RunPlan;
use crate::results::RunResult;
pub use crate::results::capacity::{Capacity, MoreLimits, Step};
use crate::runner::{self, RunOptions};

/// Why a failed step `r` failed on kvlab's side, when it did: its workers were
/// saturated, or its p99 over `p99_ms` came from waiting before the send
/// (late sends, no free connection) while the server answered within it.
pub fn client_limited(r: &RunResult, p99_ms: f64) -> Option<String> {
    let busy = r.client_busy.unwrap_or(0.0);
    if busy >= 0.9 {
        return Some(format!(
            "client-limited: kvlab's workers were busy {:.0}% of the time; raise --threads (or give kvlab more cores)",
            busy * 100.0
        ));
    }
    let service = r.service_time_us.as_ref()?.p99;
    let late = r.schedule.as_ref().map_or(0, |s| s.late_requests);
    (r.latency_us.p99 > p99_ms * 1000.0 && service <= p99_ms * 1000.0 && late > 0).then(|| {
        format!(
            "client-limited: p99 {:.2} ms from the intended start but {:.2} ms from the send, {late} sends late: requests waited in kvlab (workers busy {:.0}%), not in the server; raise --threads or --connections",
            r.latency_us.p99 / 1000.0,
            service / 1000.0,
            busy * 100.0
        )
    })
}

/// The least share of the offered rate a passing step must carry.
pub const CARRIED: f64 = 0.95;

/// The latency limits of `r` as (name, measured ms, limit ms).
fn latencies(r: &RunResult, p99_ms: f64, more: MoreLimits) -> Vec<(&'static str, f64, f64)> {
    let l = &r.latency_us;
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
    if r.errors > 0 {
        return Err(format!("{} errors", r.errors));
    }
    let over: Vec<String> = latencies(r, p99_ms, more)
        .into_iter()
        .filter(|(_, got, lim)| got > lim)
        .map(|(n, got, lim)| format!("{n} {got:.2} ms over {lim} ms"))
        .collect();
    if !over.is_empty() {
        return Err(over.join(", "));
    }
    let unsent = r.schedule.as_ref().map_or(0, |s| s.unsent) as f64;
    if unsent > 0.001 * rate * r.duration_s {
        return Err(format!("{unsent:.0} scheduled requests never sent"));
    }
    if r.throughput_rps < CARRIED * rate {
        return Err(format!(
            "served {:.0} req/s of {rate:.0} (under {:.0}%)",
            r.throughput_rps,
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

/// Searches within `p99_ms` and the `more` limits with at most `steps`
/// paced rates after the closed-loop run (a failing rate is run twice and
/// fails only if both runs fail),
/// against `server`, already running (started for the purpose, or a study's),
/// or the plan's external target when `None`.
pub fn search_on(
    plan: &RunPlan,
    server: Option<&crate::servers::ManagedServer>,
    (p99_ms, more): (f64, MoreLimits),
    steps: usize,
    opts: RunOptions,
    shutdown: &AtomicBool,
    on_step: &mut dyn FnMut(&Step),
) -> Result<Capacity> {
    if !(p99_ms.is_finite() && p99_ms > 0.0) {
        bail!("--p99-ms: give a positive number of milliseconds, e.g. --p99-ms 1");
    }
    let mut plan = plan.clone();
    plan.load.rate = None;
    let live = crate::metrics::installed();
    if let Some(m) = live {
        m.set_point("capacity: closed loop");
    }
    let first = runner::measure(&plan, server, opts, shutdown)?;
    plan.workload.load = false; // loaded once
    let bound = first.throughput_rps;
    for (flag, v) in [("--p50-ms", more.p50_ms), ("--p999-ms", more.p999_ms)] {
        if let Some(v) = v
            && !(v.is_finite() && v > 0.0)
        {
            bail!("{flag}: give a positive number of milliseconds");
        }
    }
    let mut out = Capacity {
        p99_ms,
        limits: more,
        bracket: None,
        headroom: Vec::new(),
        capacity_rps: None,
        steps: Vec::new(),
    };
    let step = Step {
        rate: None,
        passed: first.errors == 0,
        reason: (first.errors > 0).then(|| format!("{} errors", first.errors)),
        client_limited: false,
        result: first,
    };
    on_step(&step);
    out.steps.push(step);
    if bound <= 0.0 {
        bail!("the closed-loop run served nothing; cannot search");
    }
    let (mut lo, mut hi) = (0.0f64, bound * 1.1);
    let mut failed_above: Option<f64> = None;
    for _ in 0..steps {
        if shutdown.load(Ordering::SeqCst) {
            break;
        }
        // Until a rate passes, halve; then bisect between the best pass and the
        // lowest failure.
        let rate = if lo == 0.0 { hi * 0.5 } else { (lo + hi) / 2.0 };
        plan.load.rate = Some(rate);
        if let Some(m) = live {
            m.set_point(&format!("capacity: {rate:.0} req/s"));
        }
        let mut r = runner::measure(&plan, server, opts, shutdown)?;
        let mut verdict = judge(&r, rate, p99_ms, more);
        let mut limited = verdict
            .is_err()
            .then(|| client_limited(&r, p99_ms))
            .flatten();
        if let (Err(why), Some(l)) = (verdict.as_mut(), &limited) {
            *why = format!("{why} ({l})");
        }
        // A rate fails only when a second run at it fails too: one run's p99
        // can be a spike of a shared machine, and the bracket's upper end
        // should be a rate that fails again.
        if let Err(first) = &verdict
            && !shutdown.load(Ordering::SeqCst)
        {
            let step = Step {
                rate: Some(rate),
                passed: false,
                reason: Some(format!("{first} (run again to confirm)")),
                client_limited: limited.is_some(),
                result: r,
            };
            on_step(&step);
            out.steps.push(step);
            r = runner::measure(&plan, server, opts, shutdown)?;
            verdict = judge(&r, rate, p99_ms, more);
            limited = verdict
                .is_err()
                .then(|| client_limited(&r, p99_ms))
                .flatten();
            match (verdict.as_mut(), &limited) {
                (Err(why), Some(l)) => *why = format!("{why} ({l}); failed twice"),
                (Err(why), None) => *why = format!("{why}; failed twice"),
                (Ok(()), _) => {}
            }
        }
        let passed = verdict.is_ok();
        if passed {
            lo = rate;
            out.capacity_rps = Some(rate);
            out.headroom = headroom(&r, p99_ms, more);
        } else {
            hi = rate;
            failed_above = Some(rate);
        }
        let step = Step {
            rate: Some(rate),
            passed,
            reason: verdict.err(),
            client_limited: limited.is_some(),
            result: r,
        };
        on_step(&step);
        out.steps.push(step);
        // Every rate up to the ceiling passed: the closed loop understated
        // the target (an open loop can carry more); raise the ceiling so that
        // the search ends with a failure above its answer (up to 8x).
        if failed_above.is_none() && lo > 0.0 && hi - lo < 0.02 * hi && hi < bound * 8.0 {
            hi *= 2.0;
            continue;
        }
        if (lo > 0.0 && hi - lo < 0.02 * hi) || (lo == 0.0 && hi < bound * 0.01) {
            break;
        }
    }
    // Bisection keeps every failure above the best pass.
    out.bracket = out
        .capacity_rps
        .zip(failed_above)
        .map(|(pass, fail)| [pass, fail]);
    Ok(out)
}
