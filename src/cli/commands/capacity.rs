//! `kvlab capacity`: the highest rate a target sustains within a p99 limit,
//! step by step on stdout.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{Say, check_writable, write_json};
use crate::cli::CapacityArgs;
use crate::error::UsageError;
use crate::modes::capacity::{self, Capacity, MoreLimits, Step};
use crate::{plan, runner};

/// Runs `kvlab capacity`.
pub fn exec(args: &CapacityArgs, shutdown: &AtomicBool) -> Result<()> {
    let plan = plan_of(args)?;
    let json = args.run.json.as_deref();
    let say = Say::beside(json);
    let more = MoreLimits {
        p50_ms: args.goal.p50_ms,
        p999_ms: args.goal.p999_ms,
    };
    say.text(&goal_line(args));
    capacity::check_limits(args.goal.p99_ms, more)?;
    args.run.metrics.start(None, "kvlab", None)?;
    let opts = runner::RunOptions {
        progress: true,
        notes: true,
    };
    let server = runner::start_server(&plan, opts)?;
    let (mut c, cleaned) = runner::foreign::guarded(&plan, plan.workload.keys, opts, || {
        capacity::search_on(
            &plan,
            server.as_ref(),
            (args.goal.p99_ms, more),
            capacity::Reach {
                steps: args.steps,
                floor: None,
            },
            opts,
            shutdown,
            &mut |s| say.text(&step_line(s)),
        )
    })?;
    c.cleanup = cleaned;
    say.text(&outcome(&c, args.goal.p99_ms));
    if let Some(path) = json {
        write_json(path, &c)?;
    }
    crate::cli::metrics::hold(shutdown);
    Ok(())
}

/// The plan of `kvlab run`'s flags, refusing those capacity decides itself;
/// each run 5 s unless `--duration` says.
fn plan_of(args: &CapacityArgs) -> Result<plan::RunPlan> {
    if args.run.rate.is_some() || args.run.rate_shape.is_some() {
        return Err(UsageError::conflict(
            "--rate/--rate-shape",
            "kvlab capacity chooses the rates itself",
            "drop them",
        )
        .into());
    }
    let mut plan = args.run.to_plan()?;
    if let Some(path) = &args.run.json {
        check_writable(path)?;
    }
    if args.run.shard.is_some() || args.run.start_at.is_some() {
        return Err(UsageError::conflict(
            "--shard/--start-at",
            "kvlab capacity runs one client through many runs",
            "drop them (or run `kvlab run --shard` at chosen rates and merge)",
        )
        .into());
    }
    if plan.load.stop == plan::Stop::Duration(10.0) && args.run.duration.is_none() {
        plan.load.stop = plan::Stop::Duration(5.0);
    }
    Ok(plan)
}

/// The first line: what the search looks for.
fn goal_line(args: &CapacityArgs) -> String {
    format!(
        "kvlab capacity: highest rate with p99 <= {} ms{}{}, no errors, and at least {:.0}% of it carried\n",
        args.goal.p99_ms,
        args.goal
            .p50_ms
            .map(|m| format!(", p50 <= {m} ms"))
            .unwrap_or_default(),
        args.goal
            .p999_ms
            .map(|m| format!(", p99.9 <= {m} ms"))
            .unwrap_or_default(),
        capacity::CARRIED * 100.0
    )
}

/// A tried rate's line: what it served and its verdict.
fn step_line(s: &Step) -> String {
    let r = &s.result;
    let what = s
        .rate
        .map_or("closed loop".to_string(), |x| format!("{x:.0} req/s"));
    let verdict = if s.rate.is_none() {
        "bound".to_string()
    } else if s.passed {
        "pass".to_string()
    } else {
        let busy = busy_during(s).map(|why| format!(" (the host was busy: {why})"));
        format!(
            "fail: {}{}",
            s.reason.clone().unwrap_or_default(),
            busy.unwrap_or_default()
        )
    };
    format!(
        "  {what:>14}: served {:.0} req/s, p99 {:.0} µs, errors {} -> {verdict}\n",
        r.totals.throughput_rps, r.latency.latency_us.p99, r.totals.errors
    )
}

/// The search's outcome: the capacity, the bracket, the headroom and whether
/// kvlab limited it.
fn outcome(c: &Capacity, p99_ms: f64) -> String {
    let mut text = capacity_line(c, p99_ms);
    match c.bracket {
        Some([pass, fail]) => {
            text += &format!(
                "bracket: passed at {pass:.0} req/s, failed at {fail:.0} req/s: the capacity lies between ({:.1}% apart)\n",
                (fail - pass) / fail * 100.0
            )
        }
        None if c.client_limited_at.is_some() => {
            text += &format!(
                "bracket: none: at {:.0} req/s kvlab itself could not keep up (twice the client threads too), so the server's capacity is at least the rate found\n",
                c.client_limited_at.unwrap_or(0.0)
            )
        }
        None if c.capped_at.is_some() => {
            text += &format!(
                "bracket: none: --max-rps held the search to {:.0} req/s, so the server's capacity is at least the rate found (a lower bound)\n",
                c.capped_at.unwrap_or(0.0)
            )
        }
        None if c.capacity_rps.is_some() => {
            text += "bracket: no tried rate above the capacity failed (the closed loop's rate bounds it)\n"
        }
        None => {}
    }
    for h in &c.headroom {
        text += &format!("headroom: {h}\n");
    }
    let limited = c.steps.iter().filter(|s| s.client_limited).count();
    if limited > 0 {
        text += &format!(
            "note: {limited} failing step(s) were limited by kvlab, not the server: the capacity found is a lower bound for the server; raise --threads or --connections, or run kvlab on another machine\n"
        );
    }
    let busy = c
        .steps
        .iter()
        .filter(|s| s.rate.is_some() && !s.passed && busy_during(s).is_some())
        .count();
    if busy > 0 {
        text += &format!(
            "note: {busy} failing step(s) ran while other processes kept the host busy: they may have failed for the host, not the server (the capacity found is a lower bound); run again on a quiet host\n"
        );
    }
    text
}

/// Why the host was busy during step `s` (other processes' cores or steal,
/// at kvlab's limits), where it was.
fn busy_during(s: &Step) -> Option<String> {
    s.result
        .host
        .host_load
        .as_ref()
        .and_then(crate::results::host_load::busy_by_kvlab)
}

/// The capacity found, with its latencies, or that no rate met the goal.
fn capacity_line(c: &Capacity, p99_ms: f64) -> String {
    let found = c.at_capacity().and_then(|s| Some((s.rate?, &s.result)));
    let Some((rate, r)) = found else {
        return format!("capacity: no tried rate met p99 <= {p99_ms} ms without errors\n");
    };
    format!(
        "capacity: {rate:.0} req/s within p99 {p99_ms} ms (p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs{})\n",
        r.latency.latency_us.p50,
        r.latency.latency_us.p99,
        r.latency.latency_us.p999,
        r.server
            .server_cpu_s
            .map(|cpu| format!(", server CPU {:.2} cores", cpu / r.totals.duration_s))
            .unwrap_or_default()
    )
}
