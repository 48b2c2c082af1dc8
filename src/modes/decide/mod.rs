//! `kvlab decide`: the answer for a stated load. On a copy of the data that
//! fits this machine it measures, in order: the database alone (a capacity
//! search within the goal), the cache alone (likewise), the cache's
//! miss-ratio curve (cache-aside runs with a settled cache at four sizes),
//! cache-aside at the smallest size that serves the load (confirmed by a
//! fixed-rate run), a cache loss (the cache restarted empty under that
//! load), and the other architectures at the same rate: the database with a
//! read replica, cache-aside with a near cache, a near cache in front of the
//! database. Then it carries each measurement to the stated load (rates per
//! server core, memory per key; every extrapolation said) and decides whether
//! to keep the cache; the other architectures are rows beside it.
//!
//! # Layout
//! - `ask`: what a decision is asked ([`Asked`]); `copy`: the copy of the
//!   data it measures, settled once ([`on_copy`]), and what a key takes.
//! - `steps`: the steps, declared once (a new step is one line there and its
//!   runs in `measure_all`); `measure`: the runs, one function each; `saved`:
//!   each step saved as it finishes, reused by `--resume`, read back by
//!   `--from`.
//! - `decision`: the decision as one pure function of the stated load and
//!   the measurements (`Measured`, defined in `measure`); `evaluate` the rows
//!   and the answer at one end of the ranges; `rows` each architecture's row,
//!   `rule` the answer,
//!   `carry` the curve carried to the stated keys (by the cache's eviction
//!   policy, settled in `eviction`), `flips` where the answer changes,
//!   `size` the one sizing method, `cpu` the products' CPU against their
//!   ops/s (the sizing's check); the popularity model that carries the
//!   curve (Che's approximation for LRU, the other policies simulated by
//!   `workload::trace::policy`) is `workload::trace::model`.
//! - `others`: the other architectures weighed (a read replica, near caches):
//!   a fixed-rate run each, and its row.
//! - `check`: `--check`, a saved decision checked by one run of what it
//!   sized; `compare` what it predicts there against what that run measured,
//!   as pure functions.

pub mod again;
mod ask;
pub mod beside;
pub mod carry;
pub mod check;
pub mod compare;
mod copy;
pub mod cpu;
pub mod decision;
mod evaluate;
mod flips;
pub mod held;
pub mod host;
mod loss_sized;
pub mod measure;
pub mod others;
mod rows;
mod rule;
pub mod saved;
pub mod size;
pub mod steps;
pub mod trace;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::plan::RunPlan;
use crate::results::decide::{ArchName, Decision, StatedLoad};
use crate::runner::{self, RunOptions};
use steps::{AsideStep, Step, Steps};

pub use ask::Asked;
pub use copy::OnCopy;
use copy::scaled_keys;

/// What `stated` asks, on the copy kvlab measures, built once (nothing
/// writes into it after): its keys settled ([`scaled_keys`]), a cache given
/// by URL that has no room for them measured beside
/// ([`beside::cache_by_url`]), the load on servers kvlab did not start
/// bounded ([`beside::capped`]); beside it what was learnt ([`OnCopy`]): the
/// copy, and the team's cache (the URL cache's, or the one observed, of
/// memory limit `observed_limit` bytes) carried to it, a point of the
/// curve. Each said.
pub fn on_copy(
    stated: Asked,
    observed_limit: Option<u64>,
    say: &mut dyn FnMut(&str),
) -> Result<(Asked, OnCopy)> {
    let copy = scaled_keys(&stated);
    let plan = stated.plan.with_keys(copy.keys);
    let asked = Asked { plan, ..stated };
    let by_url = beside::cache_by_url(&asked, &copy)?;
    let (asked, mut team_cache_mb) = match by_url {
        None => (asked, None),
        Some(b) => {
            say(&b.line);
            // Measured beside: the cores stated for the URL cache are not
            // the cores of the one kvlab starts.
            let load = StatedLoad {
                cache_cores: None,
                ..asked.load
            };
            let cache = b.cache;
            (
                Asked {
                    cache,
                    load,
                    ..asked
                },
                Some(b.team_cache_mb),
            )
        }
    };
    let asked = match beside::capped(&asked)? {
        None => asked,
        Some((plan, line)) => {
            say(&line);
            Asked { plan, ..asked }
        }
    };
    if let Some(limit) = observed_limit {
        let mb = beside::carried_mb(&asked, &copy, limit);
        team_cache_mb = Some(mb);
        say(&format!(
            "kvlab decide: the cache observed holds {:.1} MiB at most: a point of the curve at its size carried to the copy ({mb} MiB)\n",
            limit as f64 / crate::runner::foreign::MIB
        ));
    }
    Ok((
        asked,
        OnCopy {
            copy,
            team_cache_mb,
        },
    ))
}

/// Measures `ask` on the copy `on` and decides, each step saved under `out` as it finishes
/// (with `resume`, the finished steps whose plans match reused); `say` gets
/// a line per step as it goes.
pub fn decide(
    ask: &Asked,
    (on, out, resume): (&OnCopy, &Path, bool),
    opts: RunOptions,
    shutdown: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<Decision> {
    // What kvlab writes into servers it did not start is removed at the end.
    let guarded = RunPlan {
        cache: Some(ask.cache.clone()),
        ..ask.plan.clone()
    };
    let (mut d, cleaned) = runner::foreign::guarded(&guarded, on.copy.keys, opts, || {
        measure_all(ask, (on, out, resume), opts, shutdown, say)
    })?;
    d.cleanup = cleaned;
    Ok(d)
}

/// [`decide`]'s steps, in order.
fn measure_all(
    ask: &Asked,
    (on, out, resume): (&OnCopy, &Path, bool),
    opts: RunOptions,
    shutdown: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<Decision> {
    let mut store = saved::Store::open(out, ask, &on.copy, (resume, shutdown))?;
    let db_server = match store.complete() {
        true => None,
        false => runner::start_server(&ask.plan, opts)?,
    };
    let m = measure::Runs {
        ask,
        on,
        db_server: db_server.as_ref(),
        opts,
        shutdown,
        drawn: Default::default(),
    };
    let mut host = host::HostLog::start();
    let h = &mut host;
    let db: measure::Searched = store.step(Step::Database, h, say, |say| m.database(say))?;
    let cache: measure::Searched = store.step(Step::Cache, h, say, |say| m.cache_alone(say))?;
    let curve_rate = measure::curve_rate(ask, &db);
    let curve: Vec<measure::CurveRun> =
        store.step(Step::Curve, h, say, |say| m.curve(curve_rate, say))?;
    let (rate, rate_why) = measure::confirm_rate(ask, &db, &cache, curve_rate);
    let model = carry::model_of(ask, ask.load.write_share);
    let carried = |c: &measure::CurveRun| {
        let hit = c.result.cache_aside.as_ref().map_or(0.0, |a| a.hit_ratio);
        let copy = on.copy.keys.max(1);
        carry::held_items(&c.result).map_or(hit, |items| {
            model.carry_items(hit, items, copy, ask.load.keys).hit
        })
    };
    let aside: AsideStep = store.step(Step::CacheAside, h, say, |say| {
        Ok(AsideStep {
            rate,
            rate_why: rate_why.clone(),
            run: m.cache_aside((&curve, &carried), &db, rate, say)?,
        })
    })?;
    let loss = store.step(Step::CacheLoss, h, say, |say| match &aside.run {
        Some(a) => Ok(Some(m.cache_loss(a, rate, say)?)),
        None => Ok(None),
    })?;
    let replicas = store.step(Step::Replicas, h, say, |say| m.replicas(rate, say))?;
    let near_aside = store.step(Step::NearAside, h, say, |say| match &aside.run {
        Some(a) => m.near_aside(a, rate, say),
        None => Ok(others::Other {
            name: ArchName::CacheAsideNear,
            product: "a near cache in front of cache-aside".into(),
            run: None,
            why_not: Some("no cache-aside configuration met the database's capacity to put a near cache in front of".into()),
            what: "cache-aside with a near cache".into(),
        }),
    })?;
    let near_db = store.step(Step::NearDatabase, h, say, |say| m.near_database(rate, say))?;
    let steps = Steps {
        db,
        cache,
        curve,
        aside,
        loss,
        replicas,
        near_aside,
        near_db,
    };
    let measured = steps.measured(&ask.load, on.copy.clone(), store.busy());
    Ok(decision::decision(ask, &measured))
}
