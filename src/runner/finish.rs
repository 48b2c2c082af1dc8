//! After the window: what kvlab sent each server against what the servers
//! counted, the cache's report, the background writer's, the pooler's, the
//! machine, the events, and each server's use — added to the assembled
//! [`RunResult`], one step each.

use std::sync::Arc;

use super::assemble::{self, assemble};
use super::cache::{self, Cache};
use super::events;
use super::observe::{Reporter, RunObserver};
use super::resolve::Resolved;
use super::target::Target;
use super::window::Counters;
use crate::driver::{LoadResult, PoolerCounters};
use crate::engine::EngineReport;
use crate::plan::RunPlan;
use crate::results::stats::Leg;
use crate::results::usage::{self, Role, ServerUse};
use crate::results::{AsideReport, BackgroundReport, CounterCheck, PoolerReport, RunResult};
use crate::transport::TransportInfo;
use crate::workload::trace::feed::Feed;

/// What a run has when its window ends.
pub(super) struct Finish<'a> {
    /// The plan, resolved.
    pub rs: &'a Resolved,
    /// The target, reached.
    pub target: &'a Target<'a>,
    /// The cache of a cache-aside run.
    pub cache: Option<&'a Cache>,
    /// The run's observer (samples, events, the cache's memory).
    pub obs: &'a RunObserver<'a>,
    /// What the engine measured.
    pub report: EngineReport,
    /// How a settling cache reached its steady state.
    pub settled: cache::Settled,
    /// The seeds the run drew from.
    pub draws: crate::workload::draws::Draws,
}

/// The servers' counters around the window, and what the run had beside.
pub(super) struct Around {
    /// Start of the run, Unix seconds.
    pub started_unix_s: u64,
    /// The data load, if any.
    pub load: Option<LoadResult>,
    /// Counters before the warm-up.
    pub before: Counters,
    /// Counters after the window.
    pub after: Counters,
    /// The background writer's report.
    pub background: Option<EngineReport>,
    /// How the connections reached the target.
    pub transport: TransportInfo,
    /// The trace a replay drove.
    pub feed: Option<Arc<Feed>>,
}

impl Finish<'_> {
    /// The run's result.
    pub fn result(self, a: Around) -> RunResult {
        let sent = self.sent_to_target(&a);
        let slack = self.slack();
        let server_counters = self.server_check(&a, sent, slack);
        let aside = self.aside_report(&a, slack);
        let background = a
            .background
            .as_ref()
            .map(|b| background_report(&self.rs.config, b));
        let replication = self.obs.replicas.as_ref().map(|w| {
            let read_from = self.rs.config.target.read_from.unwrap_or_default();
            w.report(
                &self.report,
                read_from.name(),
                (&a.before.each, &a.after.each),
            )
        });
        let pooler_counts = a.before.pooler.zip(a.after.pooler);
        let counters_note = match (&a.before.server, &a.after.server) {
            (Err(e), _) => Some(format!("no server counters to cross-check: {e}")),
            (Ok(_), Err(e)) => Some(format!(
                "no server counters to cross-check: reading them after the run failed: {e}"
            )),
            _ => None,
        };
        let Around {
            started_unix_s,
            load,
            transport,
            feed,
            ..
        } = a;
        let mut target = assemble::target_info(
            self.rs.config.target.kind,
            &self.target.info,
            &self.target.endpoint,
            self.target.server,
        );
        target.transport = Some(transport);
        let (plan, obs) = (&self.rs.config, self.obs);
        let mut result = assemble(
            self.rs,
            target,
            started_unix_s,
            load,
            self.report,
            obs,
            server_counters,
        );
        result.problems.extend(counters_note);
        result.draws = Some(crate::workload::draws::Draws {
            settle: self.settled.seed,
            background: background.as_ref().and(self.draws.background),
            ..self.draws
        });
        result.replication = replication;
        add_background(&mut result, background);
        add_machine(&mut result, self.rs);
        add_events(&mut result, obs);
        if self.rs.board.is_none() {
            result.consistency = None;
        }
        if let Some(aside) = aside {
            add_aside(&mut result, plan, aside);
        }
        if let Some(p) = self.target.pooler {
            let report = pooler_report(&result, p, sent, pooler_counts, obs, self.rs);
            if let Some(c) = report.counters.as_ref().filter(|c| !c.agrees()) {
                result.problems.push(format!(
                    "the pooler counted {} queries but kvlab sent {} requests and {} set-up round trips",
                    c.pooler.queries, c.kvlab_requests, c.set_up_queries
                ));
            }
            result.pooler = Some(report);
        }
        server_use(&mut result, plan.target.kind.is_sql(), obs);
        super::replay::finish(feed, plan, &mut result);
        cache::mark_timeline(&mut result.timeline, &obs.memory);
        result
    }

    /// What kvlab sent the target, GETs and SETs over warm-up and window (what
    /// the target's own counters should say).
    fn sent_to_target(&self, a: &Around) -> (u64, u64) {
        let r = &self.report;
        if self.cache.is_some() {
            // Only reads the cache missed and every write reach the database.
            let sent = |l: Leg| r.leg_requests[l as usize];
            return (sent(Leg::DbGet), sent(Leg::DbSet));
        }
        // A server that counts keys read (memcached's cmd_get) is given the
        // keys kvlab's GETs asked for; others a command per request.
        let per_key = a.after.server.as_ref().is_ok_and(|c| c.per_key);
        let c = &r.measured.counts;
        let gets = match per_key {
            true => r.warmup.keys_read() + c.keys_read(),
            false => r.warmup.gets + r.warmup.extra_commands + c.gets + c.extra_commands,
        };
        // Reads a near cache answered never reached the server.
        let gets = gets - r.near.as_ref().map_or(0, |n| n.hits_all);
        let bg_sets = a.background.as_ref().map_or(0, |b| b.measured.counts.sets);
        (gets, r.warmup.sets + c.sets + bg_sets)
    }

    /// What kvlab may have sent that a killed server did not count: what was
    /// in flight at the kill, and what it served between its counters'
    /// reading and the kill (twice the run's average rate over those gaps).
    fn slack(&self) -> u64 {
        let r = &self.report;
        let per_s = (r.leg_requests.iter().sum::<u64>() + r.measured.counts.requests()) as f64
            / r.window.as_secs_f64().max(1e-3);
        (self.rs.connections * self.rs.pipeline) as u64
            + (2.0 * per_s * self.obs.events.kill_gaps_s).ceil() as u64
    }

    /// The target's counters beside what kvlab sent it.
    fn server_check(&self, a: &Around, sent: (u64, u64), slack: u64) -> Option<CounterCheck> {
        let (before, after) = (a.before.server.clone().ok(), a.after.server.clone().ok());
        let kills = &self.obs.events.target_kills;
        events::counted_across(before, kills, after).map(|server| CounterCheck {
            server,
            kvlab_gets: sent.0,
            kvlab_sets: sent.1,
            exclusive: self.target.server.is_some(),
            // A merge of the clients' results takes the server's counters once.
            raw: self
                .rs
                .config
                .load
                .shard
                .zip(before)
                .zip(after)
                .map(|((_, b), a)| [b, a]),
            slack: slack * kills.len() as u64,
        })
    }

    /// The cache's report of a cache-aside run.
    fn aside_report(&self, a: &Around, slack: u64) -> Option<AsideReport> {
        let c = self.cache?;
        let (db_cpu_s, cache_cpu_s) = self.obs.cpu_deltas();
        // A server kvlab did not start: the CPU it reports of itself.
        let reported = |who| self.obs.reported(who).and_then(|r| r.cpu_s);
        let cache_cpu_s = cache_cpu_s.or_else(|| reported(Reporter::Cache));
        let db_cpu_s = db_cpu_s.or_else(|| reported(Reporter::Target));
        Some(c.report(
            &self.report,
            cache::CacheWindow {
                before: a.before.cache,
                kills: self.obs.events.cache_kills.clone(),
                slack,
                cache_cpu_s,
                db_cpu_s,
                memory: self.obs.memory.clone(),
                settled: self.settled.clone(),
                data_bytes: self.rs.value_bytes,
            },
        ))
    }
}

/// The background writer's figures.
fn background_report(plan: &RunPlan, b: &EngineReport) -> BackgroundReport {
    BackgroundReport {
        target_rps: plan.workload.background_writes.unwrap_or(0.0),
        writes: b.measured.counts.sets,
        errors: b.measured.counts.error_total(),
        rps: b.measured.counts.ok() as f64 / b.window.as_secs_f64().max(1e-9),
        latency_us: crate::results::stats::Percentiles::of(&b.measured.latency),
    }
}

/// The background writer's report, and its errors as a problem.
fn add_background(result: &mut RunResult, background: Option<BackgroundReport>) {
    if let Some(b) = background.as_ref().filter(|b| b.errors > 0) {
        let p = format!("the background writer had {} errors", b.errors);
        result.problems.push(p);
    }
    result.background = background;
}

/// The machine, what about it makes the figures suspect, and whether client
/// and server shared its cores.
fn add_machine(result: &mut RunResult, rs: &Resolved) {
    let machine = super::machine::this();
    result.host.suspect = machine.suspicions(rs.value_bytes);
    result.host.machine = Some(machine);
    result.host.shared_cores = match &rs.config.target.external {
        None => Some(true),
        Some(e) if e.is_loopback() => Some(true),
        Some(_) => None,
    };
}

/// What the events did, and those that failed as problems.
fn add_events(result: &mut RunResult, obs: &RunObserver) {
    obs.events.report(result);
    let failed: Vec<String> = result
        .events
        .iter()
        .filter_map(|e| Some(format!("event {} failed: {}", e.event, e.error.as_deref()?)))
        .collect();
    result.problems.extend(failed);
}

/// The cache's report, with what makes it not the cache's: an outage nobody
/// asked for, counters that disagree.
fn add_aside(result: &mut RunResult, plan: &RunPlan, mut a: AsideReport) {
    if a.write_policy == crate::workload::params::WritePolicy::Invalidate.name() {
        a.hit_ratio_ceiling = result.totals.hit_ratio_ceiling();
    }
    if a.cache_bypassed > 0 && plan.load.events.is_empty() {
        // An outage nobody asked for: these figures are not the cache's.
        result.valid = false;
        result.problems.push(format!(
            "the cache was unreachable during the run: {} reads went around it to the database",
            a.cache_bypassed
        ));
    }
    if let Some(cc) = a
        .cache_counters
        .as_ref()
        .filter(|c| c.exclusive && !c.agrees())
    {
        result.problems.push(format!(
            "the cache counted GET {} / SET {} but kvlab sent GET {} / SET {}",
            cc.server.gets, cc.server.sets, cc.kvlab_gets, cc.kvlab_sets
        ));
    }
    if let Some(w) = a.working_set.as_ref() {
        if w.steady == Some(crate::results::aside::Steady::NotReached) {
            result.problems.push(
                "the cache did not reach its steady state before the window (full, turned over, evicting, its hit ratio still): its hit ratio is not a production cache's".to_string(),
            );
        }
        if w.steady == Some(crate::results::aside::Steady::FilledByKvlab) && w.evictions == 0 {
            result.problems.push(
                "the cache evicted nothing in the window although it was full before it: its hit ratio may not be its steady state's".to_string(),
            );
        }
    }
    result.cache_aside = Some(a);
}

/// The pooler's report: its counters (before, after) beside what reached the database (every
/// request, or the cache's misses and the writes in cache-aside) and the
/// set-up round trips of the connections opened; its CPU and memory.
fn pooler_report(
    result: &RunResult,
    p: &crate::servers::ManagedPooler,
    sent: (u64, u64),
    counts: Option<(PoolerCounters, PoolerCounters)>,
    obs: &RunObserver,
    rs: &Resolved,
) -> PoolerReport {
    let c = &result.connections;
    let opened = c.established as u64 + c.reconnects + c.renewed;
    let counters = counts.map(|(b, after)| crate::results::PoolerCounterCheck {
        pooler: after.since(&b),
        kvlab_requests: sent.0 + sent.1,
        set_up_queries: opened * rs.set_up_round_trips,
        exact: rs.pipeline == 1,
    });
    let used = obs.pooler_use();
    let cpu = used.map(|u| u.0);
    PoolerReport {
        name: p.pooler().name().to_string(),
        version: p.version.clone(),
        settings: p.settings.clone(),
        pid: p.pid(),
        pooler_cpu_s: cpu,
        pooler_cpu_us_per_request: cpu
            .filter(|_| result.totals.requests > 0)
            .map(|c| c * 1e6 / result.totals.requests as f64),
        pooler_peak_rss_kb: obs.peak_kb.pooler.or(used.map(|u| u.1)),
        counters,
    }
}

/// Each server's CPU and memory by role, and their sums as the run's server
/// figures: the database (or the target, in the role its product plays), the
/// cache of a cache-aside run, the pooler. `target_is_db`: the target is a
/// database product.
fn server_use(result: &mut RunResult, target_is_db: bool, obs: &RunObserver) {
    let n = result.totals.requests;
    let role = match target_is_db || result.cache_aside.is_some() {
        true => Role::Database,
        false => Role::Cache,
    };
    // A server kvlab did not start: its figures as it reports them.
    let rss_source = |who| {
        let r = obs.reported(who)?;
        r.peak_rss_kb.and(r.report.memory)
    };
    let target_cpu = result.server.server_cpu_source.as_deref();
    let mut servers = vec![
        ServerUse::new(
            role,
            &result.target.product,
            result.server.server_cpu_s,
            result.server.server_peak_rss_kb,
            n,
        )
        .reported(
            target_cpu.filter(|s| *s != "proc"),
            rss_source(Reporter::Target),
        ),
    ];
    if let Some(a) = &result.cache_aside {
        let reported = obs.reported(Reporter::Cache);
        let cpu_source = reported
            .filter(|r| obs.cpu_deltas().1.is_none() && r.cpu_s.is_some())
            .map(|r| r.report.cpu);
        // Its peak while it ran, also when an event killed it.
        let peak = obs.peak_kb.cache.or(reported.and_then(|r| r.peak_rss_kb));
        servers.push(
            ServerUse::new(Role::Cache, &a.cache.product, a.cache_cpu_s, peak, n)
                .reported(cpu_source, rss_source(Reporter::Cache)),
        );
    }
    if let Some(p) = &result.pooler {
        servers.push(ServerUse::new(
            Role::Pooler,
            &p.name,
            p.pooler_cpu_s,
            p.pooler_peak_rss_kb,
            n,
        ));
    }
    let s = &mut result.server;
    if servers.len() > 1 {
        s.server_cpu_s = usage::total_cpu_s(&servers);
        s.server_cpu_us_per_request = s
            .server_cpu_s
            .map(|c| if n > 0 { c * 1e6 / n as f64 } else { 0.0 });
        s.server_peak_rss_kb = usage::total_peak_rss_kb(&servers);
    }
    s.servers = servers;
}
