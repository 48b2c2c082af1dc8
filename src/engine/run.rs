//! Running one point: T worker threads at one start line, their per-second
//! ticks merged into the timeline (per second for the spec's
//! `timeline_seconds`, per minute after them: memory and results stay bounded
//! over hours) and shown to the [`Observer`], and their reports merged into
//! one [`EngineReport`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};

use super::clock::{StartLine, Timing};
use super::plain::Plain;
use super::request_loop::{self, Client};
use super::spec::{ConnPlan, EngineReport, Links, Observer, Spec, StartReport, Tick, WorkerReport};
use super::timeline::{Acc, RECENT, Timeline, fold_timeline};
use crate::driver::wire::Codec;
use crate::results::ScheduleReport;
use crate::results::stats::{Counts, Recorder};
use crate::workload::{KeyGen, Stop, slice_of};

/// Runs one point with `codec` to its end (or until `shutdown`), reporting to
/// `observer`. The registry picks the codec of the point's product.
pub fn execute_with_codec<C: Codec>(
    codec: C,
    spec: &Spec,
    shutdown: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<EngineReport> {
    execute_with(spec, shutdown, observer, || Plain::new(codec.clone(), spec))
}

/// Runs one point: spawns the threads, each running the request loop with the
/// client `client` makes on its share of the connections, and merges what
/// they report.
pub(crate) fn execute_with<Cl: Client>(
    spec: &Spec,
    shutdown: &AtomicBool,
    observer: &mut dyn Observer,
    client: impl Fn() -> Cl + Sync,
) -> Result<EngineReport> {
    let client = &client;
    let io = super::reactor::choose(spec.io, spec.uses_tls())?;
    let threads = spec.threads.clamp(1, spec.connections.max(1));
    let (tx, rx) = mpsc::channel::<Tick>();
    let gate = Gate::default();
    std::thread::scope(|scope| -> Result<EngineReport> {
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let worker = Worker {
                spec,
                t,
                threads,
                shutdown,
                gate: &gate,
                io: io.kind,
            };
            handles.push(worker.spawn(scope, tx.clone(), client)?);
        }
        drop(tx);
        gate.wait_ready(threads, spec.connections, observer);
        let (timing, margin) = match start_instant(spec) {
            Ok(t) => t,
            Err(late) => return Err(gate.too_late(spec, late, rx, handles)),
        };
        let window_start = SystemTime::now() + timing.measure_start.duration_since(Instant::now());
        let window_start = spec.start_at.unwrap_or(window_start);
        let _ = gate.clock.set(timing);
        match margin {
            Some(left) => observer.waiting(left, spec.warmup),
            None => observer.started(spec.warmup),
        }
        let (entries, late) = Follow::new(spec, timing).run(&rx, observer);
        gate.release.store(true, Ordering::SeqCst);
        let reports = join(handles)?;
        let mut report = merge(spec, reports, entries, shutdown.load(Ordering::Relaxed));
        report.window_start = window_start;
        report.io = Some(io);
        report.start = margin.map(|margin| StartReport { late, margin });
        Ok(report)
    })
}

/// The start line and the end of a run, shared by the workers and the
/// calling thread: workers open their connections (counted in `opened`),
/// report `ready` and wait for the `clock`, so everyone starts at the same
/// instant; they close their connections once `release` is set.
#[derive(Default)]
struct Gate {
    opened: Arc<AtomicUsize>,
    ready: Arc<AtomicUsize>,
    clock: Arc<OnceLock<Timing>>,
    release: AtomicBool,
}

impl Gate {
    /// Waits until `threads` workers are ready, showing the connections opened.
    fn wait_ready(&self, threads: usize, connections: usize, observer: &mut dyn Observer) {
        while self.ready.load(Ordering::SeqCst) < threads {
            std::thread::sleep(Duration::from_millis(50));
            observer.connecting(self.opened.load(Ordering::Relaxed), connections);
        }
    }

    /// Too late to start with the others: releases the workers at once
    /// (their deadline has passed), waits for them, and says why.
    fn too_late<T>(
        &self,
        spec: &Spec,
        late: Duration,
        rx: mpsc::Receiver<Tick>,
        handles: Vec<ScopedJoinHandle<'_, T>>,
    ) -> anyhow::Error {
        let now = Instant::now();
        let _ = self.clock.set(Timing {
            t0: now,
            measure_start: now,
            deadline: Some(now),
        });
        drop(rx);
        self.release.store(true, Ordering::SeqCst);
        for h in handles {
            let _ = h.join();
        }
        anyhow::anyhow!(
            "--start-at: this client was ready {:.0} ms after its {:.1} s warm-up had to begin; give a --start-at further ahead (or a shorter --warmup)",
            late.as_secs_f64() * 1e3,
            spec.warmup.as_secs_f64()
        )
    }
}

/// One worker thread of a run: its number among `threads`.
struct Worker<'a> {
    spec: &'a Spec,
    t: usize,
    threads: usize,
    shutdown: &'a AtomicBool,
    gate: &'a Gate,
    io: super::reactor::IoKind,
}

impl<'a> Worker<'a> {
    /// Starts the thread: the request loop with a client from `client` on
    /// this worker's connections, its ticks sent to `tx`.
    fn spawn<'scope, Cl: Client>(
        self,
        scope: &'scope Scope<'scope, '_>,
        tx: mpsc::Sender<Tick>,
        client: &'a (impl Fn() -> Cl + Sync),
    ) -> Result<ScopedJoinHandle<'scope, std::io::Result<WorkerReport>>>
    where
        'a: 'scope,
    {
        let Worker {
            spec,
            t,
            shutdown,
            gate,
            io,
            ..
        } = self;
        let plans = self.plans();
        let (ready, clock) = (Arc::clone(&gate.ready), Arc::clone(&gate.clock));
        let seed = spec
            .seed
            .wrapping_add((t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        std::thread::Builder::new()
            .name(format!("kvlab-worker-{t}"))
            .spawn_scoped(scope, move || {
                let links = Links {
                    shutdown,
                    ticks: tx,
                    opened: &gate.opened,
                    release: &gate.release,
                    trace: spec.trace.as_ref().and_then(|f| f.take(t)),
                    io,
                };
                let start = StartLine { ready, clock };
                request_loop::run(client(), spec, plans, seed, links, start)
            })
            .context("cannot start a worker thread")
    }

    /// This worker's connections. They are numbered over the whole run
    /// (every client process), so quotas, schedule offsets and key slices
    /// add up.
    fn plans(&self) -> Vec<ConnPlan> {
        let spec = self.spec;
        let share = spec.share;
        (self.t..spec.connections)
            .step_by(self.threads)
            .map(|i| share.first + i)
            .map(|i| ConnPlan {
                index: i,
                keys: KeyGen::new(spec.distribution, spec.keys, i, share.total),
                quota: match spec.stop {
                    Stop::Requests(n) => {
                        let (a, b) = slice_of(n, i, share.total);
                        Some(b - a)
                    }
                    Stop::Duration(_) => None,
                },
            })
            .collect()
    }
}

/// Waits for every worker's report.
fn join(
    handles: Vec<ScopedJoinHandle<'_, std::io::Result<WorkerReport>>>,
) -> Result<Vec<WorkerReport>> {
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .map_err(|_| anyhow::anyhow!("a worker thread panicked"))?
                .context("a worker's event loop failed")
        })
        .collect()
}

/// The calling thread during the run: it gathers the workers' ticks into the
/// timeline and tells the observer of the window's start, each second's
/// start, each tick and each complete second.
struct Follow {
    timing: Timing,
    /// Seconds kept one by one before the timeline goes by the minute.
    per_second: i64,
    /// The timeline's entries by their first second: at most `per_second`
    /// seconds and then a minute each.
    entries: Timeline,
    /// The last few seconds, warm-up included, for the progress display.
    recent: BTreeMap<i64, Acc>,
    /// How late the measured window was seen to start, once it has.
    late: Option<Duration>,
    /// The newest second shown.
    last_shown: i64,
    /// The next second of the window whose start the observer is told of.
    boundary: i64,
}

impl Follow {
    fn new(spec: &Spec, timing: Timing) -> Follow {
        Follow {
            timing,
            per_second: i64::from(spec.timeline_seconds.max(1)),
            entries: Timeline::default(),
            recent: BTreeMap::new(),
            late: None,
            last_shown: i64::MIN,
            boundary: 0,
        }
    }

    /// Follows the run until every worker has dropped its sender: the
    /// timeline, and how late the measured window was seen to start.
    fn run(
        mut self,
        rx: &mpsc::Receiver<Tick>,
        observer: &mut dyn Observer,
    ) -> (Timeline, Duration) {
        loop {
            let wait = self.clock(observer);
            match rx.recv_timeout(wait) {
                Ok(tick) => self.tick(&tick, observer),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if self.late.is_none() {
            observer.measure_started();
        }
        observer.measure_ended();
        (self.entries, self.late.unwrap_or_default())
    }

    /// Tells the observer of the window's start and of a second's start as
    /// they come; how long to wait for a tick before looking again.
    fn clock(&mut self, observer: &mut dyn Observer) -> Duration {
        let now = Instant::now();
        let start = self.timing.measure_start;
        if self.late.is_none() && now >= start {
            self.late = Some(now - start);
            observer.measure_started();
        }
        let next = start + Duration::from_secs(self.boundary.max(0) as u64);
        if self.late.is_some() && now >= next {
            observer.second_begins(self.boundary);
            self.boundary += 1;
        }
        let next = start + Duration::from_secs(self.boundary.max(0) as u64);
        next.saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(1), Duration::from_millis(200))
    }

    /// Adds a worker's tick; shows the newest complete second once most
    /// workers reported it.
    fn tick(&mut self, tick: &Tick, observer: &mut dyn Observer) {
        observer.tick(tick);
        if tick.second >= 0 {
            self.entries.add(tick, self.per_second);
        }
        self.recent.entry(tick.second).or_default().add(tick);
        if tick.second > self.last_shown
            && let Some((&s, v)) = self.recent.range_mut(..tick.second).next_back()
            && s > self.last_shown
        {
            self.last_shown = s;
            let elapsed = (self.timing.measure_start + Duration::from_secs((s + 1).max(0) as u64))
                .saturating_duration_since(self.timing.t0);
            observer.second(&v.beat(s, elapsed));
        }
        while self.recent.len() > RECENT {
            self.recent.pop_first();
        }
    }
}

/// The clock of a point whose connections are open now: it starts at once,
/// or, with a wall-clock start instant, its warm-up begins `warmup` before
/// that instant (with how long ahead of then the connections were open).
/// `Err`: how late this process is for that.
fn start_instant(spec: &Spec) -> Result<(Timing, Option<Duration>), Duration> {
    let now = Instant::now();
    let Some(at) = spec.start_at else {
        return Ok((Timing::new(now, spec.warmup, spec.stop), None));
    };
    let wall = SystemTime::now();
    match at.duration_since(wall) {
        Ok(ahead) if ahead >= spec.warmup => {
            let margin = ahead - spec.warmup;
            Ok((
                Timing::new(now + margin, spec.warmup, spec.stop),
                Some(margin),
            ))
        }
        Ok(ahead) => Err(spec.warmup - ahead),
        Err(past) => Err(past.duration() + spec.warmup),
    }
}

fn merge(
    spec: &Spec,
    reports: Vec<WorkerReport>,
    ticks: Timeline,
    interrupted: bool,
) -> EngineReport {
    let mut measured = Recorder::default();
    let mut warmup = Counts::default();
    let mut schedule = ScheduleReport::default();
    let (mut cf, mut rc, mut last_err, mut est, mut churned) = (0, 0, None, 0, [0; 2]);
    let mut window = Duration::ZERO;
    let mut busy = Some(0u64);
    let mut leg_requests = [0u64; 5];
    let mut redirects = [0u64; 2];
    let mut near: Option<super::counts::NearCounts> = None;
    let mut nodes = vec![Default::default(); spec.replicas.len() + 1];
    let mut wakes = Some(super::spec::WakeCounts::default());
    for r in &reports {
        wakes = wakes.zip(r.wakes).map(|(a, b)| a + b);
        for (a, b) in nodes.iter_mut().zip(&r.nodes) {
            super::counts::NodeCounts::add(a, b);
        }
        if let Some(n) = &r.near {
            near.get_or_insert_with(Default::default).add(n);
        }
        redirects[0] += r.redirects[0];
        redirects[1] += r.redirects[1];
        for (a, b) in leg_requests.iter_mut().zip(r.leg_requests) {
            *a += b;
        }
        measured.add(&r.measured);
        warmup.add(&r.warmup);
        schedule.merge(&r.schedule);
        cf += r.connect_failures;
        rc += r.reconnects;
        churned[0] += r.churned[0];
        churned[1] += r.churned[1];
        est += r.established;
        if r.last_connect_error.is_some() {
            last_err.clone_from(&r.last_connect_error);
        }
        window = window.max(r.window);
        busy = busy.zip(r.busy_ns).map(|(a, b)| a + b);
    }
    // Waiting for a CPU counts as busy, and a thread's clock runs past the
    // window by its drain: a share, never above 1.
    let client_busy = busy.map(|b| {
        (b as f64 / (window.as_nanos().max(1) as f64 * reports.len().max(1) as f64)).min(1.0)
    });
    schedule.set_send_errors(&measured.send_error);
    let per_second = i64::from(spec.timeline_seconds.max(1));
    let timeline = fold_timeline(spec.stop, per_second, ticks);
    EngineReport {
        measured,
        warmup,
        timeline,
        window,
        schedule: spec.rate.map(|_| schedule),
        connect_failures: cf,
        reconnects: rc,
        churned,
        established: est,
        last_connect_error: last_err,
        client_busy,
        interrupted,
        leg_requests,
        redirects,
        near,
        nodes: spec.topology.as_ref().map(|t| t.nodes.len()),
        servers_sent: if spec.replicas.is_empty() {
            Vec::new()
        } else {
            nodes
        },
        window_start: SystemTime::now(),
        start: None,
        wakes,
        io: None,
    }
}
