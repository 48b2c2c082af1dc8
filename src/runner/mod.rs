//! One run from plan to result: start (or reach) the target, load the data,
//! run the engine while sampling client and server resources, cross-check the
//! server's counters, and assemble the [`RunResult`].
//!
//! # Layout (in the order of a run)
//! - `launch`: the servers a plan asks for, refused where they cannot fit.
//! - `resolve`: the plan resolved once (connections, sockets, pipeline, the
//!   engine's spec).
//! - `target`: the target reached (connectors, probe, counters).
//! - `dataset`: the data loaded; `cache`: the cache of a cache-aside run.
//! - `observe`: samples of client and server resources at the window's edges;
//!   `events`: what kvlab does to its servers during the window.
//! - `finish`: counters checked, the cache's, pooler's and background's
//!   reports; `assemble`: the result and its problems; `machine`: the machine.
//! - `replay`: the trace reader of a replay and its report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};

mod assemble;
pub mod cache;
pub mod dataset;
mod events;
mod finish;
pub mod launch;
pub mod machine;
pub mod metrics;
mod observe;
mod replay;
pub mod resolve;
mod target;

use crate::driver::Role;
use crate::engine::{self, EngineReport, Spec};
use crate::plan::RunPlan;
use crate::plan::shard::Share;
use crate::results::RunResult;
use crate::runner::cache::Cache;
use crate::servers::ManagedServer;
use crate::system::progress::Progress;
use crate::workload::OpMix;
use observe::RunObserver;
use resolve::Resolved;
use target::{Counters, Target};

pub use crate::runner::launch::start_managed;
pub use crate::system::progress::{RunOptions, note};

/// Measures one plan. A managed server lives exactly as long as this call.
pub fn run(plan: &RunPlan, opts: RunOptions, shutdown: &AtomicBool) -> Result<RunResult> {
    let server = start_server(plan, opts)?;
    let result = measure(plan, server.as_ref(), opts, shutdown);
    drop(server);
    result
}

/// Starts the managed server `plan` asks for (none for an external target).
pub fn start_server(plan: &RunPlan, opts: RunOptions) -> Result<Option<ManagedServer>> {
    start_managed(&plan.target, plan, opts)
}

/// Measures `plan` against `server` (kvlab's, already running) or the plan's
/// external target.
pub fn measure(
    plan: &RunPlan,
    server: Option<&ManagedServer>,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<RunResult> {
    measure_with(plan, server, None, opts, shutdown)
}

/// [`measure`], with the managed cache of a cache-aside plan already started
/// by the caller (`None`: started here when the plan's cache is managed).
///
/// The steps of a run, in order: resolve the plan, reach the target, open the
/// cache, load the data, ready the cache, read the counters, run the engine
/// (with the background writer), read the counters again, assemble.
pub fn measure_with(
    plan: &RunPlan,
    server: Option<&ManagedServer>,
    cache_server: Option<ManagedServer>,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<RunResult> {
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let rs = Resolved::of(plan, server)?;
    let target = Target::reach(plan, &rs, server, opts)?;
    let cache = match &plan.cache {
        Some(a) => Some(Cache::open(a, plan, opts, cache_server)?),
        None => None,
    };
    let mut base = rs.spec(plan, target.connector.clone(), target.topology()?);
    let load = dataset::prepare(&base, plan, server.is_some(), opts, shutdown)?;
    base.loaded_at = load.as_ref().map(|_| std::time::Instant::now());
    // After the load: a database's connections need kvlab's table.
    let transport = target.transport()?;
    base.connector = target.engine.clone();
    let settled = ready_cache(cache.as_ref(), &mut base, opts, shutdown)?;
    if shutdown.load(Ordering::SeqCst) {
        bail!("interrupted before measuring; nothing was measured");
    }
    let before = Counters::read(&target, cache.as_ref());
    let events = plan.load.events.clone();
    let mut obs = observer(&rs, &base, &target, cache.as_ref(), events, opts);
    // Trace replay: the reader streams the trace while the workers connect.
    let feed = replay::start(plan, &base)?;
    base.trace = feed.clone();
    let (report, background) = execute(&base, rs.background_rps, &mut obs, shutdown)?;
    obs.progress.finish();
    let after = Counters::read(&target, cache.as_ref());
    let finish = finish::Finish {
        plan,
        rs: &rs,
        target: &target,
        cache: cache.as_ref(),
        obs: &obs,
        report,
        settled,
    };
    Ok(finish.result(finish::Around {
        started_unix_s,
        load,
        before,
        after,
        background,
        transport,
        feed,
    }))
}

/// Readies the cache of a cache-aside run for `base`: filled (warm) or left
/// empty, then settled where the plan asks; the settling's time and curve.
fn ready_cache(
    cache: Option<&Cache>,
    base: &mut Spec,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<(Option<f64>, Vec<f64>)> {
    let Some(c) = cache else {
        return Ok((None, Vec::new()));
    };
    c.prepare(base, opts, shutdown)?;
    base.aside = Some(c.spec());
    match c.start() {
        crate::plan::CacheStart::Settle => c.settle(base, opts, shutdown),
        _ => Ok((None, Vec::new())),
    }
}

/// The observer of the measured run: progress, resource samples, `events`
/// and the live metrics.
fn observer<'a>(
    rs: &Resolved,
    base: &Spec,
    target: &'a Target<'a>,
    cache: Option<&'a Cache>,
    events: Vec<crate::plan::events::ServerEvent>,
    opts: RunOptions,
) -> RunObserver<'a> {
    let product = target.connector.product;
    let subject = |server, connector| events::Subject { server, connector };
    RunObserver {
        progress: Progress::spinner("run", opts.progress),
        server: target.server,
        cache: cache.and_then(|c| c.server.as_ref()),
        reporting: (target.server.is_none() && product.facts().usage_report.is_some())
            .then_some(&target.connector),
        peak_kb: Default::default(),
        at_start: None,
        at_end: None,
        warmup: base.warmup,
        events: events::Events::new(
            events,
            target.server.map(|s| subject(s, &target.connector)),
            cache.and_then(|c| c.server.as_ref().map(|s| subject(s, &c.connector))),
        ),
        cache_memory: cache.and_then(|c| match c.connector.product.role() {
            Role::Cache(m) => Some((m, &c.connector)),
            Role::Database(_) => None,
        }),
        memory: Vec::new(),
        metrics: crate::runner::metrics::installed()
            .map(|m| m.begin(&rs.architecture, product.name(), base.rate)),
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
        seed: base.seed ^ 0xb6,
        share: Share::all(1),
        // With a start instant, the writer begins with the measured phase
        // (every client's data is loaded by then).
        start_at: base.start_at,
        trace: None,
        ..base.clone()
    }
}
