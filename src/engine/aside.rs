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

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use mio::{Events, Token};
use rand::rngs::SmallRng;

use super::link::Link;
use super::pacer::{Pacer, ScheduleReport};
use super::rhythm::{Phase, Rhythm, TIMER, draw, note_lag, open_poll, unsent};
use super::worker::{ConnPlan, Links, WorkerReport};
use super::{AsideSpec, EngineReport, Observer, Spec, StartLine, Tick, Timing, execute_with};
use crate::wire::{CacheCodec, Codec, Decoded, Key, Reply};
use crate::workload::WritePolicy;
use crate::stats::{Counts, ErrorKind, Leg, Outcome, Recorder};
use crate::workload::{KeyGen, OpKind, OpMix, Values, write_key};

/// Runs one cache-aside point with codecs `cache` and `db` (the database is
/// `spec.connector`).
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
) -> impl super::Work + 'a {
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
        pacer: spec.rate.map(|r| Pacer::new(r, spec.connections)),
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
    let timing = start.wait();
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
    })
}

fn aside_recorder() -> Recorder {
    Recorder {
        legs: Some(Box::default()),
        ..Recorder::default()
    }
}

impl Ctx<'_> {
    fn connect_failed(&mut self, e: io::Error) {
        self.connect_failures += 1;
        if self.last_connect_error.is_none() || self.connect_failures % 1000 == 1 {
            self.last_connect_error = Some(e.to_string());
        }
    }

    fn ready<K, D>(&self, c: &Client<K, D>) -> bool {
        !c.refused && c.cache.stream.is_some() && c.db.stream.is_some()
    }

    fn may_issue<K, D>(&self, c: &Client<K, D>, intended: Instant) -> bool {
        if self.draining || self.timing.deadline.is_some_and(|d| intended >= d) {
            return false;
        }
        !(intended >= self.timing.measure_start && c.quota == Some(0))
    }

    /// Starts the client's next request when it may (closed loop: now; paced:
    /// when due).
    fn next<K: CacheCodec, D: Codec>(&mut self, c: &mut Client<K, D>, now: Instant) {
        if c.op.is_some() || !self.ready(c) {
            return;
        }
        let intended = match self.pacer {
            None => now,
            Some(p) => {
                if c.due > now {
                    return;
                }
                note_lag(&mut self.schedule, now - c.due);
                let due = c.due;
                if !self.may_issue(c, due) {
                    return;
                }
                c.due += p.per_conn;
                due
            }
        };
        if !self.may_issue(c, intended) {
            return;
        }
        // Writes to one key never overlap (see `consistency`).
        let (kind, key, version) = draw(
            &self.mix,
            &mut c.keys,
            self.spec.board.as_deref(),
            &mut self.rng,
        );
        let measured = intended >= self.timing.measure_start;
        if measured && let Some(q) = c.quota.as_mut() {
            *q -= 1;
            if let Some(t) = self.quota_left.as_mut() {
                *t -= 1;
            }
        }
        let step = if kind == OpKind::Get {
            Leg::CacheGet
        } else {
            Leg::DbSet
        };
        c.op = Some(Op {
            kind,
            key,
            version,
            got: None,
            intended,
            began: now,
            step,
            step_sent: now,
            measured,
        });
        self.inflight += 1;
        if kind == OpKind::Set {
            self.value.clear();
            self.values.write_version(key, version, &mut self.value);
        }
        self.send(c, step, now);
    }

    /// Encodes and sends `step` of the client's request (the value to write or
    /// fill is in `self.value`).
    fn send<K: CacheCodec, D: Codec>(&mut self, c: &mut Client<K, D>, step: Leg, now: Instant) {
        let down = if is_cache_step(step) {
            c.cache.stream.is_none()
        } else {
            c.db.stream.is_none()
        };
        let Some(op) = c.op.as_mut() else { return };
        op.step = step;
        op.step_sent = now;
        if down {
            // The other connection broke while this request was on its way.
            return self.fail(c, ErrorKind::Disconnect, now);
        }
        self.leg_requests[step as usize] += 1;
        write_key(&self.spec.key_prefix, op.key, &mut self.key);
        let k = Key {
            id: op.key,
            name: &self.key,
        };
        let ttl = self.aside.ttl_s;
        match step {
            Leg::CacheGet => c.cache.codec.encode_get(k, &mut c.cache.wbuf),
            Leg::DbGet => c.db.codec.encode_get(k, &mut c.db.wbuf),
            Leg::CacheFill => c
                .cache
                .codec
                .encode_set_ttl(k, &self.value, ttl, &mut c.cache.wbuf),
            Leg::DbSet => c.db.codec.encode_set(k, &self.value, &mut c.db.wbuf),
            Leg::CacheWrite => match self.aside.policy {
                WritePolicy::Invalidate => c.cache.codec.encode_delete(k, &mut c.cache.wbuf),
                WritePolicy::Update => {
                    c.cache
                        .codec
                        .encode_set_ttl(k, &self.value, ttl, &mut c.cache.wbuf)
                }
            },
        }
        let r = if is_cache_step(step) {
            c.cache.flush(&self.registry)
        } else {
            c.db.flush(&self.registry)
        };
        if r.is_err() {
            self.broke(c, is_cache_step(step), now);
        }
    }

    fn on_readable<K: CacheCodec, D: Codec>(
        &mut self,
        c: &mut Client<K, D>,
        on_cache: bool,
        now: Instant,
    ) {
        let filled = if on_cache {
            c.cache.fill()
        } else {
            c.db.fill()
        };
        if !matches!(filled, Ok(true)) {
            return self.broke(c, on_cache, now);
        }
        loop {
            let op = match c.op {
                Some(op) if is_cache_step(op.step) == on_cache => op,
                _ => {
                    // Bytes nobody waits for on this connection: out of step.
                    let buffered = if on_cache {
                        c.cache.rend > c.cache.rstart
                    } else {
                        c.db.rend > c.db.rstart
                    };
                    if buffered {
                        self.broke(c, on_cache, now);
                    }
                    return;
                }
            };
            let decoded = if on_cache {
                let buf = &c.cache.rbuf[c.cache.rstart..c.cache.rend];
                match op.step {
                    Leg::CacheGet => c.cache.codec.decode(OpKind::Get, buf),
                    Leg::CacheWrite if self.aside.policy == WritePolicy::Invalidate => {
                        c.cache.codec.decode_delete(buf)
                    }
                    _ => c.cache.codec.decode(OpKind::Set, buf),
                }
            } else {
                let buf = &c.db.rbuf[c.db.rstart..c.db.rend];
                let kind = if op.step == Leg::DbGet {
                    OpKind::Get
                } else {
                    OpKind::Set
                };
                c.db.codec.decode(kind, buf)
            };
            match decoded {
                Ok(Decoded::Incomplete) => return,
                Err(_) => {
                    self.leg_done(&op, now, false, true);
                    self.finish(c, Outcome::Error(ErrorKind::Protocol), now);
                    return self.broke(c, on_cache, now);
                }
                Ok(Decoded::Frame { len, reply }) => {
                    // The reply's bytes stay in the buffer until the next read.
                    let start = if on_cache {
                        c.cache.rstart += len;
                        c.cache.rstart - len
                    } else {
                        c.db.rstart += len;
                        c.db.rstart - len
                    };
                    self.advance(c, op, reply, start, now);
                }
            }
        }
    }

    /// Takes the reply to the current step and sends the next step or finishes.
    /// `base`: where the decoded buffer starts in the link's read buffer.
    fn advance<K: CacheCodec, D: Codec>(
        &mut self,
        c: &mut Client<K, D>,
        op: Op,
        reply: Reply,
        base: usize,
        now: Instant,
    ) {
        let ok = !matches!(reply, Reply::ServerError);
        self.leg_done(&op, now, ok, true);
        let server_error = Outcome::Error(ErrorKind::Server);
        match (op.step, reply) {
            (_, Reply::ServerError) => self.finish(c, server_error, now),
            (Leg::CacheGet, Reply::Value(r)) => {
                let v = &c.cache.rbuf[base + r.start..base + r.end];
                self.count_cache(&op, true);
                match self.values.verify(op.key, v) {
                    Some(got) => {
                        set_got(c, got);
                        self.finish(c, Outcome::Hit, now);
                    }
                    None => self.finish(c, Outcome::Error(ErrorKind::WrongValue), now),
                }
            }
            (Leg::CacheGet, Reply::Nil) => {
                self.count_cache(&op, false);
                self.send(c, Leg::DbGet, now);
            }
            (Leg::DbGet, Reply::Value(r)) => {
                let v = &c.db.rbuf[base + r.start..base + r.end];
                match self.values.verify(op.key, v) {
                    Some(got) => {
                        self.value.clear();
                        self.value.extend_from_slice(v);
                        set_got(c, got);
                        self.send(c, Leg::CacheFill, now);
                    }
                    None => self.finish(c, Outcome::Error(ErrorKind::WrongValue), now),
                }
            }
            (Leg::DbGet, Reply::Nil) => self.finish(c, Outcome::Miss, now),
            (Leg::CacheFill, Reply::Stored) => self.finish(c, Outcome::Hit, now),
            (Leg::DbSet, Reply::Stored) => {
                self.value.clear();
                self.values
                    .write_version(op.key, op.version, &mut self.value);
                self.send(c, Leg::CacheWrite, now);
            }
            (Leg::CacheWrite, Reply::Stored) => self.finish(c, Outcome::Stored, now),
            _ => self.finish(c, Outcome::Error(ErrorKind::Protocol), now),
        }
    }

    fn count_cache(&mut self, op: &Op, hit: bool) {
        if !op.measured {
            return;
        }
        if let Some(l) = self.interval.legs.as_mut() {
            if hit {
                l.cache_hits += 1;
            } else {
                l.cache_misses += 1;
            }
        }
    }

    /// Records the end of the current step: `ok` (a good reply), a failed reply,
    /// or (`replied` false) no reply at all.
    fn leg_done(&mut self, op: &Op, now: Instant, ok: bool, replied: bool) {
        if !op.measured {
            return;
        }
        if let Some(l) = self.interval.legs.as_mut() {
            let i = op.step as usize;
            l.replies[i] += u64::from(replied);
            if ok {
                let ns = now.saturating_duration_since(op.step_sent).as_nanos() as u64;
                l.latency[i].saturating_record(ns.max(1));
            } else {
                l.errors[i] += 1;
            }
        }
    }

    /// Ends the client's request with `outcome`, records it, and starts the next.
    fn finish<K: CacheCodec, D: Codec>(
        &mut self,
        c: &mut Client<K, D>,
        outcome: Outcome,
        now: Instant,
    ) {
        let Some(op) = c.op.take() else { return };
        self.inflight -= 1;
        let get = op.kind == OpKind::Get;
        let mut stale = None;
        if let Some(b) = &self.spec.board {
            if get {
                if outcome == Outcome::Hit {
                    stale = op.got.map(|v| b.judge(op.key, op.version, v, op.began));
                }
            } else {
                b.end_write(op.key, op.version, outcome == Outcome::Stored, now);
            }
        }
        if !op.measured {
            self.interval_warm.count(get, outcome);
        } else {
            self.interval.counts.count(get, outcome);
            if let Some(s) = stale {
                self.interval.checked_read(s);
            }
            if !matches!(outcome, Outcome::Error(_)) {
                let lat = now.saturating_duration_since(op.intended).as_nanos() as u64;
                self.interval.latency.saturating_record(lat.max(1));
                if self.pacer.is_some() {
                    let svc = now.saturating_duration_since(op.began).as_nanos() as u64;
                    self.interval.service.saturating_record(svc.max(1));
                }
            }
        }
        if !self.draining && self.ready(c) {
            self.next(c, Instant::now());
        }
    }

    /// Fails the client's request, if any.
    fn fail<K: CacheCodec, D: Codec>(
        &mut self,
        c: &mut Client<K, D>,
        kind: ErrorKind,
        now: Instant,
    ) {
        if let Some(op) = c.op {
            self.leg_done(&op, now, false, false);
            let draining = self.draining;
            self.draining = true; // do not start another request from here
            self.finish(c, Outcome::Error(kind), now);
            self.draining = draining;
        }
    }

    /// A connection broke: fail the request waiting on it and close it.
    fn broke<K: CacheCodec, D: Codec>(
        &mut self,
        c: &mut Client<K, D>,
        on_cache: bool,
        now: Instant,
    ) {
        if c.op.is_some_and(|op| is_cache_step(op.step) == on_cache) {
            self.fail(c, ErrorKind::Disconnect, now);
        }
        if on_cache {
            c.cache.close(now);
        } else {
            c.db.close(now);
        }
    }

    /// Timeouts and reconnection; runs every few milliseconds, not per request.
    fn housekeep<K: CacheCodec, D: Codec>(
        &mut self,
        c: &mut Client<K, D>,
        now: Instant,
        attempts: &mut u32,
    ) {
        if c.refused {
            return;
        }
        if let Some(op) = c.op
            && now.saturating_duration_since(op.step_sent) > self.spec.timeout
        {
            let on_cache = is_cache_step(op.step);
            self.fail(c, ErrorKind::Timeout, now);
            if on_cache {
                c.cache.close(now);
            } else {
                c.db.close(now);
            }
        }
        if self.draining {
            return;
        }
        let t = self.spec.timeout.min(Duration::from_secs(2));
        let mut reopened = false;
        for on_cache in [true, false] {
            let (down, retry_at) = if on_cache {
                (c.cache.stream.is_none(), c.cache.retry_at)
            } else {
                (c.db.stream.is_none(), c.db.retry_at)
            };
            if !down || *attempts == 0 || now < retry_at {
                continue;
            }
            *attempts -= 1;
            let r = if on_cache {
                c.cache.open(&self.aside.cache, &self.registry, t)
            } else {
                c.db.open(&self.spec.connector, &self.registry, t)
            };
            match r {
                Ok(()) => {
                    self.reconnects += 1;
                    reopened = true;
                }
                Err(e) => {
                    self.connect_failed(e);
                    let link_fails = if on_cache {
                        &mut c.cache.fails
                    } else {
                        &mut c.db.fails
                    };
                    *link_fails = link_fails.saturating_add(1);
                    let back = now + Duration::from_millis(100 << (*link_fails).min(6));
                    if on_cache {
                        c.cache.retry_at = back;
                    } else {
                        c.db.retry_at = back;
                    }
                }
            }
        }
        if reopened && self.pacer.is_none() {
            self.next(c, now);
        }
    }

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

fn set_got<K, D>(c: &mut Client<K, D>, got: u64) {
    if let Some(op) = c.op.as_mut() {
        op.got = Some(got);
    }
}
