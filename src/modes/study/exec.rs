//! Running a study: points in plan order, managed servers restarted only when
//! their settings change, data loaded once per server, and the results file
//! rewritten after every point so Ctrl-C or a crash keeps what finished.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use super::{Point, StudyFile, expand};
use crate::plan::RunPlan;
use crate::results::study::{PointResult, STUDY_SCHEMA, StudyResult, TargetCapacity};
use crate::runner::settle::SETTLE_MAX_S;
use crate::runner::{self, RunOptions};
use crate::servers::ManagedServer;

/// Parses a CPU list such as `0`, `1-3` or `0,2`.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (
            a.trim().parse().context("bad CPU list")?,
            b.trim().parse().context("bad CPU list")?,
        );
        out.extend(a..=b);
    }
    anyhow::ensure!(!out.is_empty(), "empty CPU list");
    Ok(out)
}

/// Pins the calling thread (and threads it starts later) to `cpus`.
pub fn pin(cpus: &[usize]) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            anyhow::bail!(
                "cannot pin to CPUs {cpus:?}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

/// Runs `study`, writing results under `out_dir`; returns the results file.
/// `on_point` is told about each finished point (for a progress line).
pub fn run(
    study: &StudyFile,
    out_dir: &Path,
    opts: RunOptions,
    shutdown: &AtomicBool,
    on_point: &mut dyn FnMut(&Point, &PointResult),
) -> Result<PathBuf> {
    let points = expand(study)?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let mut servers = Servers {
        current: None,
        loaded: None,
        cpus: study.server_cpus.as_deref().map(parse_cpus).transpose()?,
        opts,
    };
    if let Some(c) = study.client_cpus.as_deref().map(parse_cpus).transpose()? {
        pin(&c)?; // before the machine is described: its cores are the client's
    }
    let mut log = Log::open(study, out_dir, points.len(), on_point, shutdown);
    log.write()?;
    for (i, point) in points.iter().enumerate() {
        if shutdown.load(Ordering::SeqCst) {
            log.out.interrupted = true;
            break;
        }
        if !servers.ready(&points[i..], &mut log)?
            || !measure(study, point, &mut servers, &mut log)?
        {
            continue;
        }
        // After a target's last point on this server: its capacity, if asked.
        let last_here = points.get(i + 1).is_none_or(|n| !same_server(n, point));
        if let (true, true, Some(ms)) = (study.goal.capacity, last_here, study.goal.p99_ms)
            && !shutdown.load(Ordering::SeqCst)
        {
            let first = points
                .iter()
                .find(|p| same_server(p, point))
                .unwrap_or(point);
            search_capacity(point, first, ms, &servers, &mut log)?;
        }
    }
    drop(servers);
    log.write()?;
    Ok(log.path)
}

/// Whether points `a` and `b` run on the same managed server: one target
/// with the same settings.
fn same_server(a: &Point, b: &Point) -> bool {
    a.target == b.target && a.plan.target.server_opts == b.plan.target.server_opts
}

/// The managed server a study's points run on, and what it holds.
struct Servers {
    /// Its target's label and settings, and the server.
    current: Option<(String, BTreeMap<String, String>, ManagedServer)>,
    /// The keys and value size it holds.
    loaded: Option<(u64, usize)>,
    /// The CPUs servers are pinned to.
    cpus: Option<Vec<usize>>,
    opts: RunOptions,
}

impl Servers {
    /// Starts the managed server `points[0]` runs on, unless it runs already,
    /// sized for the largest of the points after it on the same server;
    /// `false` when it failed to start (the point recorded as failed).
    fn ready(&mut self, points: &[Point], log: &mut Log) -> Result<bool> {
        let point = &points[0];
        let plan = &point.plan;
        let same = self
            .current
            .as_ref()
            .is_some_and(|(t, o, _)| *t == point.target && *o == plan.target.server_opts);
        if plan.target.external.is_some() || same {
            return Ok(true);
        }
        self.current = None; // stops the previous server
        self.loaded = None;
        let mut sized = plan.clone();
        for p in points.iter().take_while(|p| same_server(p, point)) {
            sized.load.connections = sized.load.connections.max(p.plan.load.connections);
            sized.workload.value_size = sized.workload.value_size.max(p.plan.workload.value_size);
        }
        match start_pinned(&sized.target, &sized, self.opts, self.cpus.as_deref()) {
            Ok(s) => {
                self.current =
                    s.map(|s| (point.target.clone(), plan.target.server_opts.clone(), s));
                Ok(true)
            }
            Err(e) => {
                log.fail(point, &e)?;
                Ok(false)
            }
        }
    }

    /// The managed server of a point of `plan`, if it has one.
    fn of(&self, plan: &RunPlan) -> Option<&ManagedServer> {
        let managed = plan.target.external.is_none();
        self.current.as_ref().map(|(_, _, s)| s).filter(|_| managed)
    }
}

/// Runs and records `point` on the server `servers` holds (a fill, or a
/// measured run with a fresh cache in front where it has one); `false` when
/// nothing was measured (a fill, or a cache that failed to start).
fn measure(study: &StudyFile, point: &Point, servers: &mut Servers, log: &mut Log) -> Result<bool> {
    let (opts, shutdown) = (servers.opts, log.shutdown);
    let mut plan = point.plan.clone();
    let managed = plan.target.external.is_none();
    let shape = (plan.workload.keys, plan.workload.value_size);
    if managed && servers.loaded == Some(shape) && !plan.target.kind.is_sql() {
        plan.workload.load = false; // this server holds the data already
    }
    let server = servers.of(&plan);
    if study.mode.as_deref() == Some("fill") {
        let pr = match crate::modes::fill::fill(&plan, server, opts, shutdown) {
            Ok(f) => PointResult {
                fill: Some(f),
                ..blank(point)
            },
            Err(e) => failed(point, &e),
        };
        log.record(point, pr)?;
        return Ok(false);
    }
    // A managed cache in front (cache-aside) is fresh for every point and
    // pinned like the server.
    let cache = match &plan.cache {
        Some(a) => match start_pinned(&a.cache, &plan, opts, servers.cpus.as_deref())
            .map_err(runner::cache::as_cache)
        {
            Ok(s) => s,
            Err(e) => {
                log.fail(point, &e)?;
                return Ok(false);
            }
        },
        None => None,
    };
    if let Some(m) = crate::runner::metrics::installed() {
        m.set_point(&blank(point).label());
    }
    let pr = match runner::measure_with(&plan, server, cache, opts, shutdown) {
        Ok(r) => {
            servers.loaded = Some(shape);
            PointResult {
                result: Some(r),
                ..blank(point)
            }
        }
        Err(e) => failed(point, &e),
    };
    if pr.result.as_ref().is_some_and(|r| r.interrupted) {
        log.out.interrupted = true;
    }
    log.record(point, pr)?;
    Ok(true)
}

/// The capacity search (`goal.capacity`) of `point`'s target on its server,
/// within `p99_ms`, from the plan of `first`, the target's first point
/// there; a failed search is said, not recorded.
fn search_capacity(
    point: &Point,
    first: &Point,
    p99_ms: f64,
    servers: &Servers,
    log: &mut Log,
) -> Result<()> {
    let mut plan = first.plan.clone();
    plan.workload.load = plan.target.kind.is_sql()
        || servers.loaded != Some((plan.workload.keys, plan.workload.value_size));
    let server = servers.of(&point.plan);
    let label = match point
        .params
        .iter()
        .filter(|(k, _)| k.starts_with("server."))
        .map(|(k, v)| format!("{}={v}", &k[7..]))
        .collect::<Vec<_>>()
    {
        v if v.is_empty() => point.target.clone(),
        v => format!("{} {}", point.target, v.join(" ")),
    };
    match crate::modes::capacity::search_on(
        &plan,
        server,
        (p99_ms, crate::modes::capacity::MoreLimits::default()),
        crate::modes::capacity::Reach {
            steps: 6,
            floor: None,
        },
        servers.opts,
        log.shutdown,
        &mut |_| {},
    ) {
        Ok(search) => log.out.capacity.push(TargetCapacity {
            target: label,
            search,
        }),
        Err(e) => eprintln!("kvlab: capacity search for {label} failed: {e:#}"),
    }
    log.write()
}

/// The result of `point`, empty: nothing measured, no error yet.
fn blank(point: &Point) -> PointResult {
    PointResult {
        index: point.index,
        target: point.target.clone(),
        repetition: point.repetition,
        params: point.params.clone(),
        result: None,
        error: None,
        fill: None,
        interrupted: false,
    }
}

/// The result of `point` that failed with `e`.
fn failed(point: &Point, e: &anyhow::Error) -> PointResult {
    PointResult {
        error: Some(format!("{e:#}")),
        ..blank(point)
    }
}

/// The results file of a study being run: each finished point is told to
/// `on_point`, kept, and written at once.
struct Log<'a> {
    out: StudyResult,
    path: PathBuf,
    on_point: &'a mut dyn FnMut(&Point, &PointResult),
    shutdown: &'a AtomicBool,
}

impl<'a> Log<'a> {
    /// The results file of `study`'s `planned` points in `out_dir`, named by
    /// the time it starts.
    fn open(
        study: &StudyFile,
        out_dir: &Path,
        planned: usize,
        on_point: &'a mut dyn FnMut(&Point, &PointResult),
        shutdown: &'a AtomicBool,
    ) -> Self {
        let started_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let machine = crate::runner::machine::this();
        let caveats = super::core_caveats(study, machine.cores);
        Log {
            out: StudyResult {
                schema_version: STUDY_SCHEMA,
                kvlab_version: env!("CARGO_PKG_VERSION").into(),
                started_unix_s,
                study: study.clone(),
                machine,
                planned,
                points: Vec::new(),
                interrupted: false,
                capacity: Vec::new(),
                caveats,
            },
            path: out_dir.join(format!("{}-{started_unix_s}.json", study.name)),
            on_point,
            shutdown,
        }
    }

    /// Keeps a finished point; one that failed after Ctrl-C is marked
    /// interrupted, not failed.
    fn record(&mut self, point: &Point, mut pr: PointResult) -> Result<()> {
        if self.shutdown.load(Ordering::SeqCst) && (pr.error.is_some() || pr.result.is_some()) {
            pr.interrupted =
                pr.error.is_some() || pr.result.as_ref().is_some_and(|r| r.interrupted);
            self.out.interrupted |= pr.interrupted;
        }
        (self.on_point)(point, &pr);
        self.out.points.push(pr);
        self.write()
    }

    /// Keeps `point` as failed with `e`.
    fn fail(&mut self, point: &Point, e: &anyhow::Error) -> Result<()> {
        self.record(point, failed(point, e))
    }

    /// Rewrites the results file.
    fn write(&self) -> Result<()> {
        self.out.write(&self.path)
    }
}

/// Starts `target` of `plan` when kvlab manages it, pinned to `cpus` if given.
fn start_pinned(
    target: &crate::plan::TargetSpec,
    plan: &crate::plan::RunPlan,
    opts: RunOptions,
    cpus: Option<&[usize]>,
) -> Result<Option<ManagedServer>> {
    let rs = runner::resolve::Resolved::of(plan)?;
    let s = runner::start_managed(target, &rs, opts)?;
    if let (Some(s), Some(cpus)) = (&s, cpus) {
        s.pin(cpus)?;
    }
    Ok(s)
}

/// How long a study takes: what to expect, and at most.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Seconds to expect.
    pub about_s: f64,
    /// Seconds at most: every settling cache warmed to its limit, every
    /// capacity rate run twice (other parts as expected).
    pub at_most_s: f64,
    /// What `about_s` is made of, in seconds, by part (parts of 0 s left out).
    pub parts: Vec<(&'static str, f64)>,
    /// Why it may take up to `at_most_s`, one reason a line.
    pub bounds: Vec<String>,
}

/// Keys per second a data load is counted at (conservative: kvlab loads
/// 300,000 to 700,000 a second into local servers).
const LOAD_KEYS_PER_S: f64 = 50_000.0;
/// Value bytes per second a data load is counted at (conservative).
const LOAD_BYTES_PER_S: f64 = 25e6;
/// Requests per second a closed-loop point measured by its request count is
/// counted at.
const REQUESTS_PER_S: f64 = 10_000.0;
/// Seconds each point spends outside its phases (connecting, counters, the
/// results file).
const POINT_OVERHEAD_S: f64 = 0.5;
/// Runs of a capacity search (`goal.capacity`): the closed-loop run and the
/// rates tried, each failing rate run twice at most.
const CAPACITY_RUNS: (f64, f64) = (7.0, 13.0);

/// Estimates how long `points` of `study` take, phase by phase as
/// [`run`] runs them: managed servers started when their settings change,
/// data loaded once per server and shape, a fresh cache for each cache-aside
/// point (filled, or settling until its hit ratio settles, at most
/// [`SETTLE_MAX_S`]), servers restarted
/// by events, warm-up and the measured window, and capacity searches.
pub fn estimate(study: &StudyFile, points: &[Point]) -> Estimate {
    use crate::plan::events::{EventAction, EventOn};
    let mut parts: Vec<(&'static str, f64)> = Vec::new();
    let mut add = |part: &'static str, s: f64| match parts.iter_mut().find(|(p, _)| *p == part) {
        Some((_, t)) => *t += s,
        None => parts.push((part, s)),
    };
    let mut extra_max = 0.0;
    let mut bounds: Vec<String> = Vec::new();
    let mut bound = |why: String| {
        if !bounds.contains(&why) {
            bounds.push(why);
        }
    };
    let mut current: Option<(&str, &BTreeMap<String, String>)> = None;
    let mut loaded: Option<(u64, usize)> = None;
    let window = |p: &crate::plan::RunPlan| match p.load.stop {
        crate::plan::Stop::Duration(d) => d,
        crate::plan::Stop::Requests(n) => n as f64 / p.load.rate.unwrap_or(REQUESTS_PER_S),
    };
    for (i, point) in points.iter().enumerate() {
        let plan = &point.plan;
        let managed = plan.target.external.is_none();
        let here = (point.target.as_str(), &plan.target.server_opts);
        if managed && current != Some(here) {
            add("server starts", start_s(&plan.target));
            current = Some(here);
            loaded = None;
        }
        let shape = (plan.workload.keys, plan.workload.value_size);
        // kvlab's table in a database outlives a run; an external cache's keys do not count.
        let kept = managed || plan.target.kind.is_sql();
        if plan.workload.load && !(kept && loaded == Some(shape)) {
            add("data loads", load_s(plan));
            loaded = Some(shape);
        }
        add("between phases", POINT_OVERHEAD_S);
        if study.mode.as_deref() == Some("fill") {
            add("filling", load_s(plan));
            continue;
        }
        if let Some(c) = &plan.cache {
            add("cache starts", start_s(&c.cache));
            match c.start {
                crate::plan::CacheStart::Warm => add("cache fills", load_s(plan)),
                crate::plan::CacheStart::Cold => {}
                crate::plan::CacheStart::Settle => {
                    add("cache settling", settle_s(plan));
                    extra_max += SETTLE_MAX_S - settle_s(plan);
                    bound(format!(
                        "a settling cache warms until its hit ratio settles, up to {SETTLE_MAX_S} s"
                    ));
                }
            }
        }
        for e in &plan.load.events {
            if let EventAction::Restart { .. } = e.action {
                let server = match (e.on, &plan.cache) {
                    (EventOn::Cache, Some(c)) => &c.cache,
                    _ => &plan.target,
                };
                add("event restarts", start_s(server));
            }
        }
        add("warm-up", plan.load.warmup_s);
        add("measured", window(plan));
        let last_here = points.get(i + 1).is_none_or(|n| {
            n.target != point.target || n.plan.target.server_opts != plan.target.server_opts
        });
        if study.goal.capacity && study.goal.p99_ms.is_some() && last_here {
            let run = plan.load.warmup_s + window(plan);
            add("capacity searches", CAPACITY_RUNS.0 * run);
            extra_max += (CAPACITY_RUNS.1 - CAPACITY_RUNS.0) * run;
            bound("a capacity search runs each failing rate twice".into());
        }
    }
    parts.retain(|(_, s)| *s > 0.0);
    let about_s: f64 = parts.iter().map(|(_, s)| s).sum();
    Estimate {
        about_s,
        at_most_s: about_s + extra_max,
        parts,
        bounds,
    }
}

impl Estimate {
    /// `about 6 min 10 s`, with `(at most …)` where that is more.
    pub fn text(&self) -> String {
        match self.at_most_s > self.about_s + 1.0 {
            true => format!(
                "about {} (at most {})",
                duration_text(self.about_s),
                duration_text(self.at_most_s)
            ),
            false => format!("about {}", duration_text(self.about_s)),
        }
    }
}

/// Seconds as text: `45 s`, `6 min 10 s`, `2 h 5 min`.
pub fn duration_text(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..100 => format!("{s} s"),
        100..3600 if s.is_multiple_of(60) => format!("{} min", s / 60),
        100..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Seconds a managed server of `t` takes to start (0 for a URL): a JVM
/// (allowed minutes to start) 20, a cluster 5, a database 4, a cache 0.5;
/// a pooler in front 0.5 more.
fn start_s(t: &crate::plan::TargetSpec) -> f64 {
    if t.external.is_some() {
        return 0.0;
    }
    let f = t.kind.product().facts();
    let server = if f.server.start_timeout.as_secs() >= 120 {
        20.0
    } else if f.sharded {
        5.0
    } else if f.server.on_disk {
        4.0
    } else {
        0.5
    };
    server + if t.pooler.is_some() { 0.5 } else { 0.0 }
}

/// Seconds a settling cache of `plan` warms: two means to compare (as long
/// as its run, 1 to 3 s each), and 1.5 times the time its requests take to go over every key once (at
/// `rate`, else 10,000 a second), at most [`SETTLE_MAX_S`]. The built-in
/// cache-size study settled in 6 to 35 s, 13 s on average (counted: 15 s);
/// cache-failure in 27 s (counted: 25 s).
fn settle_s(plan: &crate::plan::RunPlan) -> f64 {
    let rate = plan.load.rate.unwrap_or(REQUESTS_PER_S);
    let means = 2.0 * crate::runner::settle::window_s(&plan.load.stop) as f64;
    (means + 1.5 * plan.workload.keys as f64 / rate).min(SETTLE_MAX_S)
}

/// Seconds loading `plan`'s keys takes, counted conservatively.
fn load_s(plan: &crate::plan::RunPlan) -> f64 {
    let w = &plan.workload;
    let bytes = w.keys as f64 * w.value_size as f64;
    (w.keys as f64 / LOAD_KEYS_PER_S).max(bytes / LOAD_BYTES_PER_S)
}
