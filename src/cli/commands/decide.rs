//! `kvlab decide`: the answer for a stated load — keep the cache or not, what
//! each way costs, and what a cache loss does — on stdout, as JSON and as an
//! HTML page.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{check_writable, say, write_json};
use crate::cli::DecideArgs;
use crate::error::UsageError;
use crate::modes::decide::{self, Ask};
use crate::plan::{CacheAside, RunPlan};
use crate::results::decide::StatedLoad;
use crate::runner::RunOptions;
use crate::workload::LinkDelay;

/// Prices kvlab sizes with unless told: a core-hour and a GiB-hour.
const PRICES: (f64, f64) = (0.04, 0.005);

/// Runs `kvlab decide`.
pub fn exec(args: &DecideArgs, shutdown: &AtomicBool) -> Result<()> {
    let ask = ask_of(args, shutdown)?;
    let json = args.run.json.as_deref();
    if let Some(p) = json {
        check_writable(p)?;
    }
    std::fs::create_dir_all(&args.out).map_err(|e| {
        UsageError::bad(
            "--out",
            format!("cannot create {}: {e}", args.out.display()),
            "give a directory you can write",
        )
    })?;
    let scaled = decide::scaled_keys(ask.load.keys, ask.load.value_size, ask.quick);
    let mut ask = ask;
    ask.plan.workload.keys = scaled.0;
    let opts = RunOptions {
        progress: true,
        notes: true,
    };
    let d = decide::decide(&ask, scaled, opts, shutdown, &mut |l| say(json, l))?;
    say(json, &format!("\n{}", crate::report::decide::text(&d)));
    write_json(&args.out.join("decision.json"), &d)?;
    std::fs::write(
        args.out.join("report.html"),
        crate::report::decide::html(&d),
    )?;
    say(
        json,
        &format!("kvlab: wrote {}\n", args.out.join("report.html").display()),
    );
    if let Some(p) = json {
        write_json(p, &d)?;
    }
    Ok(())
}

/// The round trip a decision assumes to each server kvlab starts when the
/// user gives none: one hop within a zone, ms.
pub const SAME_ZONE_RTT_MS: f64 = 0.2;

/// With neither `--rtt` nor `--cache-rtt`, each managed server is put one
/// same-zone hop away (a server given by URL has its real network); says
/// whether it did. `--rtt 0` asks for loopback: no link at all.
fn assume_round_trips(plan: &mut RunPlan, cache: &CacheAside) -> bool {
    let zero = |d: &Option<LinkDelay>| d.is_some_and(|d| d.rtt_ms == 0.0 && d.jitter_ms == 0.0);
    let assumed = plan.load.rtt.is_none() && plan.load.cache_rtt.is_none();
    if assumed {
        let hop = LinkDelay {
            rtt_ms: SAME_ZONE_RTT_MS,
            jitter_ms: 0.0,
        };
        plan.load.rtt = plan.target.external.is_none().then_some(hop);
        plan.load.cache_rtt = cache.cache.external.is_none().then_some(hop);
    }
    if zero(&plan.load.rtt) {
        plan.load.rtt = None;
    }
    if zero(&plan.load.cache_rtt) {
        plan.load.cache_rtt = None;
    }
    assumed
}

/// Refuses the flags `kvlab decide` sets itself or cannot combine.
fn refuse(args: &DecideArgs) -> Result<(), UsageError> {
    let r = &args.run;
    for (given, flag, why) in [
        (
            r.rate.is_some(),
            "--rate",
            "kvlab decide chooses its rates from --rps",
        ),
        (
            r.shard.is_some() || r.start_at.is_some(),
            "--shard/--start-at",
            "kvlab decide runs one client",
        ),
        (
            !r.events.is_empty(),
            "--event",
            "kvlab decide makes its own cache loss",
        ),
        (
            args.trace.is_some() && r.profile.is_some(),
            "--profile",
            "--trace gives the workload",
        ),
    ] {
        if given {
            return Err(UsageError::conflict(flag, why, "drop it"));
        }
    }
    Ok(())
}

/// `--trace`: the workload's settings no flag gave, from the trace.
fn traced(
    args: &DecideArgs,
    plan: &mut RunPlan,
    shutdown: &AtomicBool,
) -> Result<Option<decide::trace::Traced>, UsageError> {
    let r = &args.run;
    let given = decide::trace::Given {
        keys: r.keys.is_some(),
        ratio: r.ratio.is_some(),
        sizes: r.value_size.is_some(),
        distribution: r.key_distribution.is_some(),
    };
    args.trace
        .as_deref()
        .map(|path| decide::trace::apply(path, &mut plan.workload, given, shutdown))
        .transpose()
}

/// What `args` ask: the database (not a cache) and the cache in front of it
/// (redis unless `--cache`), the load as stated.
fn ask_of(args: &DecideArgs, shutdown: &AtomicBool) -> Result<Ask> {
    let r = &args.run;
    refuse(args)?;
    crate::modes::capacity::check_limits(
        args.goal.p99_ms,
        crate::modes::capacity::MoreLimits {
            p50_ms: args.goal.p50_ms,
            p999_ms: args.goal.p999_ms,
        },
    )?;
    crate::error::positive(
        "--rps",
        args.rps,
        "give the requests per second at peak, e.g. --rps 20000",
    )?;
    let mut plan: RunPlan = r.to_plan()?;
    if !plan.target.kind.is_sql() {
        return Err(UsageError::bad(
            "--target",
            format!("{} is no database", plan.target.kind.name()),
            "name the database the cache stands in front of, e.g. --target postgres (the cache is --cache, redis unless given)",
        )
        .into());
    }
    let cache = match plan.cache.take() {
        Some(c) => c,
        None => CacheAside {
            cache: "redis".parse()?,
            policy: crate::plan::WritePolicy::Invalidate,
            ttl_s: 0,
            start: Default::default(),
        },
    };
    let traced = traced(args, &mut plan, shutdown)?;
    let rtt_assumed = assume_round_trips(&mut plan, &cache);
    let w = &plan.workload;
    let (price_core_hour, price_gib_hour) = (
        args.price_core_hour.unwrap_or(PRICES.0),
        args.price_gib_hour.unwrap_or(PRICES.1),
    );
    let currency = match (&args.currency, args.price_core_hour.is_some()) {
        (Some(c), _) => c.clone(),
        (None, true) => "(the unit of --price-core-hour)".into(),
        (None, false) => {
            "USD (kvlab's example prices: give --price-core-hour and --price-gib-hour)".into()
        }
    };
    let load = StatedLoad {
        rps: args.rps,
        p99_ms: args.goal.p99_ms,
        p50_ms: args.goal.p50_ms,
        p999_ms: args.goal.p999_ms,
        keys: w.keys,
        value_size: w.value_size,
        ratio: w.ratio.to_string(),
        distribution: w.distribution.to_string(),
        write_share: w.ratio.set as f64 / (w.ratio.set + w.ratio.get).max(1) as f64,
        machine_cores: args.machine_cores,
        machine_gib: args.machine_gib,
        price_core_hour,
        price_gib_hour,
        currency,
        rtt_ms: plan.load.rtt.map(|d| d.rtt_ms),
        cache_rtt_ms: plan.load.cache_rtt.map(|d| d.rtt_ms),
        rtt_assumed,
        trace: traced.as_ref().map(|t| t.summary.clone()),
    };
    Ok(Ask {
        plan,
        cache,
        load,
        quick: args.quick,
        run_secs: r.duration,
        trace: traced,
    })
}
