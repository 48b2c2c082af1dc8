//! One run from plan to result: start (or reach) the target, load the data,
//! run the engine while sampling client and server resources, cross-check the
//! server's counters, and assemble the [`RunResult`].
//!
//! # Layout
//! - `observe`: samples of client and server resources at the window's edges.
//! - `assemble`: the result and its problems.
//! - `replay`: the trace reader of a replay and its report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};

mod assemble;
pub mod cache;
pub mod dataset;
mod events;
pub mod launch;
pub mod machine;
mod observe;
mod replay;

use crate::driver::table::TABLE;
use crate::driver::{Connector, Role};
use crate::engine::{self, Spec};
use crate::plan::RunPlan;
use crate::plan::shard::Share;
use crate::results::stats::Leg;
use crate::results::{CounterCheck, RunResult};
use crate::runner::cache::Cache;
use crate::runner::launch::{kvlab_sockets, room_for_sockets};
use crate::servers::ManagedServer;
use crate::system::progress::Progress;
use crate::workload::OpMix;
use assemble::assemble;
use observe::RunObserver;

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
pub fn measure_with(
    plan: &RunPlan,
    server: Option<&ManagedServer>,
    cache_server: Option<ManagedServer>,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<RunResult> {
    let kind = plan.target.kind;
    let product = kind.product();
    product.check_prefix(&plan.workload.key_prefix)?;
    room_for_sockets(kvlab_sockets(plan, server))?;
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let endpoint = match (&plan.target.external, server) {
        (Some(e), _) => e.clone(),
        (None, Some(s)) => s.endpoint(),
        (None, None) => unreachable!("a managed target has a server"),
    };
    let query_mode = plan.target.query_mode_used();
    let connector = Connector::new(kind, &endpoint)?
        .with_consistency(plan.target.consistency.clone())
        .with_query_mode(query_mode.clone());
    // Requests go through the pooler in front, if any; set-up and the
    // server's counters go to the server itself.
    let pooler = server.and_then(ManagedServer::pooler);
    let engine_connector = match pooler {
        Some(p) => Connector::new(kind, &p.endpoint())?
            .with_consistency(plan.target.consistency.clone())
            .with_query_mode(query_mode.clone()),
        None => connector.clone(),
    };
    let info = match server {
        Some(s) => s.info.clone(),
        None => {
            let info = connector.probe(Duration::from_secs(4))?;
            note(
                opts,
                match product.role() {
                    Role::Cache(_) => format!(
                        "kvlab: {} is {} {}; kvlab writes only keys under the prefix '{}' and never flushes a server it did not start",
                        connector.display, info.product, info.version, plan.workload.key_prefix
                    ),
                    Role::Database(_) => format!(
                        "kvlab: {} is {} {}; kvlab writes only its own table {TABLE} and never drops or empties anything it did not create",
                        connector.display, info.product, info.version
                    ),
                },
            );
            info
        }
    };

    let values = plan.workload.values();
    let topology = match product.facts().sharded {
        true => connector.topology()?.map(std::sync::Arc::new),
        false => None,
    };
    let cache = match &plan.cache {
        Some(a) => Some(Cache::open(a, plan, opts, cache_server)?),
        None => None,
    };
    let (board, board_note) = version_board(plan);
    let shard = plan.load.shard;
    let total_conns = plan.load.connections;
    let mut base = Spec {
        connector: connector.clone(),
        key_prefix: plan.workload.key_prefix.as_bytes().to_vec(),
        values,
        keys: plan.workload.keys,
        distribution: plan.workload.distribution,
        mix: OpMix::new(plan.workload.ratio),
        connections: crate::plan::shard::local_connections(shard, total_conns),
        threads: plan.load.threads,
        // Some protocols answer one command at a time on a connection.
        pipeline: if product.facts().pipelines {
            plan.load.pipeline.min(product.facts().max_pipeline)
        } else {
            1
        },
        warmup: Duration::from_secs_f64(plan.load.warmup_s),
        stop: plan.load.stop,
        rate: plan.load.rate,
        timeout: Duration::from_secs_f64(plan.load.timeout_s),
        seed: shard.map_or(plan.workload.seed, |s| s.seed(plan.workload.seed)),
        ttl_s: plan.workload.ttl_s,
        batch: plan.workload.batch.clone(),
        loaded_at: None,
        board: None,
        aside: None,
        topology,
        share: shard.map_or(Share::all(total_conns), |s| s.connections(total_conns)),
        start_at: plan.load.start_at_ms.map(crate::plan::shard::instant_of),
        trace: None,
        timeline_seconds: plan.load.timeline_seconds,
    };

    let load = crate::runner::dataset::prepare(&base, plan, server.is_some(), opts, shutdown)?;
    base.loaded_at = load.as_ref().map(|_| std::time::Instant::now());
    // After the load: a database's connections need kvlab's table.
    let transport = engine_connector
        .transport_info(Duration::from_secs(5))
        .map_err(|e| engine_connector.connect_error(e))?;
    base.board = board;
    base.connector = engine_connector;
    let mut settled = (None, Vec::new());
    if let Some(c) = &cache {
        c.prepare(&base, opts, shutdown)?;
        base.aside = Some(c.spec());
        if c.start() == crate::plan::CacheStart::Settle {
            settled = c.settle(&base, opts, shutdown)?;
        }
    }
    if shutdown.load(Ordering::SeqCst) {
        bail!("interrupted before measuring; nothing was measured");
    }
    let cache_before = cache.as_ref().and_then(|c| c.counters());

    let pooler_before = pooler.and_then(|p| p.counters().ok());
    let before = connector.counters();
    let counters_note = before
        .as_ref()
        .err()
        .map(|e| format!("no server counters to cross-check: {e:#}"));
    let before = before.ok();
    let server_managed = server.is_some();
    let mut obs = RunObserver {
        progress: Progress::spinner("run", opts.progress),
        server,
        cache: cache.as_ref().and_then(|c| c.server.as_ref()),
        reporting: (server.is_none() && product.facts().usage_report.is_some())
            .then_some(&connector),
        peak_kb: Default::default(),
        at_start: None,
        at_end: None,
        warmup: base.warmup,
        events: events::Events::new(
            plan.load.events.clone(),
            server.map(|server| events::Subject {
                server,
                connector: &connector,
            }),
            cache.as_ref().and_then(|c| {
                c.server.as_ref().map(|server| events::Subject {
                    server,
                    connector: &c.connector,
                })
            }),
        ),
        cache_memory: cache
            .as_ref()
            .and_then(|c| match c.connector.product.role() {
                Role::Cache(m) => Some((m, &c.connector)),
                Role::Database(_) => None,
            }),
        memory: Vec::new(),
        metrics: crate::metrics::installed().map(|m| {
            let target = crate::results::architecture_name(
                product.name(),
                plan.cache.as_ref().map(|c| c.cache.kind.product().name()),
                plan.target.pooler.as_deref(),
            );
            m.begin(&target, product.name(), plan.load.rate)
        }),
    };
    // Trace replay: the reader streams the trace while the workers connect.
    let feed = replay::start(plan, &base)?;
    base.trace = feed.clone();
    // A separate writer at a fixed rate beside the measured load, reported apart.
    let bg_stop = AtomicBool::new(false);
    let (report, background) = std::thread::scope(|scope| -> Result<_> {
        let bg = plan.workload.background_writes.map(|rate| {
            let spec = Spec {
                mix: OpMix::new(crate::workload::Ratio { set: 1, get: 0 }),
                connections: 1,
                threads: 1,
                pipeline: 1,
                warmup: Duration::ZERO,
                stop: crate::workload::Stop::Duration(1e9),
                // Each client of a sharded run writes its part of the rate.
                rate: Some(rate / shard.map_or(1.0, |s| s.count as f64)),
                seed: base.seed ^ 0xb6,
                share: Share::all(1),
                // With a start instant, the writer begins with the measured
                // phase (every client's data is loaded by then).
                start_at: base.start_at,
                trace: None,
                ..base.clone()
            };
            let stop = &bg_stop;
            scope.spawn(move || crate::engine::execute(&spec, stop, &mut engine::Quiet))
        });
        let main = crate::engine::execute(&base, shutdown, &mut obs);
        bg_stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let bg = match bg {
            Some(h) => Some(
                h.join()
                    .map_err(|_| anyhow::anyhow!("the background writer panicked"))??,
            ),
            None => None,
        };
        Ok((main?, bg))
    })?;
    obs.progress.finish();
    let after = connector.counters().ok();
    let pooler_after = pooler.and_then(|p| p.counters().ok());
    let bg_sets = background.as_ref().map_or(0, |b| b.measured.counts.sets);
    let (kvlab_gets, kvlab_sets) = if cache.is_some() {
        // Only reads the cache missed and every write reach the database.
        let sent = |l: Leg| report.leg_requests[l as usize];
        (sent(Leg::DbGet), sent(Leg::DbSet))
    } else {
        // A server that counts keys read (memcached's cmd_get) is given the
        // keys kvlab's GETs asked for; others a command per request.
        let per_key = after.is_some_and(|a| a.per_key);
        (
            match per_key {
                true => report.warmup.keys_read() + report.measured.counts.keys_read(),
                false => {
                    let c = &report.measured.counts;
                    report.warmup.gets + report.warmup.extra_commands + c.gets + c.extra_commands
                }
            },
            report.warmup.sets + report.measured.counts.sets + bg_sets,
        )
    };
    // What kvlab may have sent that a killed server did not count: what was in
    // flight at the kill, and what it served between its counters reading and
    // the kill (twice the run's average rate over those gaps).
    let per_s = (report.leg_requests.iter().sum::<u64>() + report.measured.counts.requests())
        as f64
        / report.window.as_secs_f64().max(1e-3);
    let slack = (base.connections * base.pipeline) as u64
        + (2.0 * per_s * obs.events.kill_gaps_s).ceil() as u64;
    let server_counters =
        events::counted_across(before, &obs.events.target_kills, after).map(|server| {
            CounterCheck {
                server,
                kvlab_gets,
                kvlab_sets,
                exclusive: server_managed,
                // A merge of the clients' results takes the server's counters once.
                raw: shard.zip(before).zip(after).map(|((_, b), a)| [b, a]),
                slack: slack * obs.events.target_kills.len() as u64,
            }
        });
    let aside = cache.as_ref().map(|c| {
        let (db_cpu_s, cache_cpu_s) = obs.cpu_deltas();
        c.report(
            &report,
            cache::CacheWindow {
                before: cache_before,
                kills: obs.events.cache_kills.clone(),
                slack,
                cache_cpu_s,
                db_cpu_s,
                memory: obs.memory.clone(),
                settled: settled.clone(),
                data_bytes: plan
                    .workload
                    .keys
                    .saturating_mul(plan.workload.value_size as u64),
            },
        )
    });
    let background = background.map(|b| crate::results::BackgroundReport {
        target_rps: plan.workload.background_writes.unwrap_or(0.0),
        writes: b.measured.counts.sets,
        errors: b.measured.counts.error_total(),
        rps: b.measured.counts.ok() as f64 / b.window.as_secs_f64().max(1e-9),
        latency_us: crate::results::stats::Percentiles::of(&b.measured.latency),
    });

    let mut target = assemble::target_info(kind, &info, &endpoint, server);
    target.transport = Some(transport);
    let mut result = assemble(
        plan,
        target,
        started_unix_s,
        load,
        report,
        &obs,
        server_counters,
    );
    result.problems.extend(counters_note);
    if let Some(b) = &background
        && b.errors > 0
    {
        result
            .problems
            .push(format!("the background writer had {} errors", b.errors));
    }
    result.background = background;
    replay::finish(feed, plan, &mut result);
    let machine = machine::this();
    let data_bytes = plan
        .workload
        .keys
        .saturating_mul(plan.workload.value_size as u64);
    result.suspect = machine.suspicions(data_bytes);
    result.machine = Some(machine);
    result.shared_cores = match &plan.target.external {
        None => Some(true),
        Some(e) if e.is_loopback() => Some(true),
        Some(_) => None,
    };
    cache::mark_timeline(&mut result.timeline, &obs.memory);
    obs.events.report(&mut result);
    for e in result.events.iter().filter(|e| e.error.is_some()) {
        result.problems.push(format!(
            "event {} failed: {}",
            e.event,
            e.error.as_deref().unwrap_or_default()
        ));
    }
    result.problems.extend(board_note);
    if base.board.is_none() {
        result.consistency = None;
    }
    if let Some(a) = aside {
        if a.cache_bypassed > 0 && plan.load.events.is_empty() {
            // An outage nobody asked for: these figures are not the cache's.
            result.valid = false;
            result.problems.push(format!(
                "the cache was unreachable during the run: {} reads went around it to the database",
                a.cache_bypassed
            ));
        }
        if let Some(cc) = &a.cache_counters
            && cc.exclusive
            && !cc.agrees()
        {
            result.problems.push(format!(
                "the cache counted GET {} / SET {} but kvlab sent GET {} / SET {}",
                cc.server.gets, cc.server.sets, cc.kvlab_gets, cc.kvlab_sets
            ));
        }
        result.cache_aside = Some(a);
    }
    if let Some(p) = pooler {
        // What reached the database: every request, or the cache's misses and
        // the writes in cache-aside; its CPU joins the database's.
        let sent = kvlab_gets + kvlab_sets;
        let opened = result.connections.established as u64 + result.connections.reconnects;
        let counters =
            pooler_before
                .zip(pooler_after)
                .map(|(b, a)| crate::results::PoolerCounterCheck {
                    pooler: a.since(&b),
                    kvlab_requests: sent,
                    set_up_queries: opened * product.set_up_round_trips(query_mode.as_deref()),
                    exact: base.pipeline == 1,
                });
        if let Some(c) = counters.as_ref().filter(|c| !c.agrees()) {
            result.problems.push(format!(
                "the pooler counted {} queries but kvlab sent {} requests and {} set-up round trips",
                c.pooler.queries, c.kvlab_requests, c.set_up_queries
            ));
        }
        let used = obs.pooler_use();
        let cpu = used.map(|u| u.0);
        result.pooler = Some(crate::results::PoolerReport {
            name: p.pooler().name().to_string(),
            version: p.version.clone(),
            settings: p.settings.clone(),
            pid: p.pid(),
            pooler_cpu_s: cpu,
            pooler_cpu_us_per_request: cpu
                .filter(|_| result.requests > 0)
                .map(|c| c * 1e6 / result.requests as f64),
            pooler_peak_rss_kb: obs.peak_kb.pooler.or(used.map(|u| u.1)),
            counters,
        });
    }
    assemble::server_use(&mut result, kind.is_sql(), &obs);
    drop(cache);
    Ok(result)
}

/// The version board of a run that writes, or why stale reads are not measured.
fn version_board(
    plan: &RunPlan,
) -> (
    Option<std::sync::Arc<crate::workload::consistency::VersionBoard>>,
    Option<String>,
) {
    use crate::workload::consistency::VersionBoard;
    let writes = plan.workload.ratio.set > 0 || plan.workload.background_writes.is_some();
    if !writes {
        return (None, None);
    }
    if plan.load.shard.is_some() {
        return (
            None,
            Some("stale reads were not measured: the clients of a sharded run do not share the versions they write".into()),
        );
    }
    if !plan.workload.values().versioned() {
        return (
            None,
            Some(format!(
                "stale reads were not measured: values under {} bytes cannot carry a version",
                crate::workload::VERSIONED_SIZE
            )),
        );
    }
    if VersionBoard::bytes_for(plan.workload.keys) > 2 << 30 {
        return (
            None,
            Some("stale reads were not measured: tracking versions of this many keys would take over 2 GiB".into()),
        );
    }
    (
        Some(std::sync::Arc::new(VersionBoard::new(plan.workload.keys))),
        None,
    )
}
