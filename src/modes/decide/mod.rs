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
//! - `measure`: the runs, one function each.
//! - `rows`: each architecture's row at the stated load, and the decision.
//! - `others`: the other architectures weighed (a read replica, near caches):
//!   a fixed-rate run each, and its row.

pub mod host;
mod measure;
pub mod model;
mod others;
mod rows;
pub mod size;
pub mod trace;

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::plan::{CacheAside, RunPlan};
use crate::results::decide::{Decision, Scaled, StatedLoad};
use crate::runner::{self, RunOptions};

/// What `kvlab decide` is asked.
#[derive(Clone, Debug)]
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
}

impl Ask {
    /// Seconds each measured run lasts.
    fn run_s(&self) -> f64 {
        self.run_secs.unwrap_or(if self.quick { 3.0 } else { 5.0 })
    }

    /// Rates a capacity search tries after its closed-loop run.
    fn steps(&self) -> usize {
        if self.quick { 3 } else { 5 }
    }
}

/// The keys of the copy kvlab measures for `keys` of `value_size` bytes, and
/// why: all of them when they fit a quarter of the memory available (and a
/// load of a minute or so), else as many as do.
pub fn scaled_keys(keys: u64, value_size: usize, quick: bool) -> (u64, String) {
    let per_key = value_size as u64 + 120;
    let memory = crate::system::procfs::meminfo("MemAvailable").unwrap_or(4 << 30) / 4;
    let cap = if quick { 100_000 } else { 1_000_000 };
    let by_memory = (memory / per_key).max(1000);
    let fit = by_memory.min(cap);
    let limit = match (fit < by_memory, quick) {
        (false, _) => "the most that fit a quarter of this machine's available memory",
        (true, true) => "--quick measures at most 100,000 keys (drop --quick for up to 1,000,000)",
        (true, false) => "kvlab measures at most 1,000,000 keys, a load of a minute or so",
    };
    match keys <= fit {
        true => (keys, "the whole data set fits this machine".into()),
        false => (
            fit,
            format!(
                "{} of the {} keys: {limit}; hit ratios are measured on the copy (the same distribution over fewer keys) and memory is carried to the stated keys per key",
                crate::results::stats::num(fit as f64),
                crate::results::stats::num(keys as f64),
            ),
        ),
    }
}

/// Measures `ask` and decides; `say` gets a line per step as it goes.
pub fn decide(
    ask: &Ask,
    scaled: (u64, String),
    opts: RunOptions,
    shutdown: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<Decision> {
    let db_server = runner::start_server(&ask.plan, opts)?;
    let m = measure::Runs {
        ask,
        db_server: db_server.as_ref(),
        opts,
        shutdown,
    };
    // Stopped (Ctrl-C) during `step` (each step is checked as it returns):
    // it was cut short, the steps before it finished; no answer from a step
    // cut short; the servers stop.
    let stopped = |step: &str| -> Result<()> {
        const STEPS: [&str; 8] = [
            "the database alone",
            "the cache alone",
            "the miss-ratio curve",
            "the cache-aside confirmation",
            "the cache loss",
            "the database with a read replica",
            "cache-aside with a near cache",
            "the database with a near cache",
        ];
        if !shutdown.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        let before = STEPS.iter().position(|s| *s == step).unwrap_or(0);
        let finished = match before {
            0 => "none".to_string(),
            n => STEPS[..n].join(", "),
        };
        anyhow::bail!(
            "stopped (Ctrl-C) during the runs of {step}; finished: {finished}; no decision from runs cut short; run kvlab decide again for one"
        )
    };
    let mut host = host::HostLog::start();
    let db = m.database(say)?;
    stopped("the database alone")?;
    note_host(&mut host, "the database alone", say);
    let cache = m.cache_alone(say)?;
    stopped("the cache alone")?;
    note_host(&mut host, "the cache alone", say);
    let curve_rate = measure::curve_rate(ask, &db);
    let curve = m.curve(curve_rate, say)?;
    stopped("the miss-ratio curve")?;
    note_host(&mut host, "the miss-ratio curve", say);
    let (rate, rate_why) = measure::confirm_rate(ask, &db, &cache, curve_rate);
    let aside = m.cache_aside(&curve, &db, rate, say)?;
    stopped("the cache-aside confirmation")?;
    note_host(&mut host, "the cache-aside confirmation", say);
    let loss = match &aside {
        Some(a) => Some(m.cache_loss(a, rate, say)?),
        None => None,
    };
    stopped("the cache loss")?;
    note_host(&mut host, "the cache loss", say);
    let mut others = vec![m.replicas(rate, say)?];
    stopped("the database with a read replica")?;
    note_host(&mut host, "the database with a read replica", say);
    others.push(match &aside {
        Some(a) => m.near_aside(a, rate, say)?,
        None => others::Other {
            name: "cache-aside-near",
            product: "a near cache in front of cache-aside".into(),
            run: None,
            why_not: Some("no cache-aside configuration met the database's capacity to put a near cache in front of".into()),
            what: "cache-aside with a near cache".into(),
        },
    });
    stopped("cache-aside with a near cache")?;
    note_host(&mut host, "cache-aside with a near cache", say);
    others.push(m.near_database(rate, say)?);
    stopped("the database with a near cache")?;
    note_host(&mut host, "the database with a near cache", say);
    let per_key = ask.load.keys as f64 / ask.plan.workload.keys.max(1) as f64;
    let others = others
        .iter()
        .map(|o| others::row(ask, o, per_key, (&db, &cache)))
        .collect();
    let scaled = Scaled {
        keys: ask.plan.workload.keys,
        factor: ask.plan.workload.keys as f64 / ask.load.keys.max(1) as f64,
        why: scaled.1,
        rate,
        rate_why,
    };
    let mut d = rows::decision(
        ask,
        scaled,
        rows::Measured {
            db,
            cache,
            curve,
            aside,
            loss,
            others,
        },
    );
    d.host_busy = host.busy;
    Ok(d)
}

/// Ends `step` on the host log: a line when the host was busy in it.
fn note_host(host: &mut host::HostLog, step: &str, say: &mut dyn FnMut(&str)) {
    if let Some(line) = host.mark(step) {
        say(&format!("  NOTE: {line}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_names_what_limited_it() {
        // --quick: at most 100,000 keys, said as --quick's limit (not memory).
        let (keys, why) = scaled_keys(2_000_000, 500, true);
        assert_eq!(keys, 100_000);
        assert!(why.contains("--quick measures at most"), "{why}");
        assert!(!why.contains("available memory"), "{why}");
        let (keys, why) = scaled_keys(50_000, 500, true);
        assert_eq!(
            (keys, why.as_str()),
            (50_000, "the whole data set fits this machine")
        );
    }
}
