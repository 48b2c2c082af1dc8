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
pub mod beside;
pub mod carry;
pub mod check;
pub mod compare;
pub mod cpu;
pub mod decision;
mod evaluate;
pub mod eviction;
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
use serde::{Deserialize, Serialize};

use crate::plan::{CacheAside, RunPlan};
use crate::results::decide::assumptions::Method;
use crate::results::decide::{ArchName, Assumptions, DataCopy, Decision, StatedLoad};
use crate::results::stats::num;
use crate::runner::{self, RunOptions};
use steps::{AsideStep, Step, Steps};

/// What `kvlab decide` is asked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ask {
    /// The database and the workload, with the measured copy's keys.
    pub plan: RunPlan,
    /// The cache weighed in front of it.
    pub cache: CacheAside,
    /// The load as stated.
    pub load: StatedLoad,
    /// Shorter runs and fewer search steps (the demo).
    pub quick: bool,
    /// Seconds each measured run lasts (`--duration`), when given.
    pub run_secs: Option<f64>,
    /// The trace the load was taken from (`--trace`) and its curve.
    pub trace: Option<trace::Traced>,
    /// A cache given by URL measured beside: its memory carried to the
    /// copy, MiB, a point of the curve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_cache_mb: Option<u64>,
    /// What the decision assumes: kvlab's policy (with what the team
    /// changed) and its method. One saved before it was written read
    /// [`crate::results::decide::KVLAB`]'s.
    #[serde(default)]
    pub assumed: Assumptions,
}

impl Ask {
    /// Seconds each measured run lasts.
    pub(super) fn run_s(&self) -> f64 {
        self.run_secs
            .unwrap_or(self.assumed.method.run_s(self.quick))
    }

    /// How far a capacity search goes: the rates it tries after its
    /// closed-loop run, down to the stated rate.
    fn reach(&self) -> crate::modes::capacity::Reach {
        crate::modes::capacity::Reach {
            steps: self.assumed.method.search_steps(self.quick),
            floor: Some(self.load.rps),
        }
    }
}

/// The keys of the copy kvlab measures for `ask`'s stated keys, and why: all
/// of them when they fit the method's share of the memory available (and
/// its most keys, a load of a minute or so), else as many as do.
pub fn scaled_keys(ask: &Ask) -> DataCopy {
    copy_of(
        ask.load.keys,
        ask.load.value_size,
        ask.quick,
        &ask.assumed.method,
    )
}

/// `ask` on the copy kvlab measures: its keys settled ([`scaled_keys`]), a
/// cache given by URL held to the room it has ([`beside::cache_by_url`]),
/// the load on servers kvlab did not start bounded ([`beside::capped`]),
/// and a cache observed (its memory limit in bytes, `observed_limit`) a
/// point of the curve at its size carried to the copy; each said.
pub fn on_copy(
    mut ask: Ask,
    observed_limit: Option<u64>,
    say: &mut dyn FnMut(&str),
) -> Result<(Ask, DataCopy)> {
    let copy = scaled_keys(&ask);
    ask.plan.workload.keys = copy.keys;
    if let Some(line) = beside::cache_by_url(&mut ask, &copy)? {
        say(&line);
    }
    if let Some(line) = beside::capped(&mut ask)? {
        say(&line);
    }
    if let Some(limit) = observed_limit {
        let mb = beside::carried_mb(&ask, &copy, limit);
        ask.team_cache_mb = Some(mb);
        say(&format!(
            "kvlab decide: the cache observed holds {:.1} MiB at most: a point of the curve at its size carried to the copy ({mb} MiB)\n",
            limit as f64 / crate::runner::foreign::MIB
        ));
    }
    Ok((ask, copy))
}

/// [`scaled_keys`] of `keys` of `value_size` bytes by method `m`.
fn copy_of(keys: u64, value_size: usize, quick: bool, m: &Method) -> DataCopy {
    let per_key = key_bytes(value_size, m);
    let available = crate::system::procfs::meminfo("MemAvailable").unwrap_or(4 << 30);
    let cap = m.copy_keys(quick);
    let by_memory = fitting(available, per_key, m);
    let fit = by_memory.min(cap);
    let limit = match (fit < by_memory, quick) {
        (false, _) => format!(
            "the most that fit {}% of this machine's available memory",
            m.copy_memory_share * 100.0
        ),
        (true, true) => format!(
            "--quick measures at most {} keys (drop --quick for up to {})",
            num(cap as f64),
            num(m.copy_keys(false) as f64)
        ),
        (true, false) => format!(
            "kvlab measures at most {} keys, a load of a minute or so",
            num(cap as f64)
        ),
    };
    let (keys, why) = match keys <= fit {
        true => (keys, "the whole data set fits this machine".into()),
        false => (
            fit,
            format!(
                "{} of the {} keys: {limit}; hit ratios are measured on the copy (the same distribution over fewer keys) and memory is carried to the stated keys per key",
                num(fit as f64),
                num(keys as f64),
            ),
        ),
    };
    DataCopy {
        keys,
        why,
        bytes_per_key: per_key,
    }
}

/// What a key of `value_size` bytes takes in a server's memory by method
/// `m`, bytes.
pub(crate) fn key_bytes(value_size: usize, m: &Method) -> u64 {
    crate::workload::bytes_per_key(value_size as u64, 0, m.key_overhead_bytes)
}

/// The most keys of `per_key` bytes whose data fits method `m`'s share of
/// `available` bytes of memory (at least 1,000).
pub(crate) fn fitting(available: u64, per_key: u64, m: &Method) -> u64 {
    ((available as f64 * m.copy_memory_share) as u64 / per_key.max(1)).max(1000)
}

/// Measures `ask` and decides, each step saved under `out` as it finishes
/// (with `resume`, the finished steps whose plans match reused); `say` gets
/// a line per step as it goes.
pub fn decide(
    ask: &Ask,
    (copy, out, resume): (&DataCopy, &Path, bool),
    opts: RunOptions,
    shutdown: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<Decision> {
    // What kvlab writes into servers it did not start is removed at the end.
    let guarded = RunPlan {
        cache: Some(ask.cache.clone()),
        ..ask.plan.clone()
    };
    let keys = ask.plan.workload.keys;
    let (mut d, cleaned) = runner::foreign::guarded(&guarded, keys, opts, || {
        measure_all(ask, (copy, out, resume), opts, shutdown, say)
    })?;
    d.cleanup = cleaned;
    Ok(d)
}

/// [`decide`]'s steps, in order.
fn measure_all(
    ask: &Ask,
    (copy, out, resume): (&DataCopy, &Path, bool),
    opts: RunOptions,
    shutdown: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<Decision> {
    let mut store = saved::Store::open(out, ask, copy, (resume, shutdown))?;
    let db_server = match store.complete() {
        true => None,
        false => runner::start_server(&ask.plan, opts)?,
    };
    let m = measure::Runs {
        ask,
        copy,
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
        let copy = ask.plan.workload.keys.max(1);
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
    let measured = steps.measured(&ask.load, copy.clone(), store.busy());
    Ok(decision::decision(ask, &measured))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_names_what_limited_it() {
        // --quick: at most 100,000 keys, said as --quick's limit (not memory).
        let DataCopy { keys, why, .. } =
            copy_of(2_000_000, 500, true, &crate::results::decide::KVLAB.method);
        assert_eq!(keys, 100_000);
        assert!(why.contains("--quick measures at most"), "{why}");
        assert!(!why.contains("available memory"), "{why}");
        let DataCopy {
            keys,
            why,
            bytes_per_key,
        } = copy_of(50_000, 500, true, &crate::results::decide::KVLAB.method);
        assert_eq!(bytes_per_key, 620);
        assert_eq!(
            (keys, why.as_str()),
            (50_000, "the whole data set fits this machine")
        );
    }
}
