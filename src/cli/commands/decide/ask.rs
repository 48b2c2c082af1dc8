//! What `kvlab decide`'s flags ask: the flags checked, the database and
//! the cache in front of it, the load as stated, the prices, the round
//! trips and the policy (kvlab's where the team states none), as one
//! [`Asked`].

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::cli::DecideArgs;
use crate::error::UsageError;
use crate::modes::decide::{self, Asked};
use crate::plan::{CacheAside, RunPlan};
use crate::results::decide::assumptions::EXAMPLE_CURRENCY;
use crate::results::decide::{Assumptions, KVLAB, StatedLoad};
use crate::workload::trace::policy::Policy;
use crate::workload::{LinkDelay, RateShape};

/// With neither `--rtt` nor `--cache-rtt`, each managed server is put one
/// same-zone hop away (a server given by URL has its real network); says
/// whether it did. `--rtt 0` asks for loopback: no link at all.
fn assume_round_trips(plan: &mut RunPlan, cache: &CacheAside) -> bool {
    let zero = |d: &Option<LinkDelay>| d.is_some_and(|d| d.rtt_ms == 0.0 && d.jitter_ms == 0.0);
    let assumed = plan.load.rtt.is_none() && plan.load.cache_rtt.is_none();
    if assumed {
        let hop = LinkDelay {
            rtt_ms: KVLAB.policy.same_zone_rtt_ms,
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

/// `--trace`: the workload's settings no flag gave, from the trace.
fn traced(
    args: &DecideArgs,
    plan: &mut RunPlan,
    policy: (Policy, f64, u32),
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
        .map(|path| decide::trace::apply(path, &mut plan.workload, given, policy, shutdown))
        .transpose()
}

/// The prices a decision sizes with, checked.
pub struct Prices {
    pub core_hour: f64,
    pub gib_hour: f64,
    pub machine_month: f64,
    pub currency: String,
    /// kvlab's examples: no price was given.
    pub examples: bool,
}

/// The prices and the stated cores of `args`, each checked.
pub fn prices(args: &DecideArgs) -> Result<Prices, UsageError> {
    for (flag, v) in [
        ("--target-cores", args.target_cores),
        ("--cache-cores", args.cache_cores),
        ("--price-machine-month", args.price_machine_month),
        ("--machine-cores", Some(args.machine_cores)),
        ("--machine-gib", Some(args.machine_gib)),
    ] {
        if let Some(v) = v {
            crate::error::positive(flag, v, "give a positive number")?;
        }
    }
    for (flag, v, e) in [
        ("--price-core-hour", args.price_core_hour, "0.04"),
        ("--price-gib-hour", args.price_gib_hour, "0.005"),
    ] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err(UsageError::bad(
                flag,
                format!("{v} is not a price"),
                format!("give 0 or more, in the currency of --currency, e.g. {flag} {e}"),
            ));
        }
    }
    if args
        .currency
        .as_deref()
        .is_some_and(|c| c.trim().is_empty())
    {
        return Err(UsageError::bad(
            "--currency",
            "an empty currency",
            "give the prices' currency, e.g. --currency EUR",
        ));
    }
    if args.app_instances == 0 {
        return Err(UsageError::bad(
            "--app-instances",
            "0 instances",
            "give the application's instances, e.g. --app-instances 4",
        ));
    }
    let (core_hour, gib_hour) = (
        args.price_core_hour
            .unwrap_or(KVLAB.policy.example_core_hour),
        args.price_gib_hour.unwrap_or(KVLAB.policy.example_gib_hour),
    );
    let machine_month = args.price_machine_month.unwrap_or_else(|| {
        KVLAB
            .policy
            .machine_month(args.machine_cores, args.machine_gib, core_hour, gib_hour)
    });
    if machine_month <= 0.0 {
        return Err(UsageError::bad(
            "--price-core-hour/--price-gib-hour",
            "a machine that costs nothing: no cost to compare",
            "give a price above 0 for a core or a GiB an hour, or --price-machine-month",
        ));
    }
    Ok(Prices {
        core_hour,
        gib_hour,
        machine_month,
        currency: args
            .currency
            .clone()
            .unwrap_or_else(|| EXAMPLE_CURRENCY.into()),
        examples: args.price_core_hour.is_none()
            && args.price_gib_hour.is_none()
            && args.price_machine_month.is_none(),
    })
}

/// kvlab's assumptions with the policy `args` state (`--keep-saving`).
pub fn assumed(args: &DecideArgs) -> Result<Assumptions, UsageError> {
    let mut a = KVLAB;
    if let Some(pct) = args.keep_saving {
        if !(0.0..100.0).contains(&pct) {
            return Err(UsageError::bad(
                "--keep-saving",
                format!("{pct}%"),
                "give the share of the database's cost a cache must save to be kept, from 0 to under 100, e.g. --keep-saving 10",
            ));
        }
        a.policy.keep_saving = pct / 100.0;
    }
    if let Some(m) = args.keep_saving_month {
        if !(m.is_finite() && m >= 0.0) {
            return Err(UsageError::bad(
                "--keep-saving-month",
                format!("{m} is not an amount"),
                "give the least saving a month worth running a cache, 0 or more in the prices' currency, e.g. --keep-saving-month 200",
            ));
        }
        a.policy.keep_saving_month = m;
    }
    a.policy.survive_cache_loss = args.survive_cache_loss;
    Ok(a)
}

/// What `args` ask: the database (not a cache) and the cache in front of it
/// (redis unless `--cache`), the load as stated.
pub fn ask_of(args: &DecideArgs, shutdown: &AtomicBool) -> Result<Asked> {
    let r = &args.run;
    let (rps, p99_ms) = stated(args)?;
    let rate_shape = day_shape(args)?;
    // The cache is redis unless given: the cache's flags apply to it.
    let mut with_cache = r.clone();
    with_cache.aside.cache.get_or_insert_with(|| "redis".into());
    // The shape is the stated load's over a day, not a run's.
    with_cache.rate_shape = None;
    let mut plan: RunPlan = with_cache.to_plan()?;
    if !plan.target.kind.is_sql() {
        return Err(UsageError::bad(
            "--target",
            format!("{} is no database", plan.target.kind.name()),
            "name the database the cache stands in front of, e.g. --target postgres (the cache is --cache, redis unless given)",
        )
        .into());
    }
    let cache = plan
        .cache
        .take()
        .ok_or_else(|| anyhow::anyhow!("no cache in front of the database"))?;
    let eviction = crate::modes::eviction::of_cache(&cache)?;
    let traced = traced(
        args,
        &mut plan,
        (eviction.policy, rps, cache.ttl_s),
        shutdown,
    )?;
    let rtt_assumed = assume_round_trips(&mut plan, &cache);
    let w = &plan.workload;
    let prices = prices(args)?;
    let assumed = assumed(args)?;
    let deployment = super::deployed::deployment(
        args,
        (
            plan.target.kind.product().name(),
            cache.cache.kind.product().name(),
        ),
        &assumed.policy,
        crate::results::decide::bill::Deploy::DEFAULT,
    )?;
    let currency = deployment.currency().map(String::from);
    let load = StatedLoad {
        example_prices: prices.examples && currency.is_none(),
        currency: currency.unwrap_or(prices.currency),
        deployment,
        rps,
        p99_ms,
        p50_ms: args.p50_ms,
        p999_ms: args.p999_ms,
        keys: w.keys,
        value_size: w.value_size,
        ratio: w.ratio.to_string(),
        distribution: w.distribution.to_string(),
        write_share: w.ratio.set as f64 / (w.ratio.set + w.ratio.get).max(1) as f64,
        machine_cores: args.machine_cores,
        machine_gib: args.machine_gib,
        price_core_hour: prices.core_hour,
        price_gib_hour: prices.gib_hour,
        price_machine_month: prices.machine_month,
        shared: args.shared,
        target_cores: args.target_cores,
        cache_cores: args.cache_cores,
        app_instances: args.app_instances,
        rtt_ms: plan.load.rtt.map(|d| d.rtt_ms),
        cache_rtt_ms: plan.load.cache_rtt.map(|d| d.rtt_ms),
        rtt_assumed,
        trace: traced.as_ref().map(|t| t.summary.clone()),
        rate_shape,
        eviction: Some(eviction),
        observed: args.observed.clone(),
    };
    Ok(Asked {
        plan,
        cache,
        load,
        quick: args.quick,
        run_secs: r.duration,
        trace: traced,
        assumed,
    })
}

/// `--rate-shape`: how the stated load moves over a day, `--rps` its peak
/// (the step at noon, the ramp over the day, one sine cycle a day unless
/// the shape says); `None` when steady.
pub fn day_shape(args: &DecideArgs) -> Result<Option<RateShape>, UsageError> {
    let Some(s) = &args.run.rate_shape else {
        return Ok(None);
    };
    let shape = RateShape::parse(s, Some(crate::workload::DAY_S))?;
    Ok((!shape.is_steady()).then_some(shape))
}

/// The rate and the p99 goal a measuring decision is given, checked.
pub fn stated(args: &DecideArgs) -> Result<(f64, f64), UsageError> {
    crate::cli::missing(args.rps.is_some(), args.p99_ms.is_some())?;
    let (rps, p99_ms) = (
        args.rps.unwrap_or_default(),
        args.p99_ms.unwrap_or_default(),
    );
    check_goal(p99_ms, args)?;
    crate::error::positive(
        "--rps",
        rps,
        "give the requests per second at peak, e.g. --rps 20000",
    )?;
    Ok((rps, p99_ms))
}

/// `p99_ms` and `args`' other goals, checked.
pub fn check_goal(p99_ms: f64, args: &DecideArgs) -> Result<(), UsageError> {
    crate::modes::capacity::check_limits(
        p99_ms,
        crate::modes::capacity::MoreLimits {
            p50_ms: args.p50_ms,
            p999_ms: args.p999_ms,
        },
    )
}
