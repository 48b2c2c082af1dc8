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
//! - `foreign`: what kvlab does with a server it did not start (the load
//!   said, room made, its data removed at the end).
//! - `replay`: the trace reader of a replay and its report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};

mod assemble;
pub mod cache;
pub mod dataset;
mod events;
mod finish;
pub mod foreign;
pub mod launch;
pub mod machine;
pub mod metrics;
mod observe;
mod replay;
mod replication;
pub mod resolve;
pub mod settle;
mod target;
mod window;

use crate::plan::RunPlan;
use crate::results::RunResult;
use crate::runner::cache::Cache;
use crate::servers::ManagedServer;
use resolve::Resolved;
use target::Target;

pub use crate::runner::launch::start_managed;
pub use crate::system::progress::{RunOptions, note};

/// Measures one plan. A managed server lives exactly as long as this call.
pub fn run(plan: &RunPlan, opts: RunOptions, shutdown: &AtomicBool) -> Result<RunResult> {
    measure_resolved(plan, &Resolved::of(plan)?, None, None, opts, shutdown)
}

/// Starts the managed server `plan` asks for (none for an external target).
pub fn start_server(plan: &RunPlan, opts: RunOptions) -> Result<Option<ManagedServer>> {
    start_managed(&plan.target, &Resolved::of(plan)?, opts)
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
pub fn measure_with(
    plan: &RunPlan,
    server: Option<&ManagedServer>,
    cache: Option<ManagedServer>,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<RunResult> {
    measure_resolved(plan, &Resolved::of(plan)?, server, cache, opts, shutdown)
}

/// The steps of a run, in order: start what kvlab manages and the caller did
/// not start (`server`, `cache`: kvlab's, already running), reach the target,
/// open the cache, load the data, ready the cache, measure the window,
/// assemble. A server started here lives exactly as long as this call.
fn measure_resolved(
    plan: &RunPlan,
    rs: &Resolved,
    server: Option<&ManagedServer>,
    cache: Option<ManagedServer>,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<RunResult> {
    let [own_server, own_cache] =
        launch::start_missing(plan, rs, server.is_some(), cache.is_some(), opts)?;
    let (server, cache) = (server.or(own_server.as_ref()), cache.or(own_cache));
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let target = Target::reach(plan, rs, server, opts)?;
    let mut base = target.spec(rs)?;
    // Each phase draws its own keys: the settling, the window, the writer.
    let draws = crate::workload::draws::Draws::of(base.seed);
    let cache = match &plan.cache {
        Some(a) => Some(Cache::open(a, rs, opts, cache)?),
        None => None,
    };
    let load = dataset::prepare(&base, plan, server.is_some(), opts, shutdown)?;
    base.loaded_at = load.as_ref().map(|_| std::time::Instant::now());
    // After the load: a database's connections need kvlab's table.
    let transport = target.transport()?;
    base.connector = target.engine.clone();
    let settled = cache::ready(
        cache.as_ref(),
        &mut base,
        draws.settle.unwrap_or(draws.run),
        opts,
        shutdown,
    )?;
    base.seed = draws.window;
    if shutdown.load(Ordering::SeqCst) {
        bail!("interrupted before measuring; nothing was measured");
    }
    // Trace replay: the reader streams the trace while the workers connect.
    let feed = replay::start(plan, &base)?;
    base.trace = feed.clone();
    let w = window::measure(rs, &base, &target, cache.as_ref(), opts, shutdown)?;
    let finish = finish::Finish {
        rs,
        target: &target,
        cache: cache.as_ref(),
        obs: &w.obs,
        report: w.report,
        settled,
        draws,
    };
    let mut result = finish.result(finish::Around {
        started_unix_s,
        load,
        before: w.before,
        after: w.after,
        background: w.background,
        transport,
        feed,
    });
    if let Some((_, node)) = result.totals.hot_reads.as_mut() {
        *node = hot_node(&base);
    }
    Ok(result)
}

/// In a cluster, the node serving the first hot key of `spec`'s burst
/// (`--hot-keys`), as its slot map had it when the run began.
fn hot_node(spec: &crate::engine::Spec) -> Option<String> {
    let (hot, t) = (spec.hot_keys?, spec.topology.as_ref()?);
    let mut key = Vec::new();
    crate::workload::write_key(&spec.key_prefix, hot.first_key(spec.keys), &mut key);
    let slot = crate::driver::topology::hash_slot(&key);
    let node = t.nodes.get(usize::from(*t.slots.get(usize::from(slot))?))?;
    Some(format!("{node} (slot {slot})"))
}
