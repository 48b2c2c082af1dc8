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
            // Connections are numbered over the whole run (every client
            // process), so quotas, schedule offsets and key slices add up.
            let share = spec.share;
            let plans: Vec<ConnPlan> = (t..spec.connections)
                .step_by(threads)
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
                    let links = Links {
                        shutdown,
                        ticks: tx,
                        opened: &opened,
                        release,
                        trace: spec.trace.as_ref().and_then(|f| f.take(t)),
                    };
                    request_loop::run(
                        client(),
                        spec,
                        plans,
                        seed,
                        links,
                        StartLine { ready, clock },
                    )
                })
                .context("cannot start a worker thread")?;
            handles.push(h);
        }
        drop(tx);
        while ready.load(Ordering::SeqCst) < threads {
            std::thread::sleep(Duration::from_millis(50));
            observer.connecting(opened.load(Ordering::Relaxed), spec.connections);
        }
        let (timing, margin) = match start_instant(spec) {
            Ok(t) => t,
            Err(late) => {
                // Too late to start with the others: release the workers at
                // once (their deadline has passed), then fail.
                let now = Instant::now();
                let _ = clock.set(Timing {
                    t0: now,
                    measure_start: now,
                    deadline: Some(now),
                });
                drop(rx);
                release.store(true, Ordering::SeqCst);
                for h in handles {
                    let _ = h.join();
                }
                anyhow::bail!(
                    "--start-at: this client was ready {:.0} ms after its {:.1} s warm-up had to begin; give a --start-at further ahead (or a shorter --warmup)",
                    late.as_secs_f64() * 1e3,
                    spec.warmup.as_secs_f64()
                );
            }
        };
        let window_start = SystemTime::now() + timing.measure_start.duration_since(Instant::now());
        let window_start = spec.start_at.unwrap_or(window_start);
        let _ = clock.set(timing);
        match margin {
            Some(left) => observer.waiting(left, spec.warmup),
            None => observer.started(spec.warmup),
        }
        let mut late = Duration::ZERO;
        let per_second = i64::from(spec.timeline_seconds.max(1));
        // The timeline's entries by their first second: at most
        // `per_second` seconds and then a minute each.
        let mut entries = Timeline::default();
        // The last few seconds, warm-up included, for the progress display.
        let mut recent: BTreeMap<i64, Acc> = BTreeMap::new();
        let mut measure_started = false;
        let mut last_shown = i64::MIN;
        // The next second of the window whose start the observer is told of.
        let mut boundary: i64 = 0;
        loop {
            let now = Instant::now();
            if !measure_started && now >= timing.measure_start {
                measure_started = true;
                late = now - timing.measure_start;
                observer.measure_started();
            }
            let next = timing.measure_start + Duration::from_secs(boundary.max(0) as u64);
            if measure_started && now >= next {
                observer.second_begins(boundary);
                boundary += 1;
            }
            let next = timing.measure_start + Duration::from_secs(boundary.max(0) as u64);
            let wait = next
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(1), Duration::from_millis(200));
            match rx.recv_timeout(wait) {
                Ok(tick) => {
                    observer.tick(&tick);
                    if tick.second >= 0 {
                        entries.add(&tick, per_second);
                    }
                    recent.entry(tick.second).or_default().add(&tick);
                    // Show the newest complete second once most workers reported it.
                    if tick.second > last_shown
                        && let Some((&s, v)) = recent.range_mut(..tick.second).next_back()
                        && s > last_shown
                    {
                        last_shown = s;
                        let elapsed = (timing.measure_start
                            + Duration::from_secs((s + 1).max(0) as u64))
                        .saturating_duration_since(timing.t0);
                        observer.second(&v.beat(s, elapsed));
                    }
                    while recent.len() > RECENT {
                        recent.pop_first();
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
        let mut report = merge(
            spec,
            reports,
            entries,
            shutdown.load(std::sync::atomic::Ordering::Relaxed),
        );
        report.window_start = window_start;
        report.start = margin.map(|margin| StartReport { late, margin });
        Ok(report)
    })
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
    let (mut cf, mut rc, mut last_err, mut est) = (0, 0, None, 0);
    let mut window = Duration::ZERO;
    let mut busy = Some(0u64);
    let mut leg_requests = [0u64; 5];
    let mut redirects = [0u64; 2];
    for r in &reports {
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
        established: est,
        last_connect_error: last_err,
        client_busy,
        interrupted,
        leg_requests,
        redirects,
        nodes: spec.topology.as_ref().map(|t| t.nodes.len()),
        window_start: SystemTime::now(),
        start: None,
    }
}
