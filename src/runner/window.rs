//! The measured window: the servers' counters before it, the engine over the
//! run's point (with the background writer beside it) under the run's
//! observer (progress, resource samples, events, live metrics), and the
//! counters after it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;

use super::cache::Cache;
use super::events;
use super::observe::{Reporting, RunObserver};
use super::resolve::Resolved;
use super::target::Target;
use crate::driver::{PoolerCounters, Role, ServerCounters};
use crate::engine::{self, EngineReport, Spec};
use crate::plan::shard::Share;
use crate::system::progress::{Progress, RunOptions};
use crate::workload::OpMix;

/// What the window measured, and the observer that watched it.
pub(super) struct Window<'a> {
    /// The run's observer (samples, events, the cache's memory).
    pub obs: RunObserver<'a>,
    /// What the engine measured.
    pub report: EngineReport,
    /// The background writer's report.
    pub background: Option<EngineReport>,
    /// Counters before the warm-up.
    pub before: Counters,
    /// Counters after the window.
    pub after: Counters,
}

/// Measures the window over `base` against `target` (and `cache`), as
/// resolved in `rs`.
pub(super) fn measure<'a>(
    rs: &'a Resolved,
    base: &Spec,
    target: &'a Target<'a>,
    cache: Option<&'a Cache>,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<Window<'a>> {
    let before = Counters::read(target, cache);
    let mut obs = observer(rs, base, target, cache, opts);
    let (report, background) = execute(base, rs.background_rps, &mut obs, shutdown)?;
    obs.progress.finish();
    let after = Counters::read(target, cache);
    Ok(Window {
        obs,
        report,
        background,
        before,
        after,
    })
}

/// The observer of the measured run: progress, resource samples, `events`
/// and the live metrics.
fn observer<'a>(
    rs: &'a Resolved,
    base: &Spec,
    target: &'a Target<'a>,
    cache: Option<&'a Cache>,
    opts: RunOptions,
) -> RunObserver<'a> {
    let product = target.connector.product;
    let subject = |server, connector| events::Subject { server, connector };
    RunObserver {
        progress: Progress::spinner("run", opts.progress),
        server: target.server,
        cache: cache.and_then(|c| c.server.as_ref()),
        reporting: Reporting::of(&target.connector, target.server.is_some()),
        reporting_cache: cache.and_then(|c| Reporting::of(&c.connector, c.server.is_some())),
        peak_kb: Default::default(),
        at_start: None,
        at_end: None,
        host: (None, None),
        warmup: base.warmup,
        events: events::Events::new(
            rs.config.load.events.clone(),
            target.server.map(|s| subject(s, &target.connector)),
            cache.and_then(|c| c.server.as_ref().map(|s| subject(s, &c.connector))),
        )
        .with_cache_keys(cache.map(|c| events::CacheKeys {
            connector: &c.connector,
            prefix: rs.config.workload.key_prefix.as_bytes(),
            keys: rs.config.workload.keys,
        })),
        cache_memory: cache.and_then(|c| match c.connector.product.role() {
            Role::Cache(m) => Some((m, &c.connector)),
            Role::Database(_) => None,
        }),
        memory: Vec::new(),
        metrics: crate::runner::metrics::installed().map(|m| {
            let offered = base.rate.map(|r| (r, base.rate_shape));
            m.begin(&rs.architecture, product.name(), offered)
        }),
        replicas: super::replication::Watch::new(
            &target.connector,
            &target.replicas,
            target.server,
        ),
    }
}

/// The engine over `base`, and beside it the background writer at its fixed
/// rate (`background_rps`), reported apart.
fn execute(
    base: &Spec,
    background_rps: Option<f64>,
    obs: &mut RunObserver,
    shutdown: &AtomicBool,
) -> Result<(EngineReport, Option<EngineReport>)> {
    let bg_stop = AtomicBool::new(false);
    std::thread::scope(|scope| -> Result<_> {
        let bg = background_rps.map(|rate| {
            let spec = background_spec(base, rate);
            let stop = &bg_stop;
            scope.spawn(move || crate::engine::execute(&spec, stop, &mut engine::Quiet))
        });
        let main = crate::engine::execute(base, shutdown, obs);
        bg_stop.store(true, Ordering::SeqCst);
        let bg = match bg {
            Some(h) => Some(
                h.join()
                    .map_err(|_| anyhow::anyhow!("the background writer panicked"))??,
            ),
            None => None,
        };
        Ok((main?, bg))
    })
}

/// The background writer's point: one connection writing at `rate` from the
/// measured phase's start.
fn background_spec(base: &Spec, rate: f64) -> Spec {
    Spec {
        mix: OpMix::new(crate::workload::Ratio { set: 1, get: 0 }),
        connections: 1,
        threads: 1,
        pipeline: 1,
        warmup: Duration::ZERO,
        stop: crate::workload::Stop::Duration(1e9),
        rate: Some(rate),
        seed: crate::workload::draws::seed(base.seed, crate::workload::draws::Phase::Background),
        share: Share::all(1),
        // With a start instant, the writer begins with the measured phase
        // (every client's data is loaded by then).
        start_at: base.start_at,
        trace: None,
        ..base.clone()
    }
}

/// The servers' own counters at one instant.
pub struct Counters {
    /// The target's (or why there are none); with read replicas, every
    /// server's together.
    pub server: Result<ServerCounters, String>,
    /// With read replicas: each server's, the primary first.
    pub each: Vec<Option<ServerCounters>>,
    /// The cache's, in a cache-aside run.
    pub cache: Option<ServerCounters>,
    /// The pooler's.
    pub pooler: Option<PoolerCounters>,
}

impl Counters {
    /// Reads every server's counters now.
    pub fn read(target: &Target, cache: Option<&Cache>) -> Counters {
        let each: Vec<Option<ServerCounters>> = match target.replicas.is_empty() {
            true => Vec::new(),
            false => std::iter::once(&target.connector)
                .chain(&target.replicas)
                .map(|c| c.counters().ok())
                .collect(),
        };
        let server = match each.iter().cloned().collect::<Option<Vec<_>>>() {
            Some(all) if !all.is_empty() => Ok(all[1..].iter().fold(all[0], |a, b| a.plus(b))),
            _ => target.connector.counters().map_err(|e| format!("{e:#}")),
        };
        Counters {
            server,
            each,
            cache: cache.and_then(Cache::counters),
            pooler: target.pooler.and_then(|p| p.counters().ok()),
        }
    }
}
