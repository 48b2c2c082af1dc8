//! The result of one run, assembled from what the engine measured, the
//! resource samples and the server's counters; with the problems that make a
//! run invalid or worth a caveat.

mod load;

use super::observe::{Reporter, RunObserver, self_peak_rss_kb};
use super::resolve::Resolved;
use crate::driver::LoadResult;
use crate::engine::EngineReport;
use crate::plan::shard::unix_ms;
use crate::results::stats::{Counts, ErrorKind, Percentiles, encode_histogram};
use crate::results::{
    ClientUse, ConnectionReport, CounterCheck, Histograms, Host, Latency, ReportedMemory,
    RunResult, ServerFigures, StartKept, TargetInfo, Totals, Window,
};
use load::Load;

/// The result of one run: its server CPU, its problems, its schedule kept
/// or not, whether it is valid, then every figure in its place.
pub(super) fn assemble(
    rs: &Resolved,
    target: TargetInfo,
    started_unix_s: u64,
    load: Option<LoadResult>,
    r: EngineReport,
    obs: &RunObserver,
    server_counters: Option<CounterCheck>,
) -> RunResult {
    let c = r.measured.counts;
    let window = r.window.as_secs_f64().max(1e-9);
    let client_cpu_s = obs
        .at_start
        .zip(obs.at_end)
        .map_or(0.0, |(a, b)| (b.client_cpu_s - a.client_cpu_s).max(0.0));
    let cpu = ServerCpu::of(obs, c.requests());
    let mut problems = problems(rs, &r, &cpu, server_counters.as_ref());
    let host_load = obs.host_load();
    let mut schedule = r.schedule.clone();
    if let Some(sc) = schedule.as_mut() {
        let load = Load {
            // A shaped rate offers its mean over the window.
            offered: sc.target_rps
                * rs.local_share
                * sc.rate_shape.map_or(1.0, |s| s.mean(0.0, window)),
            // With events the errors are the measurement: the rate is
            // carried when the requests went out and came back, failed or not.
            achieved: match rs.config.load.events.is_empty() {
                true => c.ok(),
                false => c.requests(),
            } as f64
                / window,
            backlog: sc.unsent,
            window,
            client_busy: r.client_busy,
            client_cores: client_cpu_s / window,
            server_cores: cpu.cpu_s.map(|s| s / window),
            host_busy: host_load
                .as_ref()
                .and_then(crate::results::host_load::busy_by_kvlab),
        };
        sc.not_sustained = load.shortfall();
        problems.extend(sc.not_sustained.clone());
    }
    let valid = valid(rs, &c, schedule.as_ref());
    let parts = Parts {
        target,
        started_unix_s,
        load,
        server_counters,
        problems,
        valid,
        schedule,
        client_cpu_s,
        cpu,
        host_load,
    };
    parts.result(rs, r, obs)
}

/// The server's CPU over the window: from /proc for a server kvlab started,
/// else as the server reports it; and the memory it reports.
struct ServerCpu {
    /// CPU seconds (`None`: not known).
    cpu_s: Option<f64>,
    /// Where they come from: `proc`, or the server's own report.
    source: Option<String>,
    /// The memory a server kvlab did not start reports, and from where.
    memory: Option<(u64, &'static str)>,
    /// The peak resident memory (KiB) of a server kvlab did not start, the
    /// largest it reported, where it reports its resident memory.
    reported_peak_kb: Option<u64>,
    /// A managed server's process tree changed between samples.
    unknown: bool,
}

impl ServerCpu {
    fn of(obs: &RunObserver, requests: u64) -> ServerCpu {
        let sampled = obs
            .at_start
            .zip(obs.at_end)
            .and_then(|(a, b)| Some((a.server?, b.server?)));
        // A process tree's total can fall between samples when processes that
        // were counted leave it unreaped; then the figure is unknown, not zero.
        let proc = sampled
            .map(|(a, b)| b.cpu_s - a.cpu_s)
            .filter(|d| *d > 0.0 || requests == 0);
        // A server kvlab did not start: what it reports of itself, if anything.
        let reported = obs.reported(Reporter::Target);
        let (cpu_s, source) = match (proc, reported) {
            (Some(s), _) => (Some(s), Some("proc".to_string())),
            (None, Some(r)) => (r.cpu_s, r.cpu_s.map(|_| r.report.cpu.to_string())),
            _ => (None, None),
        };
        ServerCpu {
            cpu_s,
            source,
            memory: reported.and_then(|r| r.memory_end.zip(r.report.memory)),
            reported_peak_kb: reported.and_then(|r| r.peak_rss_kb),
            unknown: sampled.is_some() && proc.is_none(),
        }
    }

    /// The server's figures: its CPU, per request by `per_req`; its peak
    /// memory from /proc where kvlab sampled it, else as it reports it.
    fn figures(self, obs: &RunObserver, per_req: impl Fn(f64) -> f64) -> ServerFigures {
        ServerFigures {
            server_cpu_s: self.cpu_s,
            server_cpu_us_per_request: self.cpu_s.map(per_req),
            server_peak_rss_kb: obs
                .at_end
                .and_then(|e| e.server)
                .and(obs.peak_kb.server)
                .or(self.reported_peak_kb),
            servers: Vec::new(),
            server_cpu_source: self.source,
            server_reported_memory: self.memory.map(|(bytes, what)| ReportedMemory {
                bytes,
                source: what.to_string(),
            }),
        }
    }
}

/// What makes the run's figures not what they seem, one line each.
fn problems(
    rs: &Resolved,
    r: &EngineReport,
    cpu: &ServerCpu,
    server_counters: Option<&CounterCheck>,
) -> Vec<String> {
    let mut problems = Vec::new();
    if cpu.unknown {
        problems.push("the server's CPU could not be measured for this run (its process tree changed between samples)".to_string());
    }
    problems.extend(rs.problems.iter().cloned());
    problems.extend(outcome_problems(rs, r));
    if let Some(cc) = server_counters.filter(|cc| cc.exclusive && !cc.agrees()) {
        problems.push(format!(
            "the server counted GET {} / SET {} but kvlab sent GET {} / SET {}",
            cc.server.gets, cc.server.sets, cc.kvlab_gets, cc.kvlab_sets
        ));
    }
    if r.client_busy.is_some_and(|b| b >= 0.9) {
        problems.push(format!(
            "kvlab's threads never waited for the server (running or waiting for a CPU {:.0}% of the time): the figures are limited by the client or by CPU contention on this machine, not by the server; give kvlab more cores or threads",
            r.client_busy.unwrap_or(0.0) * 100.0
        ));
    }
    problems
}

/// Failed requests, misses where every key was loaded, a window with no
/// request, fewer requests than asked for. With events (a server killed),
/// errors and misses are what the run measures: the summary's event lines and
/// the timeline give them; keys given a TTL miss once it runs out.
fn outcome_problems(rs: &Resolved, r: &EngineReport) -> Vec<String> {
    let c = r.measured.counts;
    let events = !rs.config.load.events.is_empty();
    let expiring = rs.config.workload.ttl_s > 0;
    let mut problems = Vec::new();
    if c.error_total() > 0 && !events {
        problems.push(format!(
            "{} of {} requests failed ({})",
            c.error_total(),
            c.requests(),
            error_kinds(&c)
        ));
    }
    if rs.config.workload.load && c.misses > 0 && !events && !expiring {
        problems.push(format!(
            "{} GETs missed although every key was loaded ({}evictions or another client?)",
            c.misses,
            match rs.config.load.shard.is_some() {
                true => "a client of this sharded run that did not load its slice, ",
                false => "",
            }
        ));
    }
    if !rs.config.workload.load && c.gets > 0 && c.misses * 2 > c.keys_read() {
        problems.push(format!(
            "{:.0}% of GETs missed (--no-load): kvlab's keys are not there (a run without --no-load loads them, and with --keep-data leaves them for the --no-load runs after it); the figures describe misses, not cache hits",
            c.misses as f64 * 100.0 / c.keys_read() as f64
        ));
    }
    if c.requests() == 0 {
        // Why, where the run knows: what ended the warm-up's requests, or
        // the connections the server refused.
        let w = &r.warmup;
        let why = match (w.error_total(), &r.last_connect_error) {
            (0, None) => String::new(),
            (0, Some(e)) => format!(
                " ({} of {} connections open; the last connection error: {e})",
                r.established, rs.config.load.connections
            ),
            (n, _) => format!(
                " (the warm-up's requests failed before it: {n} of {}, {})",
                w.requests(),
                error_kinds(w)
            ),
        };
        problems.push(format!("no request finished in the measured window{why}"));
    }
    problems.extend(short_of_requests(rs, r));
    problems
}

/// The kinds of `c`'s errors with their counts (`protocol 2, timeout 1`).
fn error_kinds(c: &Counts) -> String {
    let kinds: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|k| c.error(**k) > 0)
        .map(|k| format!("{} {}", k.name(), c.error(*k)))
        .collect();
    kinds.join(", ")
}

/// A `--requests` run that made fewer than its share of the requests.
fn short_of_requests(rs: &Resolved, r: &EngineReport) -> Option<String> {
    let n = rs.requests_due?;
    let made = r.measured.counts.requests();
    (made < n && !r.interrupted).then(|| format!(
        "made {made} of the {n} requests asked for: {} of {} connections were open at the start ({}), and a connection the server refused or kept dropping makes none of its share",
        r.established,
        rs.config.load.connections,
        r.last_connect_error.as_deref().unwrap_or("no connection error recorded")
    ))
}

/// Whether the figures are a measurement: a run full of misses measured the
/// wrong thing, nor is an open loop that did not carry its rate one. Errors
/// are what a run with events (a server killed) measures: counted and shown,
/// not disqualifying.
fn valid(rs: &Resolved, c: &Counts, schedule: Option<&crate::results::ScheduleReport>) -> bool {
    let events = !rs.config.load.events.is_empty();
    let expiring = rs.config.workload.ttl_s > 0;
    let mostly_misses = c.gets > 0 && c.misses * 2 > c.keys_read();
    (c.error_total() == 0 || events)
        && c.requests() > 0
        && (!mostly_misses || events || expiring)
        && schedule.is_none_or(|s| s.not_sustained.is_none())
}

/// What [`assemble`] worked out, before it is laid into a [`RunResult`].
struct Parts {
    target: TargetInfo,
    started_unix_s: u64,
    load: Option<LoadResult>,
    server_counters: Option<CounterCheck>,
    problems: Vec<String>,
    valid: bool,
    schedule: Option<crate::results::ScheduleReport>,
    client_cpu_s: f64,
    cpu: ServerCpu,
    /// The host's load over the window (read once, at its edges).
    host_load: Option<crate::results::host_load::HostLoad>,
}

impl Parts {
    /// Every figure in its place (a table of data: one line a field).
    fn result(self, rs: &Resolved, r: EngineReport, obs: &RunObserver) -> RunResult {
        let c = r.measured.counts;
        let window = r.window.as_secs_f64().max(1e-9);
        let per_req = |cpu: f64| match c.requests() {
            0 => 0.0,
            n => cpu * 1e6 / n as f64,
        };
        let paced = rs.config.load.rate.is_some();
        RunResult {
            schema_version: crate::results::SCHEMA_VERSION,
            kvlab_version: env!("CARGO_PKG_VERSION").to_string(),
            started_unix_s: self.started_unix_s,
            config: rs.config.clone(),
            target: self.target,
            valid: self.valid,
            problems: self.problems,
            interrupted: r.interrupted,
            totals: totals(rs, &c, window),
            latency: Latency {
                latency_start: if paced { "intended" } else { "actual" }.to_string(),
                latency_us: Percentiles::of(&r.measured.latency),
                service_time_us: paced.then(|| Percentiles::of(&r.measured.service)),
                schedule: self.schedule,
            },
            client: client_use(self.client_cpu_s, per_req(self.client_cpu_s), &r),
            server: self.cpu.figures(obs, per_req),
            load: self.load,
            warmup: r.warmup,
            connections: connections(rs, &r),
            server_counters: self.server_counters,
            timeline: timeline(rs, r.timeline),
            background: None,
            events: Vec::new(),
            host: Host {
                host_load: self.host_load,
                ..Host::default()
            },
            replay: None,
            consistency: rs.writes_versioned.then(|| consistency_report(&r.measured)),
            cache_aside: None,
            replication: None,
            near_cache: r.near.as_ref().map(near_report),
            query_mode: rs.query_mode.map(|m| m.to_string()),
            profile: rs.profile.clone(),
            pooler: None,
            shard: rs.config.load.shard,
            clients: Vec::new(),
            draws: None,
            cleanup: Vec::new(),
            histograms: Histograms {
                histogram: encode_histogram(&r.measured.latency),
                service_histogram: paced.then(|| encode_histogram(&r.measured.service)),
            },
            // When the window was, on the wall clock.
            window: Some(Window {
                start_unix_ms: unix_ms(r.window_start),
                end_unix_ms: unix_ms(r.window_start + r.window),
            }),
            start: rs
                .config
                .load
                .start_at_ms
                .zip(r.start)
                .map(|(at, s)| StartKept {
                    at_unix_ms: at,
                    late_ms: s.late.as_secs_f64() * 1e3,
                    margin_ms: s.margin.as_secs_f64() * 1e3,
                }),
        }
    }
}

/// What the window counted, `c`, over its `window` seconds; the expired
/// misses where kvlab can tell them, the reads after a read where versions
/// were tracked.
fn totals(rs: &Resolved, c: &Counts, window: f64) -> Totals {
    let expiring = rs.config.workload.ttl_s > 0;
    Totals {
        duration_s: window,
        throughput_rps: c.ok() as f64 / window,
        requests: c.requests(),
        gets: c.gets,
        sets: c.sets,
        hits: c.hits,
        misses: c.misses,
        keys_read: rs.config.workload.batch.is_some().then_some(c.keys_read()),
        errors: c.error_total(),
        errors_by_kind: ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), c.error(*k)))
            .collect(),
        value_bytes: c.value_bytes,
        // Known from the load (a run that only reads) or the versions board.
        expired_misses: (expiring
            && (rs.config.workload.ratio.set == 0
                || (rs.writes_versioned && rs.config.load.shard.is_none())))
        .then_some(c.expired),
        reads_after_read: rs.board.is_some().then_some(c.after_read),
        hot_reads: rs.config.load.hot_keys.map(|_| (c.hot_reads, None)),
    }
}

/// The run's connections: asked for, open at the start, failures, reconnects,
/// and a sharded target's redirects.
fn connections(rs: &Resolved, r: &EngineReport) -> ConnectionReport {
    ConnectionReport {
        requested: rs.config.load.connections,
        established: r.established,
        failures: r.connect_failures,
        reconnects: r.reconnects,
        renewed: r.churned[0],
        renewed_in_window: r.churned[1],
        last_error: r.last_connect_error.clone(),
        sharded: r.nodes.map(|nodes| crate::results::ShardReport {
            nodes,
            moved: r.redirects[0],
            ask: r.redirects[1],
        }),
    }
}

/// The timeline, with per-second histograms only where a merge needs them,
/// and a shaped rate's offer in each entry.
fn timeline(rs: &Resolved, seconds: Vec<crate::results::Second>) -> Vec<crate::results::Second> {
    let l = &rs.config.load;
    let shaped = l.rate.filter(|_| !l.rate_shape.is_steady());
    seconds
        .into_iter()
        .map(|mut s| {
            if l.shard.is_none() {
                s.histogram = None;
            }
            if let Some(peak) = shaped {
                let from = s.second as f64;
                let mean = l.rate_shape.mean(from, from + f64::from(s.span_s));
                s.offered_rps = Some(peak * rs.local_share * mean);
            }
            s
        })
        .collect()
}

fn consistency_report(m: &crate::results::stats::Recorder) -> crate::results::ConsistencyReport {
    let c = &m.counts;
    crate::results::ConsistencyReport {
        checked_reads: c.checked,
        stale_reads: c.stale,
        stale_per_million_reads: if c.checked > 0 {
            c.stale as f64 * 1e6 / c.checked as f64
        } else {
            0.0
        },
        versions_behind_mean: if c.stale > 0 {
            c.stale_versions as f64 / c.stale as f64
        } else {
            0.0
        },
        versions_behind_max: c.stale_versions_max,
        stale_age_us: Percentiles::of(&m.stale_age),
        stale_age_histogram: Some(encode_histogram(&m.stale_age)),
    }
}

/// The description of a target of `kind` at `endpoint` that reported `info`,
/// with the settings and pid of `server` when kvlab started it.
pub(super) fn target_info(
    kind: crate::plan::TargetKind,
    info: &crate::driver::ServerInfo,
    endpoint: &crate::driver::Endpoint,
    server: Option<&crate::servers::ManagedServer>,
) -> TargetInfo {
    TargetInfo {
        kind: kind.name().to_string(),
        product: info.product.clone(),
        version: info.version.clone(),
        managed: server.is_some(),
        url: endpoint.display_for(kind.product()),
        settings: server.map(|s| s.settings.clone()).unwrap_or_default(),
        pid: server.map(|s| s.pid()),
        transport: None,
    }
}

/// What kvlab's own client spent: `cpu_s` seconds, `per_request` µs, and
/// the engine's report `r` (busy share, I/O interface).
fn client_use(cpu_s: f64, per_request: f64, r: &EngineReport) -> ClientUse {
    let mut c = ClientUse {
        client_cpu_s: cpu_s,
        client_cpu_us_per_request: per_request,
        client_busy: r.client_busy,
        client_saturated: r.client_busy.is_some_and(|b| b >= 0.9),
        client_peak_rss_kb: self_peak_rss_kb(),
        client_io: r.io.as_ref().map(|io| io.kind.name().to_string()),
        client_io_why: r.io.as_ref().and_then(|io| io.why.clone()),
        ..ClientUse::default()
    };
    let w = r.wakes;
    c.set_wakes(
        w.map(|w| w.wakes),
        w.map(|w| w.context_switches),
        r.measured.counts.requests(),
    );
    c
}

/// The near caches' report from their `counts`, every thread's added.
fn near_report(counts: &crate::engine::counts::NearCounts) -> crate::results::near::NearReport {
    let d = &counts.delay_us;
    let at = |q: f64| (!d.is_empty()).then(|| d.value_at_quantile(q) as f64);
    let reads = counts.hits + counts.misses;
    crate::results::near::NearReport {
        setting: counts.setting,
        described: counts.setting.map(|s| s.describe()).unwrap_or_default(),
        threads: counts.threads,
        hits: counts.hits,
        misses: counts.misses,
        hit_ratio: counts.hits as f64 / reads.max(1) as f64,
        expired: counts.expired,
        evictions: counts.evictions,
        invalidation_messages: counts.messages,
        keys_invalidated: counts.keys_invalidated,
        entries_invalidated: counts.entries_invalidated,
        flushes: counts.flushes,
        before_ack: counts.before_ack,
        delays_measured: d.len(),
        delay_p50_us: at(0.5),
        delay_p99_us: at(0.99),
        delay_max_us: (!d.is_empty()).then(|| d.max() as f64),
        peak_bytes: counts.peak_bytes,
        peak_items: counts.peak_items,
        hits_all: counts.hits_all,
    }
}
