//! `kvlab capacity`: the highest rate a target sustains within a p99 limit,
//! step by step on stdout.

use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use super::{check_writable, say, write_json};
use crate::cli::CapacityArgs;
use crate::{modes::capacity, plan, runner};

/// Runs `kvlab capacity`.
pub fn exec(args: &CapacityArgs, shutdown: &AtomicBool) -> Result<()> {
    let mut plan = args.run.to_plan()?;
    if let Some(path) = &args.run.json {
        check_writable(path)?;
    }
    if args.run.rate.is_some() {
        bail!("--rate: kvlab capacity chooses the rates itself; drop --rate");
    }
    if args.run.shard.is_some() || args.run.start_at.is_some() {
        bail!(
            "--shard/--start-at: kvlab capacity runs one client through many runs; drop them (or run `kvlab run --shard` at chosen rates and merge)"
        );
    }
    if plan.load.stop == plan::Stop::Duration(10.0) && args.run.duration.is_none() {
        plan.load.stop = plan::Stop::Duration(5.0);
    }
    let json = args.run.json.as_deref();
    let opts = runner::RunOptions {
        progress: true,
        notes: true,
    };
    let mut on_step = |s: &crate::results::capacity::Step| {
        let r = &s.result;
        let what = s
            .rate
            .map_or("closed loop".to_string(), |x| format!("{x:.0} req/s"));
        let verdict = if s.rate.is_none() {
            "bound".to_string()
        } else if s.passed {
            "pass".to_string()
        } else {
            format!("fail: {}", s.reason.clone().unwrap_or_default())
        };
        say(
            json,
            &format!(
                "  {what:>14}: served {:.0} req/s, p99 {:.0} µs, errors {} -> {verdict}\n",
                r.throughput_rps, r.latency_us.p99, r.errors
            ),
        );
    };
    say(
        json,
        &format!(
            "kvlab capacity: highest rate with p99 <= {} ms{}{}, no errors, and at least {:.0}% of it carried\n",
            args.p99_ms,
            args.p50_ms
                .map(|m| format!(", p50 <= {m} ms"))
                .unwrap_or_default(),
            args.p999_ms
                .map(|m| format!(", p99.9 <= {m} ms"))
                .unwrap_or_default(),
            capacity::CARRIED * 100.0
        ),
    );
    if !(args.p99_ms.is_finite() && args.p99_ms > 0.0) {
        bail!("--p99-ms: give a positive number of milliseconds, e.g. --p99-ms 1");
    }
    args.run.metrics.start(None, "kvlab", None)?;
    let server = runner::start_server(&plan, opts)?;
    let c = capacity::search_on(
        &plan,
        server.as_ref(),
        (
            args.p99_ms,
            capacity::MoreLimits {
                p50_ms: args.p50_ms,
                p999_ms: args.p999_ms,
            },
        ),
        args.steps,
        opts,
        shutdown,
        &mut on_step,
    )?;
    match c.capacity_rps.and_then(|rate| {
        c.steps
            .iter()
            .rev()
            .find(|s| s.passed && s.rate == Some(rate))
            .map(|s| (rate, s))
    }) {
        Some((rate, s)) => {
            let r = &s.result;
            say(
                json,
                &format!(
                    "capacity: {rate:.0} req/s within p99 {} ms (p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs{})\n",
                    args.p99_ms,
                    r.latency_us.p50,
                    r.latency_us.p99,
                    r.latency_us.p999,
                    r.server_cpu_s
                        .map(|cpu| format!(", server CPU {:.2} cores", cpu / r.duration_s))
                        .unwrap_or_default()
                ),
            );
        }
        None => say(
            json,
            &format!(
                "capacity: no tried rate met p99 <= {} ms without errors\n",
                args.p99_ms
            ),
        ),
    }
    match c.bracket {
        Some([pass, fail]) => say(
            json,
            &format!(
                "bracket: passed at {pass:.0} req/s, failed at {fail:.0} req/s: the capacity lies between ({:.1}% apart)\n",
                (fail - pass) / fail * 100.0
            ),
        ),
        None if c.capacity_rps.is_some() => say(
            json,
            "bracket: no tried rate above the capacity failed (the closed loop's rate bounds it)\n",
        ),
        None => {}
    }
    for h in &c.headroom {
        say(json, &format!("headroom: {h}\n"));
    }
    let limited = c.steps.iter().filter(|s| s.client_limited).count();
    if limited > 0 {
        say(
            json,
            &format!(
                "note: {limited} failing step(s) were limited by kvlab, not the server: the capacity found is a lower bound for the server; raise --threads or --connections, or run kvlab on another machine\n"
            ),
        );
    }
    if let Some(path) = json {
        write_json(path, &c)?;
    }
    crate::cli::metrics::hold(shutdown);
    Ok(())
}
