//! The cache-aside hot loop: each client owns one cache connection and one
//! database connection and runs one request at a time through its steps:
//!
//! - read: GET from the cache; on a miss GET from the database, then SET the
//!   value into the cache (with the TTL, if any);
//! - write: SET in the database, then DELETE the cache entry (invalidate) or
//!   SET the new value there (update).
//!
//! End-to-end latency goes into the run's recorder, each step's into its leg;
//! every value read is verified and, when versions are tracked, judged for
//! staleness by the version it returned. Like [`super::worker`], it allocates
//! nothing per request and shares nothing between threads but atomics.
//!
//! The loop itself lives here, generic over both codecs
//! ([`execute_with_codecs`]); `steps` issues the steps of a request, `replies`
//! reads and judges their replies, `upkeep` handles timeouts and reconnection.
//! The registry (`products`) picks the concrete codecs.

mod replies;
mod steps;
mod upkeep;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use mio::{Events, Token};
use rand::rngs::SmallRng;

use super::clock::{StartLine, Timing};
use super::link::Link;
use super::pacer::{Pacer, ScheduleReport};
use super::rhythm::{Phase, Rhythm, TIMER, open_poll, unsent};
use super::run::{Work, execute_with};
use super::spec::{AsideSpec, ConnPlan, EngineReport, Links, Observer, Spec, Tick, WorkerReport};
use crate::stats::{Counts, ErrorKind, Leg, Recorder};
use crate::wire::{CacheCodec, Codec};
use crate::workload::{KeyGen, OpKind, OpMix, Values};

/// Runs one cache-aside point with `cache` as the cache's codec and `db` as
/// the database's (the database is `spec.connector`, the cache `aside.cache`).
pub fn execute_with_codecs<K: CacheCodec, D: Codec>(
    cache: K,
    db: D,
    spec: &Spec,
    aside: &AsideSpec,
    shutdown: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<EngineReport> {
    execute_with(spec, shutdown, observer, work(cache, db, spec, aside))
}

fn work<'a, K: CacheCodec, D: Codec>(
    cache: K,
    db: D,
    spec: &'a Spec,
    aside: &'a AsideSpec,
) -> impl Work + 'a {
    move |plans, seed, links, start| {
        run(
            Codecs {
                cache: cache.clone(),
                db: db.clone(),
            },
            spec,
            aside,
            plans,
            seed,
            links,
            start,
        )
    }
}

#[derive(Clone)]
struct Codecs<K, D> {
    cache: K,
    db: D,
}

/// Whether `leg` is a step on the cache connection (else on the database's).
fn is_cache_step(leg: Leg) -> bool {
    !matches!(leg, Leg::DbGet | Leg::DbSet)
}

/// The request a client has in flight.
#[derive(Clone, Copy)]
struct Op {
    kind: OpKind,
    key: u64,
    /// SET: the version written; GET: the newest completed version at the start.
    version: u64,
    /// Version the read returned (from the cache or the database).
    got: Option<u64>,
    intended: Instant,
    began: Instant,
    step: Leg,
    step_sent: Instant,
    measured: bool,
}

struct Client<K, D> {
    cache: Link<K>,
    db: Link<D>,
    keys: KeyGen,
    quota: Option<u64>,
    due: Instant,
    op: Option<Op>,
    index: usize,
    /// A connection refused at the start: this client never runs.
    refused: bool,
}

struct Ctx<'a> {
    registry: mio::Registry,
    spec: &'a Spec,
    aside: &'a AsideSpec,
    timing: Timing,
    pacer: Option<Pacer>,
    mix: OpMix,
    values: &'a Values,
    rng: SmallRng,
    key: Vec<u8>,
    value: Vec<u8>,
    interval: Recorder,
    interval_warm: Counts,
    total: Recorder,
    warm: Counts,
    schedule: ScheduleReport,
    leg_requests: [u64; 5],
    inflight: usize,
    quota_left: Option<u64>,
    connect_failures: u64,
    reconnects: u64,
    last_connect_error: Option<String>,
    draining: bool,
}

#[allow(clippy::too_many_arguments)]
fn run<K: CacheCodec, D: Codec>(
    codecs: Codecs<K, D>,
    spec: &Spec,
    aside: &AsideSpec,
    plans: Vec<ConnPlan>,
    seed: u64,
    links: Links<'_>,
    start: StartLine,
) -> io::Result<WorkerReport> {
    let Links {
        shutdown,
        ticks,
        opened,
        release,
    } = links;
    let (mut poll, registry, start) = open_poll(start)?;
    let now = Instant::now();
    let rbuf = (2 * spec.values.size() + 4096).max(16 * 1024);
    let mut clients: Vec<Client<K, D>> = plans
        .into_iter()
        .enumerate()
        .map(|(i, p)| Client {
            cache: Link::new(codecs.cache.clone(), Token(2 * i), rbuf / 2, rbuf, now),
            db: Link::new(codecs.db.clone(), Token(2 * i + 1), rbuf / 2, rbuf, now),
            keys: p.keys,
            quota: p.quota,
            due: now,
            op: None,
            index: p.index,
            refused: false,
        })
        .collect();
    let mut cx = Ctx {
        registry,
        spec,
        aside,
        timing: Timing::placeholder(now),
        pacer: spec.rate.map(|r| Pacer::new(r, spec.share.total)),
        mix: spec.mix,
        values: &spec.values,
        rng: crate::workload::rng(seed),
        key: Vec::with_capacity(spec.key_prefix.len() + 24),
        value: Vec::with_capacity(spec.values.size()),
        interval: aside_recorder(),
        interval_warm: Counts::default(),
        total: aside_recorder(),
        warm: Counts::default(),
        schedule: ScheduleReport {
            target_rps: spec.rate.unwrap_or(0.0),
            ..Default::default()
        },
        leg_requests: [0; 5],
        inflight: 0,
        quota_left: None,
        connect_failures: 0,
        reconnects: 0,
        last_connect_error: None,
        draining: false,
    };
    let connect_timeout = spec.timeout.min(Duration::from_secs(2));
    for c in clients.iter_mut() {
        if shutdown.load(Ordering::Relaxed) {
            break;
        }
        let a = c.cache.open(&aside.cache, &cx.registry, connect_timeout);
        let b = c.db.open(&spec.connector, &cx.registry, connect_timeout);
        for e in [a.err(), b.err()].into_iter().flatten() {
            cx.connect_failed(e);
        }
        c.refused = c.cache.stream.is_none() || c.db.stream.is_none();
        opened.fetch_add(1, Ordering::Relaxed);
    }
    let established = clients.iter().filter(|c| !c.refused).count();
    cx.quota_left = clients.iter().filter(|c| !c.refused).map(|c| c.quota).sum();
    let timing = start.wait(shutdown);
    cx.timing = timing;
    for c in clients.iter_mut() {
        c.due = match cx.pacer {
            Some(p) => p.first_due(timing.t0, c.index),
            None => timing.t0,
        };
    }
    let mut rhythm = Rhythm::new(&poll, timing, cx.pacer.is_some())?;
    let mut events = Events::with_capacity(1024);
    let window_end;
    if cx.pacer.is_none() {
        for c in clients.iter_mut() {
            cx.next(c, timing.t0);
        }
    }
    loop {
        let now = Instant::now();
        let over = shutdown.load(Ordering::Relaxed)
            || timing.deadline.is_some_and(|d| now >= d)
            || cx.quota_left == Some(0);
        if rhythm.begin(now, over, spec.timeout, cx.inflight) != Phase::Running {
            cx.draining = true;
            for c in clients.iter_mut() {
                cx.fail(c, ErrorKind::Timeout, now);
            }
            window_end = now;
            break;
        }
        cx.draining = rhythm.draining;
        if let Some(second) = rhythm.tick_due(now) {
            cx.send_tick(&ticks, second);
        }
        if rhythm.housekeeping_due(now, Duration::from_millis(5)) {
            // Re-connecting blocks this thread: at most two attempts per pass.
            let mut attempts = 2;
            for c in clients.iter_mut() {
                cx.housekeep(c, now, &mut attempts);
            }
        }
        let mut wake = rhythm.wake();
        if cx.pacer.is_some() && !cx.draining {
            for c in clients.iter_mut() {
                if c.op.is_none() {
                    if c.due <= now {
                        cx.next(c, now);
                    }
                    if c.op.is_none() && cx.may_issue(c, c.due) && cx.ready(c) {
                        wake = wake.min(c.due);
                    }
                }
            }
        }
        rhythm.poll(&mut poll, &mut events, wake)?;
        let now = Instant::now();
        for ev in events.iter() {
            if ev.token() == TIMER {
                continue;
            }
            let Some(c) = clients.get_mut(ev.token().0 / 2) else {
                continue;
            };
            let on_cache = ev.token().0 % 2 == 0;
            if ev.is_writable() {
                let r = if on_cache {
                    c.cache.flush(&cx.registry)
                } else {
                    c.db.flush(&cx.registry)
                };
                if r.is_err() {
                    cx.broke(c, on_cache, now);
                    continue;
                }
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                cx.on_readable(c, on_cache, now);
            }
        }
    }
    // Requests the schedule called for but that were never sent.
    if let (Some(p), Some(deadline)) = (cx.pacer, timing.deadline) {
        for c in &clients {
            if !c.refused && c.quota != Some(0) {
                cx.schedule.unsent += unsent(c.due, deadline, p.per_conn);
            }
        }
    }
    cx.send_tick(&ticks, rhythm.last_second());
    drop(ticks);
    while !release.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_micros(500));
    }
    Ok(WorkerReport {
        measured: cx.total,
        warmup: cx.warm,
        schedule: cx.schedule,
        connect_failures: cx.connect_failures,
        reconnects: cx.reconnects,
        established,
        last_connect_error: cx.last_connect_error,
        busy_ns: rhythm.busy_ns(),
        window: window_end.saturating_duration_since(timing.measure_start),
        leg_requests: cx.leg_requests,
        redirects: [0; 2],
    })
}

fn aside_recorder() -> Recorder {
    Recorder {
        legs: Some(Box::default()),
        ..Recorder::default()
    }
}

impl Ctx<'_> {
    /// Hands this second's counts to the calling thread and starts afresh.
    fn send_tick(&mut self, ticks: &std::sync::mpsc::Sender<Tick>, second: i64) {
        let rec = std::mem::replace(&mut self.interval, aside_recorder());
        let warm = std::mem::take(&mut self.interval_warm);
        self.total.add(&rec);
        self.warm.add(&warm);
        let _ = ticks.send(Tick {
            second,
            measured: rec,
            warmup: warm,
        });
    }
}
