//! The load engine: runs one point (one load shape against one target) on T
//! threads and merges what they measured. Knows nothing of sweeps or servers.
//!
//! Data flow: [`execute`] spawns workers ([`worker::run`], the only hot loop),
//! each owning its connections and recorders; once a second each sends a
//! [`Tick`] (a value, not a shared counter) that the calling thread merges into
//! the timeline and shows through an [`Observer`]; at the end their reports merge
//! into one [`EngineReport`].

pub mod aside;
mod link;
pub mod pacer;
pub mod rhythm;
pub mod worker;

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::stats::{Counts, Percentiles, Recorder, new_histogram};
use crate::target::Connector;
use crate::wire::Codec;
use crate::workload::{KeyDistribution, Stop, WritePolicy};
use crate::workload::{KeyGen, OpMix, Values, slice_of};
use pacer::ScheduleReport;

/// One point, resolved: everything the workers need.
#[derive(Clone, Debug)]
pub struct Spec {
    /// How to open connections.
    pub connector: Connector,
    /// Key prefix bytes.
    pub key_prefix: Vec<u8>,
    /// Value generator/verifier.
    pub values: Values,
    /// Key count.
    pub keys: u64,
    /// Key distribution.
    pub distribution: KeyDistribution,
    /// GET/SET mix.
    pub mix: OpMix,
    /// Total connections.
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// In-flight requests per connection.
    pub pipeline: usize,
    /// Warm-up before measuring.
    pub warmup: Duration,
    /// End of the measured phase.
    pub stop: Stop,
    /// Open-loop total rate, if paced.
    pub rate: Option<f64>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Seed for the workers' random generators.
    pub seed: u64,
    /// Expiry of written keys, seconds (0: never; caches only).
    pub ttl_s: u32,
    /// Versions of written values, when stale reads are measured.
    pub board: Option<Arc<crate::consistency::VersionBoard>>,
    /// Cache-aside: the cache in front of `connector` (the database).
    pub aside: Option<AsideSpec>,
}

/// The cache of a cache-aside point.
#[derive(Clone, Debug)]
pub struct AsideSpec {
    /// How to open cache connections.
    pub cache: Connector,
    /// What writes do to the cache.
    pub policy: WritePolicy,
    /// Expiry of cache entries, seconds (0: never).
    pub ttl_s: u32,
}

/// The clock of one run, shared by all workers (a value, copied).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Start of the run (warm-up begins).
    pub t0: Instant,
    /// Start of the measured phase.
    pub measure_start: Instant,
    /// End of the measured phase, for a timed run.
    pub deadline: Option<Instant>,
}

impl Timing {
    fn new(t0: Instant, warmup: Duration, stop: Stop) -> Timing {
        let measure_start = t0 + warmup;
        let deadline = match stop {
            Stop::Duration(s) => Some(measure_start + Duration::from_secs_f64(s)),
            Stop::Requests(_) => None,
        };
        Timing {
            t0,
            measure_start,
            deadline,
        }
    }

    /// A stand-in used before the run starts.
    pub fn placeholder(now: Instant) -> Timing {
        Timing {
            t0: now,
            measure_start: now,
            deadline: None,
        }
    }
}

/// One worker's second of the run.
pub struct Tick {
    /// Second index from the start of measuring (negative: warm-up).
    pub second: i64,
    /// Measured requests that finished in this second.
    pub measured: Recorder,
    /// Warm-up requests that finished in this second.
    pub warmup: Counts,
}

/// One second of the timeline.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Second {
    /// Seconds since measuring began.
    pub second: i64,
    /// Requests that finished in this second.
    pub requests: u64,
    /// Errors among them.
    pub errors: u64,
    /// Timeouts among the errors.
    pub timeouts: u64,
    /// Misses.
    pub misses: u64,
    /// 50th percentile latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
}

/// Live view of a run, for progress display and for sampling resources.
pub trait Observer {
    /// Connections opened (or attempted) so far, of `total`.
    fn connecting(&mut self, _done: usize, _total: usize) {}
    /// All connections are open and the load starts now.
    fn started(&mut self, _warmup: Duration) {}
    /// The measured phase begins now.
    fn measure_started(&mut self) {}
    /// A second finished: its requests (measured or warm-up) and p99 so far.
    fn second(&mut self, _elapsed: Duration, _requests: u64, _p99_us: f64, _errors: u64) {}
    /// All workers stopped.
    fn measure_ended(&mut self) {}
}

/// An [`Observer`] that shows nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// What a point measured.
pub struct EngineReport {
    /// Measured requests: counts and latency.
    pub measured: Recorder,
    /// Warm-up requests (counts only).
    pub warmup: Counts,
    /// Seconds of the measured phase.
    pub timeline: Vec<Second>,
    /// Length of the measured window.
    pub window: Duration,
    /// Schedule keeping (open loop).
    pub schedule: Option<ScheduleReport>,
    /// Failed connection attempts.
    pub connect_failures: u64,
    /// Connections re-established mid-run.
    pub reconnects: u64,
    /// Connections open when the load started.
    pub established: usize,
    /// Last connection error message, if any.
    pub last_connect_error: Option<String>,
    /// Fraction of the window the workers were running or runnable (0..1), if known.
    pub client_busy: Option<f64>,
    /// Stopped early by the shutdown flag.
    pub interrupted: bool,
    /// Cache-aside: steps sent per leg over warm-up and measured phase.
    pub leg_requests: [u64; 5],
}

/// Runs one point with `codec` to its end (or until `shutdown`), reporting to
/// `observer`. The registry picks the codec of the point's product.
pub fn execute_with_codec<C: Codec>(
    codec: C,
    spec: &Spec,
    shutdown: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<EngineReport> {
    execute_with(spec, shutdown, observer, plain(codec, spec))
}

/// The work of one thread: its connections' plans, its seed, its links to the
/// caller and the start line → its report.
pub(crate) trait Work:
    Fn(Vec<worker::ConnPlan>, u64, worker::Links<'_>, StartLine) -> io::Result<worker::WorkerReport>
    + Sync
{
}
impl<F> Work for F where
    F: Fn(
            Vec<worker::ConnPlan>,
            u64,
            worker::Links<'_>,
            StartLine,
        ) -> io::Result<worker::WorkerReport>
        + Sync
{
}

fn plain<C: Codec>(codec: C, spec: &Spec) -> impl Work + '_ {
    move |plans, seed, links, start| worker::run(codec.clone(), spec, plans, seed, links, start)
}

/// Where a worker waits, its connections open, until every worker is ready and
/// the run's clock is set.
pub struct StartLine {
    ready: Arc<AtomicUsize>,
    clock: Arc<OnceLock<Timing>>,
}

impl StartLine {
    /// Reports this worker ready and waits for the common start.
    pub fn wait(self) -> Timing {
        self.ready.fetch_add(1, Ordering::SeqCst);
        loop {
            if let Some(t) = self.clock.get() {
                return *t;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// The first once-a-second tick of a run and the index of the second it ends
/// (negative during warm-up, 0 for the first measured second).
pub(crate) fn first_tick(timing: &Timing) -> (Instant, i64) {
    let mut next_tick = timing.measure_start;
    while next_tick > timing.t0 + Duration::from_secs(1) {
        next_tick -= Duration::from_secs(1);
    }
    if next_tick <= timing.t0 {
        next_tick += Duration::from_secs(1);
    }
    let second = (next_tick
        .saturating_duration_since(timing.measure_start)
        .as_secs_f64()
        .round() as i64)
        - (timing
            .measure_start
            .saturating_duration_since(next_tick)
            .as_secs_f64()
            .round() as i64)
        - 1;
    (next_tick, second)
}

/// On-CPU plus run-queue time of the calling thread (Linux schedstat), in ns.
pub(crate) fn thread_busy_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some(f.next()?? + f.next()??)
}

pub(crate) fn execute_with(
    spec: &Spec,
    shutdown: &AtomicBool,
    observer: &mut dyn Observer,
    work: impl Work,
) -> Result<EngineReport> {
    let work = &work;
    let threads = spec.threads.clamp(1, spec.connections.max(1));
    let (tx, rx) = mpsc::channel::<Tick>();
    // Start line: workers open their connections (counted in `opened`), report
    // `ready`, and wait for the clock, so everyone starts at the same instant.
    let opened = Arc::new(AtomicUsize::new(0));
    let ready = Arc::new(AtomicUsize::new(0));
    let clock: Arc<OnceLock<Timing>> = Arc::new(OnceLock::new());
    let release = AtomicBool::new(false);
    let release = &release;

    std::thread::scope(|scope| -> Result<EngineReport> {
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let plans: Vec<worker::ConnPlan> = (t..spec.connections)
                .step_by(threads)
                .map(|i| worker::ConnPlan {
                    index: i,
                    keys: KeyGen::new(spec.distribution, spec.keys, i, spec.connections),
                    quota: match spec.stop {
                        Stop::Requests(n) => {
                            let (a, b) = slice_of(n, i, spec.connections);
                            Some(b - a)
                        }
                        Stop::Duration(_) => None,
                    },
                })
                .collect();
            let (tx, ready, clock, opened) = (
                tx.clone(),
                Arc::clone(&ready),
                Arc::clone(&clock),
                Arc::clone(&opened),
            );
            let seed = spec.seed.wrapping_add(t as u64 * 0x9e37_79b9_7f4a_7c15);
            let h = std::thread::Builder::new()
                .name(format!("kvlab-worker-{t}"))
                .spawn_scoped(scope, move || {
                    let links = worker::Links {
                        shutdown,
                        ticks: tx,
                        opened: &opened,
                        release,
                    };
                    work(plans, seed, links, StartLine { ready, clock })
                })
                .context("cannot start a worker thread")?;
            handles.push(h);
        }
        drop(tx);
        while ready.load(Ordering::SeqCst) < threads {
            std::thread::sleep(Duration::from_millis(50));
            observer.connecting(opened.load(Ordering::Relaxed), spec.connections);
        }
        let timing = Timing::new(Instant::now(), spec.warmup, spec.stop);
        let _ = clock.set(timing);
        observer.started(spec.warmup);
        let mut seconds: BTreeMap<i64, (Counts, Histogram<u64>, Counts)> = BTreeMap::new();
        let mut measure_started = false;
        let mut last_shown = i64::MIN;
        let mut running = new_histogram();
        loop {
            let now = Instant::now();
            if !measure_started && now >= timing.measure_start {
                measure_started = true;
                observer.measure_started();
            }
            let wait = if measure_started {
                Duration::from_millis(200)
            } else {
                timing
                    .measure_start
                    .saturating_duration_since(now)
                    .min(Duration::from_millis(200))
            };
            match rx.recv_timeout(wait) {
                Ok(tick) => {
                    let e = seconds
                        .entry(tick.second)
                        .or_insert_with(|| (Counts::default(), new_histogram(), Counts::default()));
                    e.0.add(&tick.measured.counts);
                    let _ = e.1.add(&tick.measured.latency);
                    e.2.add(&tick.warmup);
                    let _ = running.add(&tick.measured.latency);
                    // Show the newest complete second once most workers reported it.
                    if tick.second > last_shown
                        && let Some((&s, v)) = seconds.range(..tick.second).next_back()
                        && s > last_shown
                    {
                        last_shown = s;
                        let elapsed = (timing.measure_start
                            + Duration::from_secs((s + 1).max(0) as u64))
                        .saturating_duration_since(timing.t0);
                        let p99 = v.1.value_at_quantile(0.99) as f64 / 1000.0;
                        observer.second(
                            elapsed,
                            v.0.requests() + v.2.requests(),
                            p99,
                            v.0.error_total() + v.2.error_total(),
                        );
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if !measure_started {
            observer.measure_started();
        }
        observer.measure_ended();
        release.store(true, Ordering::SeqCst);
        let mut reports = Vec::with_capacity(threads);
        for h in handles {
            let r = h
                .join()
                .map_err(|_| anyhow::anyhow!("a worker thread panicked"))?
                .context("a worker's event loop failed")?;
            reports.push(r);
        }
        Ok(merge(
            spec,
            reports,
            seconds,
            shutdown.load(std::sync::atomic::Ordering::Relaxed),
        ))
    })
}

fn merge(
    spec: &Spec,
    reports: Vec<worker::WorkerReport>,
    seconds: BTreeMap<i64, (Counts, Histogram<u64>, Counts)>,
    interrupted: bool,
) -> EngineReport {
    let mut measured = Recorder::default();
    let mut warmup = Counts::default();
    let mut schedule = ScheduleReport::default();
    let (mut cf, mut rc, mut last_err, mut est) = (0, 0, None, 0);
    let mut window = Duration::ZERO;
    let mut busy = Some(0u64);
    let mut leg_requests = [0u64; 5];
    for r in &reports {
        for (a, b) in leg_requests.iter_mut().zip(r.leg_requests) {
            *a += b;
        }
        measured.add(&r.measured);
        warmup.add(&r.warmup);
        schedule.merge(&r.schedule);
        cf += r.connect_failures;
        rc += r.reconnects;
        est += r.established;
        if r.last_connect_error.is_some() {
            last_err.clone_from(&r.last_connect_error);
        }
        window = window.max(r.window);
        busy = busy.zip(r.busy_ns).map(|(a, b)| a + b);
    }
    let client_busy =
        busy.map(|b| b as f64 / (window.as_nanos().max(1) as f64 * reports.len().max(1) as f64));
    // The drain after the deadline belongs to the last full second.
    let last_full = match spec.stop {
        Stop::Duration(d) => Some((d.ceil() as i64 - 1).max(0)),
        Stop::Requests(_) => None,
    };
    let mut folded: BTreeMap<i64, (Counts, Histogram<u64>)> = BTreeMap::new();
    for (s, (c, h, _)) in seconds.into_iter().filter(|(s, _)| *s >= 0) {
        let s = last_full.map_or(s, |l| s.min(l));
        let e = folded
            .entry(s)
            .or_insert_with(|| (Counts::default(), new_histogram()));
        e.0.add(&c);
        let _ = e.1.add(&h);
    }
    let timeline = folded
        .into_iter()
        .map(|(second, (c, h))| {
            let p = Percentiles::of(&h);
            Second {
                second,
                requests: c.requests(),
                errors: c.error_total(),
                timeouts: c.error(crate::stats::ErrorKind::Timeout),
                misses: c.misses,
                p50_us: p.p50,
                p99_us: p.p99,
            }
        })
        .collect();
    EngineReport {
        measured,
        warmup,
        timeline,
        window,
        schedule: spec.rate.map(|_| schedule),
        connect_failures: cf,
        reconnects: rc,
        established: est,
        last_connect_error: last_err,
        client_busy,
        interrupted,
        leg_requests,
    }
}
