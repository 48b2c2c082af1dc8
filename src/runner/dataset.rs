//! The data set: makes sure the target holds every key with its value before a
//! run. Caches get pipelined SETs through the engine; databases load kvlab's own
//! table themselves (`driver::table::prepare` over their `TableSteps`: checked,
//! reused or reloaded).

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::driver::{DataSpec, LoadResult, Role, table};
use crate::engine::{Observer, Spec};
use crate::plan::RunPlan;
use crate::plan::shard::Shard;
use crate::plan::shard::Share;
use crate::results::stats::ErrorKind;
use crate::system::progress::{Progress, RunOptions, note};
use crate::workload::{KeyDistribution, OpMix, Ratio, Stop, slice_of};

/// Prepares the data set for `plan`: loads it unless `--no-load` (databases
/// then still get an empty table, so reads miss rather than fail). `managed`:
/// kvlab started the server.
pub fn prepare(
    base: &Spec,
    plan: &RunPlan,
    managed: bool,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<Option<LoadResult>> {
    match base.connector.product.role() {
        Role::Cache(c) if plan.workload.load => {
            if !managed && plan.load.shard.is_none() {
                let what = (
                    base.key_prefix.as_slice(),
                    base.keys,
                    base.values.mean() as usize,
                );
                super::foreign::make_room(c, &base.connector, what, plan.shared)?;
            }
            load_cache_part(base, plan.load.shard, managed, opts, shutdown).map(Some)
        }
        Role::Cache(_) => Ok(None),
        Role::Database(db) => {
            let data = DataSpec {
                keys: base.keys,
                values: base.values.clone(),
                threads: base.threads,
                schema: plan.target.schema.clone(),
                load: plan.workload.load,
                managed,
            };
            table::prepare(db, &base.connector, &data, opts, shutdown)
        }
    }
}

/// Writes every key once (version 0), pipelined, into the cache `base` names;
/// fails unless every write was stored and kept (no eviction while loading).
/// `managed`: kvlab started the server (for the hint on what to change).
pub fn load_cache(
    base: &Spec,
    managed: bool,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<LoadResult> {
    load_cache_part(base, None, managed, opts, shutdown)
}

/// [`load_cache`] of one client's slice of the keys (`shard`; all keys
/// when `None`): the clients' slices are contiguous and cover every key once.
pub fn load_cache_part(
    base: &Spec,
    shard: Option<Shard>,
    managed: bool,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<LoadResult> {
    let Role::Cache(cache) = base.connector.product.role() else {
        bail!("{} is not a cache", base.connector.display);
    };
    let evicted_before = cache.memory(&base.connector).ok().map(|m| m.evictions);
    let window = cache.load_window(base.connector.tls());
    let pipeline = (window / (base.values.size() + 64)).clamp(1, 128);
    // Loaders: each client opens the same number (taken from what all
    // clients share), numbered over all clients, each writing its own slice.
    let (loaders, share) = match shard {
        None => {
            let n = base
                .connections
                .min(base.threads * 4)
                .min(base.keys as usize)
                .max(1);
            (n, Share::all(n))
        }
        Some(s) => {
            let n = (base.share.total / s.count).clamp(1, 16);
            let share = Share {
                first: s.index * n,
                total: s.count * n,
            };
            (n, share)
        }
    };
    let first = slice_of(base.keys, share.first, share.total).0;
    let last = slice_of(base.keys, share.first + loaders, share.total).0;
    let keys = last - first;
    let spec = Spec {
        distribution: KeyDistribution::Sequential,
        mix: OpMix::new(Ratio { set: 1, get: 0 }),
        connections: loaders,
        threads: base.threads.min(loaders),
        pipeline,
        warmup: Duration::ZERO,
        stop: Stop::Requests(base.keys),
        rate: None,
        board: None,
        aside: None,
        share,
        start_at: None,
        ..base.clone()
    };
    note(
        opts,
        match shard {
            None => format!("kvlab: loading {keys} keys of {} B", base.values.label()),
            Some(s) => format!(
                "kvlab: client {s} loading its slice of the keys, ids {first}..{last} ({keys} keys of {} B)",
                base.values.label()
            ),
        },
    );
    let mut obs = LoadObserver {
        progress: Progress::counter("load", keys, opts.progress),
        done: 0,
    };
    let started = Instant::now();
    let r = crate::engine::execute(&spec, shutdown, &mut obs)?;
    obs.progress.finish();
    let seconds = started.elapsed().as_secs_f64();
    check_stored(&r, keys, base, managed)?;
    let evicted_after = cache.memory(&base.connector).ok().map(|m| m.evictions);
    if let (Some(a), Some(b)) = (evicted_before, evicted_after)
        && b > a
    {
        bail!(
            "loading the data failed: {} evicted {} keys while kvlab stored {keys}: its memory limit holds less than the data; {}",
            base.connector.display,
            b - a,
            cache.load_hint(base.values.size(), managed)
        );
    }
    Ok(LoadResult::of(keys, seconds))
}

/// Fails unless the load `r` stored every one of its `keys` (an interrupted
/// load stored nothing worth measuring).
fn check_stored(
    r: &crate::engine::EngineReport,
    keys: u64,
    base: &Spec,
    managed: bool,
) -> Result<()> {
    if r.interrupted {
        bail!("interrupted while loading the data; nothing was measured");
    }
    let c = &r.measured.counts;
    if c.stored == keys {
        return Ok(());
    }
    let kinds: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|k| c.error(**k) > 0)
        .map(|k| format!("{} {}", k.name(), c.error(*k)))
        .collect();
    let hint = match base.connector.product.role() {
        Role::Cache(cache) => cache.load_hint(base.values.size(), managed),
        Role::Database(_) => String::new(),
    };
    bail!(
        "loading the data failed: {} of {keys} keys stored ({}){}; {hint}",
        c.stored,
        if kinds.is_empty() {
            "no errors counted".to_string()
        } else {
            kinds.join(", ")
        },
        r.last_connect_error
            .as_ref()
            .map(|e| format!("; last connection error: {e}"))
            .unwrap_or_default()
    )
}

/// A cache smaller than the data filled in rising popularity: keys
/// `keys - 1` down to 0 (key 0 the hottest, written last, so the hottest are
/// the most recent), pipelined, evictions allowed. Returns the keys it
/// evicted meanwhile (`None`: it does not say). `managed`: kvlab started it.
pub fn fill_cache(
    base: &Spec,
    keys: u64,
    managed: bool,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<Option<u64>> {
    let Role::Cache(cache) = base.connector.product.role() else {
        bail!("{} is not a cache", base.connector.display);
    };
    let evictions = || cache.memory(&base.connector).ok().map(|m| m.evictions);
    let before = evictions();
    let window = cache.load_window(base.connector.tls());
    // Few connections: the order of the writes is the order of popularity.
    let loaders = base.connections.min(base.threads).clamp(1, 2);
    let spec = Spec {
        keys,
        distribution: KeyDistribution::Countdown,
        mix: OpMix::new(Ratio { set: 1, get: 0 }),
        connections: loaders,
        threads: loaders,
        pipeline: (window / (base.values.size() + 64)).clamp(1, 128),
        warmup: Duration::ZERO,
        stop: Stop::Requests(keys),
        rate: None,
        board: None,
        aside: None,
        share: Share::all(loaders),
        start_at: None,
        ..base.clone()
    };
    let mut obs = LoadObserver {
        progress: Progress::counter("fill", keys, opts.progress),
        done: 0,
    };
    let r = crate::engine::execute(&spec, shutdown, &mut obs)?;
    obs.progress.finish();
    check_stored(&r, keys, base, managed)?;
    Ok(before.zip(evictions()).map(|(a, b)| b.saturating_sub(a)))
}

struct LoadObserver {
    progress: Progress,
    done: u64,
}

impl Observer for LoadObserver {
    fn second(&mut self, beat: &crate::engine::Beat) {
        let requests = beat.requests;
        self.done += requests;
        self.progress.inc(requests);
    }
}
