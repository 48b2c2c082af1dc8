//! Capacity search: the highest request rate a target sustains open-loop with
//! p99 under a limit and no errors, found by a bounded bisection over `--rate`
//! on one server, after a closed-loop run that bounds the search.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Result, bail};

use crate::plan::RunPlan;
use crate::results::RunResult;
pub use crate::results::capacity::{Capacity, Step};
use crate::runner::{self, RunOptions};

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
    let unsent = r.schedule.map_or(0, |s| s.unsent) as f64;
    if unsent > 0.001 * rate * r.duration_s {
        return Err(format!("{unsent:.0} scheduled requests never sent"));
    }
    if r.throughput_rps < 0.95 * rate {
        return Err(format!("served {:.0} req/s of {rate:.0}", r.throughput_rps));
    }
    Ok(())
}

/// Searches with at most `steps` paced runs after the closed-loop one, on a
/// server kvlab starts for the purpose (or the plan's external target).
pub fn search(
    plan: &RunPlan,
    p99_ms: f64,
    steps: usize,
    opts: RunOptions,
    shutdown: &AtomicBool,
    on_step: &mut dyn FnMut(&Step),
) -> Result<Capacity> {
    if !(p99_ms.is_finite() && p99_ms > 0.0) {
        bail!("--p99-ms: give a positive number of milliseconds, e.g. --p99-ms 1");
    }
    let server = runner::start_server(plan, opts)?;
    search_on(
        plan,
        server.as_ref(),
        p99_ms,
        steps,
        opts,
        shutdown,
        on_step,
    )
}

/// [`search`] against `server`, already running (a study's), or the plan's
/// external target when `None`.
pub fn search_on(
    plan: &RunPlan,
    server: Option<&crate::servers::ManagedServer>,
    p99_ms: f64,
    steps: usize,
    opts: RunOptions,
    shutdown: &AtomicBool,
    on_step: &mut dyn FnMut(&Step),
) -> Result<Capacity> {
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
        let verdict = judge(&r, rate, p99_ms);
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
