//! Capacity search: the highest request rate a target sustains open-loop with
//! p99 under a limit and no errors, found by a bounded bisection over `--rate`
//! on one server, after a closed-loop run that bounds the search.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Result, bail};

use crate::plan::RunPlan;
use crate::results::RunResult;
pub use crate::results::capacity::{Capacity, Step};
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

/// Whether `r`, run at `rate`, met the goal; else why not.
pub fn judge(r: &RunResult, rate: f64, p99_ms: f64) -> Result<(), String> {
    if r.errors > 0 {
        return Err(format!("{} errors", r.errors));
    }
    if r.latency_us.p99 > p99_ms * 1000.0 {
        return Err(format!(
            "p99 {:.2} ms over {p99_ms} ms",
            r.latency_us.p99 / 1000.0
        ));
    }
    let unsent = r.schedule.as_ref().map_or(0, |s| s.unsent) as f64;
    if unsent > 0.001 * rate * r.duration_s {
        return Err(format!("{unsent:.0} scheduled requests never sent"));
    }
    if r.throughput_rps < 0.95 * rate {
        return Err(format!("served {:.0} req/s of {rate:.0}", r.throughput_rps));
    }
    Ok(())
}

/// Searches with at most `steps` paced runs after the closed-loop one,
/// against `server`, already running (started for the purpose, or a study's),
/// or the plan's external target when `None`.
pub fn search_on(
    plan: &RunPlan,
    server: Option<&crate::servers::ManagedServer>,
    p99_ms: f64,
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
    let first = runner::measure(&plan, server, opts, shutdown)?;
    plan.workload.load = false; // loaded once
    let bound = first.throughput_rps;
    let mut out = Capacity {
        p99_ms,
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
    for _ in 0..steps {
        if shutdown.load(Ordering::SeqCst) {
            break;
        }
        // Until a rate passes, halve; then bisect between the best pass and the
        // lowest failure.
        let rate = if lo == 0.0 { hi * 0.5 } else { (lo + hi) / 2.0 };
        plan.load.rate = Some(rate);
        let r = runner::measure(&plan, server, opts, shutdown)?;
        let mut verdict = judge(&r, rate, p99_ms);
        let limited = verdict
            .is_err()
            .then(|| client_limited(&r, p99_ms))
            .flatten();
        if let (Err(why), Some(l)) = (verdict.as_mut(), &limited) {
            *why = format!("{why} ({l})");
        }
        let passed = verdict.is_ok();
        if passed {
            lo = rate;
            out.capacity_rps = Some(rate);
        } else {
            hi = rate;
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
        if (lo > 0.0 && hi - lo < 0.02 * hi) || (lo == 0.0 && hi < bound * 0.01) {
            break;
        }
    }
    Ok(out)
}
