//! One run from plan to result: start (or reach) the target, load the data,
//! run the engine while sampling client and server resources, cross-check the
//! server's counters, and assemble the [`RunResult`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};

use crate::driver::{Connector, Protocol, check_prefix};
use crate::engine::{self, EngineReport, Observer, Spec};
use crate::output::Progress;
use crate::plan::RunPlan;
use crate::results::{ConnectionReport, CounterCheck, LoadResult, RunResult, TargetInfo};
use crate::server::{ManagedServer, ProcUsage, counters, proc_tree_usage, proc_usage};
use crate::stats::{ErrorKind, Percentiles, encode_histogram};
use crate::workload::{OpMix, Values};

/// Options of a run that do not change what is measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Show progress on a terminal.
    pub progress: bool,
    /// Print notes (server started, loading...) on stderr.
    pub notes: bool,
}

/// Measures one plan. A managed server lives exactly as long as this call.
pub fn run(plan: &RunPlan, opts: RunOptions, shutdown: &AtomicBool) -> Result<RunResult> {
    let server = start_server(plan, opts)?;
    let result = measure(plan, server.as_ref(), opts, shutdown);
    drop(server);
    result
}

/// Bytes of data `plan` stores (keys, values, overhead), for sizing servers.
pub fn data_bytes(plan: &RunPlan) -> u64 {
    plan.workload.keys
        * (plan.workload.value_size as u64 + plan.workload.key_prefix.len() as u64 + 80)
}

/// Starts the managed server `plan` asks for (none for an external target).
pub fn start_server(plan: &RunPlan, opts: RunOptions) -> Result<Option<ManagedServer>> {
    start_managed(&plan.target, plan, opts)
}

/// Starts `target` (the plan's target or its cache) if kvlab is to manage it,
/// sized for `plan`'s data and connections.
pub fn start_managed(
    target: &crate::plan::TargetSpec,
    plan: &RunPlan,
    opts: RunOptions,
) -> Result<Option<ManagedServer>> {
    let kind = target.kind;
    if target.external.is_some() {
        return Ok(None);
    }
    raise_fd_limit(plan.load.connections);
    let sizing = crate::server::config::Sizing {
        data_bytes: data_bytes(plan),
        connections: plan.load.connections,
    };
    if let Some(u) = ManagedServer::os_user(kind, &target.server_opts) {
        note(
            opts,
            format!(
                "kvlab: runs as root; the managed {} runs as system user '{u}'",
                kind.name()
            ),
        );
    }
    let s = ManagedServer::start(kind, &target.server_opts, sizing)?;
    note(
        opts,
        format!(
            "kvlab: started {} {} (pid {}) on 127.0.0.1:{} in {}",
            crate::server::binary_name(kind),
            s.info.version,
            s.pid(),
            s.endpoint().port,
            s.dir().display()
        ),
    );
    Ok(Some(s))
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
    let protocol = Protocol::of(kind);
    check_prefix(protocol, &plan.workload.key_prefix)?;
    raise_fd_limit(plan.load.connections);
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let endpoint = match (&plan.target.external, server) {
        (Some(e), _) => e.clone(),
        (None, Some(s)) => s.endpoint(),
        (None, None) => unreachable!("a managed target has a server"),
    };
    let connector = Connector::new(kind, &endpoint)?;
    let info = match server {
        Some(s) => s.info.clone(),
        None => {
            let info = connector.probe(Duration::from_secs(4))?;
            note(
                opts,
                format!(
                    "kvlab: {} is {} {}; kvlab writes only keys under the prefix '{}' and never flushes a server it did not start",
                    connector.display, info.product, info.version, plan.workload.key_prefix
                ),
            );
            info
        }
    };

    let values = Values::new(plan.workload.value_size);
    let cache = match &plan.cache {
        Some(a) => Some(crate::cacheaside::Cache::open(a, plan, opts, cache_server)?),
        None => None,
    };
    let (board, board_note) = version_board(plan);
    let mut base = Spec {
        connector: connector.clone(),
        key_prefix: plan.workload.key_prefix.as_bytes().to_vec(),
        values,
        keys: plan.workload.keys,
        distribution: plan.workload.distribution,
        mix: OpMix::new(plan.workload.ratio),
        connections: plan.load.connections,
        threads: plan.load.threads,
        // MySQL answers one command at a time on a connection.
        pipeline: if protocol.pipelines() {
            plan.load.pipeline
        } else {
            1
        },
        warmup: Duration::from_secs_f64(plan.load.warmup_s),
        stop: plan.load.stop,
        rate: plan.load.rate,
        timeout: Duration::from_secs_f64(plan.load.timeout_s),
        seed: plan.workload.seed,
        ttl_s: 0,
        board: None,
        aside: None,
    };

    let load = crate::dataset::prepare(&base, plan, server.is_some(), opts, shutdown)?;
    if let Some(c) = &cache {
        c.prepare(&base, opts, shutdown)?;
        base.aside = Some(c.spec());
    }
    base.board = board;
    if shutdown.load(Ordering::SeqCst) {
        bail!("interrupted before measuring; nothing was measured");
    }
    let cache_before = cache.as_ref().and_then(|c| c.counters());

    let before = counters::read(&connector);
    let counters_note = before
        .as_ref()
        .err()
        .map(|e| format!("no server counters to cross-check: {e:#}"));
    let before = before.ok();
    let mut obs = RunObserver {
        progress: Progress::spinner("run", opts.progress),
        server_pid: server.as_ref().map(|s| s.pid()),
        cache_pid: cache
            .as_ref()
            .and_then(|c| c.server.as_ref())
            .map(|s| s.pid()),
        server_tree: kind == crate::plan::TargetKind::Postgres,
        server_peak_kb: 0,
        at_start: None,
        at_end: None,
        warmup: base.warmup,
    };
    // A separate writer at a fixed rate beside the measured load, reported apart.
    let bg_stop = AtomicBool::new(false);
    let (report, background) = std::thread::scope(|scope| -> Result<_> {
        let bg = plan.workload.background_writes.map(|rate| {
            let spec = Spec {
                mix: OpMix::new(crate::plan::Ratio { set: 1, get: 0 }),
                connections: 1,
                threads: 1,
                pipeline: 1,
                warmup: Duration::ZERO,
                stop: crate::plan::Stop::Duration(1e9),
                rate: Some(rate),
                seed: base.seed ^ 0xb6,
                ..base.clone()
            };
            let stop = &bg_stop;
            scope.spawn(move || engine::execute(&spec, stop, &mut engine::Quiet))
        });
        let main = engine::execute(&base, shutdown, &mut obs);
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
    let after = counters::read(&connector).ok();
    let bg_sets = background.as_ref().map_or(0, |b| b.measured.counts.sets);
    let (kvlab_gets, kvlab_sets) = if cache.is_some() {
        // Only reads the cache missed and every write reach the database.
        let sent = |l: crate::stats::Leg| report.leg_requests[l as usize];
        (
            sent(crate::stats::Leg::DbGet),
            sent(crate::stats::Leg::DbSet),
        )
    } else {
        (
            report.warmup.gets + report.measured.counts.gets,
            report.warmup.sets + report.measured.counts.sets + bg_sets,
        )
    };
    let server_counters = before.zip(after).map(|(b, a)| CounterCheck {
        server: a.since(&b),
        kvlab_gets,
        kvlab_sets,
        exclusive: server.is_some(),
    });
    let aside = cache.as_ref().map(|c| {
        let (db_cpu, cache_cpu) = obs.cpu_deltas();
        c.report(&report, cache_before, cache_cpu, db_cpu)
    });
    let background = background.map(|b| crate::results::BackgroundReport {
        target_rps: plan.workload.background_writes.unwrap_or(0.0),
        writes: b.measured.counts.sets,
        errors: b.measured.counts.error_total(),
        rps: b.measured.counts.ok() as f64 / b.window.as_secs_f64().max(1e-9),
        latency_us: crate::stats::Percentiles::of(&b.measured.latency),
    });

    let target = TargetInfo::of(kind, &info, &endpoint, server);
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
    result.problems.extend(board_note);
    if base.board.is_none() {
        result.consistency = None;
    }
    if let Some(a) = aside {
        if let Some(cc) = &a.cache_counters
            && cc.exclusive
            && !cc.agrees()
        {
            result.problems.push(format!(
                "the cache counted GET {} / SET {} but kvlab sent GET {} / SET {}",
                cc.server.gets, cc.server.sets, cc.kvlab_gets, cc.kvlab_sets
            ));
        }
        // Both servers' CPU is the price of a request through the cache.
        if let (Some(d), Some(c)) = (a.db_cpu_s, a.cache_cpu_s) {
            result.server_cpu_s = Some(d + c);
            result.server_cpu_us_per_request =
                (result.requests > 0).then(|| (d + c) * 1e6 / result.requests as f64);
        }
        result.cache_aside = Some(a);
    }
    drop(cache);
    Ok(result)
}

/// Prints a note on stderr when notes are on.
pub fn note(opts: RunOptions, msg: String) {
    if opts.notes {
        eprintln!("{msg}");
    }
}

#[derive(Clone, Copy)]
struct Sample {
    client_cpu_s: f64,
    server: Option<ProcUsage>,
    cache: Option<ProcUsage>,
}

struct RunObserver {
    progress: Progress,
    server_pid: Option<u32>,
    /// A managed cache in front of the server (cache-aside).
    cache_pid: Option<u32>,
    /// Measure the whole process tree (PostgreSQL: one process per connection).
    server_tree: bool,
    /// Largest server memory seen at any sample.
    server_peak_kb: u64,
    at_start: Option<Sample>,
    at_end: Option<Sample>,
    warmup: Duration,
}

impl RunObserver {
    fn sample(&self) -> Sample {
        Sample {
            client_cpu_s: self_cpu_s(),
            server: self.server_pid.and_then(if self.server_tree {
                proc_tree_usage
            } else {
                proc_usage
            }),
            cache: self.cache_pid.and_then(proc_usage),
        }
    }

    /// CPU seconds the server and the cache spent between the window's samples.
    fn cpu_deltas(&self) -> (Option<f64>, Option<f64>) {
        let Some((a, b)) = self.at_start.zip(self.at_end) else {
            return (None, None);
        };
        let d = |x: Option<ProcUsage>, y: Option<ProcUsage>| {
            x.zip(y)
                .map(|(x, y)| y.cpu_s - x.cpu_s)
                .filter(|d| *d >= 0.0)
        };
        (d(a.server, b.server), d(a.cache, b.cache))
    }
}

/// The version board of a run that writes, or why stale reads are not measured.
fn version_board(
    plan: &RunPlan,
) -> (
    Option<std::sync::Arc<crate::consistency::VersionBoard>>,
    Option<String>,
) {
    use crate::consistency::VersionBoard;
    let writes = plan.workload.ratio.set > 0 || plan.workload.background_writes.is_some();
    if !writes {
        return (None, None);
    }
    if plan.workload.value_size < crate::workload::VERSIONED_SIZE {
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

impl Observer for RunObserver {
    fn connecting(&mut self, done: usize, total: usize) {
        self.progress
            .message(format!("opening connections: {done}/{total}"));
    }
    fn started(&mut self, warmup: Duration) {
        if !warmup.is_zero() {
            self.progress
                .message(format!("warming up for {:.0?}", warmup));
        }
    }
    fn measure_started(&mut self) {
        let s = self.sample();
        self.track_peak(&s);
        self.at_start = Some(s);
    }
    fn second(&mut self, elapsed: Duration, requests: u64, p99_us: f64, errors: u64) {
        if self.server_tree {
            // A process tree's peak is the largest total seen at a sample.
            let s = self.sample();
            self.track_peak(&s);
        }
        let phase = if elapsed <= self.warmup {
            "warm-up"
        } else {
            "measuring"
        };
        let err = if errors > 0 {
            format!(", {errors} errors")
        } else {
            String::new()
        };
        self.progress.message(format!(
            "{phase}: {requests} req/s, p99 {p99_us:.0} µs{err}"
        ));
    }
    fn measure_ended(&mut self) {
        let s = self.sample();
        self.track_peak(&s);
        self.at_end = Some(s);
    }
}

impl RunObserver {
    fn track_peak(&mut self, s: &Sample) {
        if let Some(u) = s.server {
            self.server_peak_kb = self.server_peak_kb.max(u.peak_rss_kb);
        }
    }
}

/// CPU seconds (user + system) of this whole process so far.
fn self_cpu_s() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn self_peak_rss_kb() -> u64 {
    // SAFETY: as above.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss.max(0) as u64
}

/// Raises the open-file limit to what `connections` need (up to the hard limit).
fn raise_fd_limit(connections: usize) {
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            let want = (connections as u64 * 2 + 256).min(lim.rlim_max);
            if lim.rlim_cur < want {
                lim.rlim_cur = want;
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
        }
    }
}

fn assemble(
    plan: &RunPlan,
    target: TargetInfo,
    started_unix_s: u64,
    load: Option<LoadResult>,
    r: EngineReport,
    obs: &RunObserver,
    server_counters: Option<CounterCheck>,
) -> RunResult {
    let c = r.measured.counts;
    let window = r.window.as_secs_f64().max(1e-9);
    let (start, end) = (obs.at_start, obs.at_end);
    let client_cpu_s = start
        .zip(end)
        .map_or(0.0, |(a, b)| (b.client_cpu_s - a.client_cpu_s).max(0.0));
    let server_use = start
        .zip(end)
        .and_then(|(a, b)| Some((a.server?, b.server?)));
    // A process tree's total can fall between samples when processes that were
    // counted leave it unreaped; then the figure is unknown, not zero.
    let server_cpu_s = server_use
        .map(|(a, b)| b.cpu_s - a.cpu_s)
        .filter(|d| *d > 0.0 || c.requests() == 0);
    let cpu_unknown = server_use.is_some() && server_cpu_s.is_none();
    let per_req = |cpu: f64| {
        if c.requests() > 0 {
            cpu * 1e6 / c.requests() as f64
        } else {
            0.0
        }
    };
    let saturated = r.client_busy.is_some_and(|b| b >= 0.9);
    let paced = plan.load.rate.is_some();

    let mut problems = Vec::new();
    if cpu_unknown {
        problems.push("the server's CPU could not be measured for this run (its process tree changed between samples)".to_string());
    }
    if plan.load.pipeline > 1 && plan.target.kind == crate::plan::TargetKind::Mariadb {
        problems.push(format!(
            "--pipeline {} was run as 1: the MySQL protocol answers one command at a time per connection",
            plan.load.pipeline
        ));
    }
    if c.error_total() > 0 {
        let kinds: Vec<String> = ErrorKind::ALL
            .iter()
            .filter(|k| c.error(**k) > 0)
            .map(|k| format!("{} {}", k.name(), c.error(*k)))
            .collect();
        problems.push(format!(
            "{} of {} requests failed ({})",
            c.error_total(),
            c.requests(),
            kinds.join(", ")
        ));
    }
    if plan.workload.load && c.misses > 0 {
        problems.push(format!(
            "{} GETs missed although every key was loaded (evictions or another client?)",
            c.misses
        ));
    }
    if !plan.workload.load && c.gets > 0 && c.misses * 2 > c.gets {
        problems.push(format!(
            "{:.0}% of GETs missed (--no-load): the figures describe misses, not cache hits",
            c.misses as f64 * 100.0 / c.gets as f64
        ));
    }
    if c.requests() == 0 {
        problems.push("no request finished in the measured window".to_string());
    }
    if let Some(cc) = &server_counters
        && cc.exclusive
        && !cc.agrees()
    {
        problems.push(format!(
            "the server counted GET {} / SET {} but kvlab sent GET {} / SET {}",
            cc.server.gets, cc.server.sets, cc.kvlab_gets, cc.kvlab_sets
        ));
    }
    if saturated {
        problems.push(format!(
            "kvlab's threads never waited for the server (running or waiting for a CPU {:.0}% of the time): the figures are limited by the client or by CPU contention on this machine, not by the server; give kvlab more cores or threads",
            r.client_busy.unwrap_or(0.0) * 100.0
        ));
    }
    // A run full of misses measured the wrong thing: not a valid result.
    let mostly_misses = c.gets > 0 && c.misses * 2 > c.gets;
    let valid = c.error_total() == 0 && c.requests() > 0 && !mostly_misses;
    let mut errors_by_kind = std::collections::BTreeMap::new();
    for k in ErrorKind::ALL {
        errors_by_kind.insert(k.name().to_string(), c.error(k));
    }
    RunResult {
        schema_version: crate::results::SCHEMA_VERSION,
        kvlab_version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix_s,
        config: plan.redacted(),
        target,
        valid,
        problems,
        interrupted: r.interrupted,
        duration_s: window,
        throughput_rps: c.ok() as f64 / window,
        requests: c.requests(),
        gets: c.gets,
        sets: c.sets,
        hits: c.hits,
        misses: c.misses,
        errors: c.error_total(),
        errors_by_kind,
        latency_start: if paced { "intended" } else { "actual" }.to_string(),
        latency_us: Percentiles::of(&r.measured.latency),
        service_time_us: paced.then(|| Percentiles::of(&r.measured.service)),
        schedule: r.schedule,
        client_cpu_s,
        client_cpu_us_per_request: per_req(client_cpu_s),
        client_busy: r.client_busy,
        client_saturated: saturated,
        client_peak_rss_kb: self_peak_rss_kb(),
        server_cpu_s,
        server_cpu_us_per_request: server_cpu_s.map(per_req),
        server_peak_rss_kb: end.and_then(|e| e.server).map(|_| obs.server_peak_kb),
        load,
        warmup: r.warmup,
        connections: ConnectionReport {
            requested: plan.load.connections,
            established: r.established,
            failures: r.connect_failures,
            reconnects: r.reconnects,
            last_error: r.last_connect_error,
        },
        server_counters,
        timeline: r.timeline,
        background: None,
        consistency: plan_writes(plan).then(|| consistency_report(&r.measured)),
        cache_aside: None,
        histogram: encode_histogram(&r.measured.latency),
        service_histogram: paced.then(|| encode_histogram(&r.measured.service)),
    }
}

fn plan_writes(plan: &RunPlan) -> bool {
    (plan.workload.ratio.set > 0 || plan.workload.background_writes.is_some())
        && plan.workload.value_size >= crate::workload::VERSIONED_SIZE
}

fn consistency_report(m: &crate::stats::Recorder) -> crate::results::ConsistencyReport {
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
