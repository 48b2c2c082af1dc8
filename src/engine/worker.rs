//! The only hot loop: one thread driving its share of the connections over one
//! `mio` poll, generic over the protocol codec. Keeps up to P requests in flight
//! per connection, paced (open loop) or not (closed loop), verifies every reply,
//! records latency into its own recorder and hands a snapshot over once a second.
//!
//! Per request it allocates nothing, formats nothing and takes no lock: buffers are
//! reused, outcomes are `Copy` counters, and the only cross-thread traffic is one
//! message per second.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use mio::{Events, Token};
use rand::rngs::SmallRng;

use super::clock::{StartLine, Timing};
use super::link::Link;
use super::pacer::{Pacer, ScheduleReport};
use super::rhythm::{Phase, Rhythm, TIMER, draw, note_lag, open_poll, unsent};
use super::spec::{ConnPlan, Links, Spec, Tick, WorkerReport};
use crate::stats::{Counts, ErrorKind, Outcome, Recorder};
use crate::wire::{Codec, Decoded, Key, Reply, tag_of};
use crate::workload::{KeyGen, OpKind, OpMix, Values, write_key};

struct InFlight {
    op: OpKind,
    /// The tag it was sent with (matches out-of-order replies).
    tag: u32,
    key: u64,
    /// SET: the version written; GET: the newest completed version at send.
    version: u64,
    intended: Instant,
    sent: Instant,
    measured: bool,
}

struct Conn<C> {
    /// The connection, its buffers and its codec (bound to its session).
    link: Link<C>,
    inflight: VecDeque<InFlight>,
    /// Number of the next request on this connection (its tag).
    next: u32,
    index: usize,
    keys: KeyGen,
    quota: Option<u64>,
    due: Instant,
    /// Refused at the start: never retried.
    refused: bool,
}

/// Everything of the worker except its connections, so both can be borrowed at once.
struct Ctx<'a, C: Codec> {
    codec: C,
    registry: mio::Registry,
    spec: &'a Spec,
    timing: Timing,
    quota_left: Option<u64>,
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
    inflight: usize,
    connect_failures: u64,
    reconnects: u64,
    attempts_left: u32,
    last_connect_error: Option<String>,
    draining: bool,
}

/// Runs one worker to the end of its drain and returns its report.
pub fn run<C: Codec>(
    codec: C,
    spec: &Spec,
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
    // Room for two pipelines of replies, at least 64 KiB, at most 4 MiB unless one
    // reply alone needs more (the buffer also grows if a reply does not fit).
    let frame = spec.values.size() + 128;
    let rbuf_len = (spec.pipeline * frame * 2).clamp(64 * 1024, (4 << 20).max(2 * frame));
    let mut conns: Vec<Conn<C>> = plans
        .into_iter()
        .enumerate()
        .map(|(token, p)| Conn {
            link: Link::new(
                codec.clone(),
                Token(token),
                (spec.pipeline * frame).min(4 << 20),
                rbuf_len,
                now,
            ),
            inflight: VecDeque::with_capacity(spec.pipeline),
            next: 0,
            index: p.index,
            keys: p.keys,
            quota: p.quota,
            due: now,
            refused: false,
        })
        .collect();
    let mut cx = Ctx {
        codec,
        registry,
        spec,
        timing: Timing::placeholder(now),
        quota_left: None,
        pacer: spec.rate.map(|r| Pacer::new(r, spec.connections)),
        mix: spec.mix,
        values: &spec.values,
        rng: crate::workload::rng(seed),
        key: Vec::with_capacity(spec.key_prefix.len() + 24),
        value: Vec::with_capacity(spec.values.size()),
        interval: Recorder::default(),
        interval_warm: Counts::default(),
        total: Recorder::default(),
        warm: Counts::default(),
        schedule: ScheduleReport {
            target_rps: spec.rate.unwrap_or(0.0),
            ..Default::default()
        },
        inflight: 0,
        connect_failures: 0,
        reconnects: 0,
        attempts_left: 0,
        last_connect_error: None,
        draining: false,
    };
    for c in conns.iter_mut() {
        if shutdown.load(Ordering::Relaxed) {
            break;
        }
        cx.connect(c, Instant::now());
        // A connection the server refused at the start (e.g. too many clients)
        // is not retried: the run goes on with the connections it has.
        c.refused = c.link.stream.is_none();
        opened.fetch_add(1, Ordering::Relaxed);
    }
    let established = conns.iter().filter(|c| c.link.stream.is_some()).count();
    cx.quota_left = conns.iter().map(|c| c.quota).sum();
    let timing = start.wait();
    cx.timing = timing;
    for c in conns.iter_mut() {
        c.due = match cx.pacer {
            Some(p) => p.first_due(timing.t0, c.index),
            None => timing.t0,
        };
    }

    let mut rhythm = Rhythm::new(&poll, timing, cx.pacer.is_some())?;
    let mut events = Events::with_capacity(1024);
    let window_end;

    // Closed loop: fill every connection's pipeline to start.
    if cx.pacer.is_none() {
        for c in conns.iter_mut() {
            cx.refill(c, timing.t0);
            cx.flush(c, timing.t0);
        }
    }

    loop {
        let now = Instant::now();
        let over = shutdown.load(Ordering::Relaxed)
            || timing.deadline.is_some_and(|d| now >= d)
            || cx.quota_left == Some(0);
        match rhythm.begin(now, over, spec.timeout, cx.inflight) {
            Phase::Running => {}
            phase => {
                if phase == Phase::TimedOut {
                    for c in conns.iter_mut() {
                        cx.fail_all(c, ErrorKind::Timeout);
                    }
                }
                window_end = now;
                break;
            }
        }
        cx.draining = rhythm.draining;
        if let Some(second) = rhythm.tick_due(now) {
            cx.send_tick(&ticks, second);
        }
        if rhythm.housekeeping_due(now, Duration::from_millis(10)) {
            // Re-connecting blocks this thread: at most two attempts per pass.
            cx.attempts_left = 2;
            for c in conns.iter_mut() {
                cx.housekeep(c, now);
            }
        }
        let mut wake = rhythm.wake();
        if let Some(p) = cx.pacer
            && !cx.draining
        {
            for c in conns.iter_mut() {
                if c.link.stream.is_some() && c.due <= now {
                    cx.issue_due(c, p, now);
                    cx.flush(c, Instant::now());
                }
                if c.link.stream.is_some()
                    && c.inflight.len() < spec.pipeline
                    && cx.may_issue(c, c.due)
                {
                    wake = wake.min(c.due);
                }
            }
        }
        rhythm.poll(&mut poll, &mut events, wake)?;
        let now = Instant::now();
        for ev in events.iter() {
            if ev.token() == TIMER {
                continue;
            }
            let i = ev.token().0;
            let Some(c) = conns.get_mut(i) else { continue };
            if c.link.stream.is_none() {
                continue;
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                cx.on_readable(c, now);
            }
            if c.link.stream.is_some() && c.link.wpos < c.link.wbuf.len() {
                cx.flush(c, now);
            }
        }
    }
    // Requests the schedule called for but that were never sent.
    if let (Some(p), Some(deadline)) = (cx.pacer, timing.deadline) {
        for c in &conns {
            if c.quota != Some(0) {
                cx.schedule.unsent += unsent(c.due, deadline, p.per_conn);
            }
        }
    }
    cx.send_tick(&ticks, rhythm.last_second());
    drop(ticks); // the last worker to drop its sender ends the run for the caller
    while !release.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_micros(500));
    }
    for c in conns.iter_mut() {
        if let Some(mut s) = c.link.stream.take() {
            let _ = poll.registry().deregister(&mut s);
        }
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
        leg_requests: [0; 5],
    })
}

impl<C: Codec> Ctx<'_, C> {
    fn connect(&mut self, c: &mut Conn<C>, now: Instant) {
        let t = self.spec.timeout.min(Duration::from_secs(2));
        c.link.codec = self.codec.clone();
        if let Err(e) = c.link.open(&self.spec.connector, &self.registry, t) {
            self.connect_failed(c, now, e);
        }
    }

    fn connect_failed(&mut self, c: &mut Conn<C>, now: Instant, e: io::Error) {
        self.connect_failures += 1;
        if self.last_connect_error.is_none() || self.connect_failures % 1000 == 1 {
            self.last_connect_error = Some(e.to_string());
        }
        // Back off: a server refusing connections is not hammered with more.
        c.link.fails = c.link.fails.saturating_add(1);
        c.link.retry_at = now + Duration::from_millis(100 << c.link.fails.min(6));
    }

    /// Timeouts and reconnection; runs every few milliseconds, not per request.
    fn housekeep(&mut self, c: &mut Conn<C>, now: Instant) {
        if c.link.stream.is_none() {
            if !self.draining && !c.refused && self.attempts_left > 0 && now >= c.link.retry_at {
                self.attempts_left -= 1;
                self.connect(c, now);
                if c.link.stream.is_some() {
                    self.reconnects += 1;
                    if self.pacer.is_none() {
                        self.refill(c, now);
                        self.flush(c, now);
                    }
                }
            }
            return;
        }
        if let Some(f) = c.inflight.front()
            && now.saturating_duration_since(f.sent) > self.spec.timeout
        {
            self.fail_all(c, ErrorKind::Timeout);
            self.close(c, now);
        }
    }

    fn close(&mut self, c: &mut Conn<C>, now: Instant) {
        self.fail_all(c, ErrorKind::Disconnect);
        c.link.close(now);
    }

    fn fail_all(&mut self, c: &mut Conn<C>, kind: ErrorKind) {
        while let Some(f) = c.inflight.pop_front() {
            self.inflight -= 1;
            self.count(&f, Outcome::Error(kind), None, None);
        }
    }

    #[inline]
    fn may_issue(&self, c: &Conn<C>, intended: Instant) -> bool {
        if self.draining {
            return false;
        }
        if let Some(d) = self.timing.deadline
            && intended >= d
        {
            return false;
        }
        !(intended >= self.timing.measure_start && c.quota == Some(0))
    }

    #[inline]
    fn issue(&mut self, c: &mut Conn<C>, intended: Instant, now: Instant) {
        // Writes to one key never overlap (see `consistency`).
        let (op, key, version) = draw(
            &self.mix,
            &mut c.keys,
            self.spec.board.as_deref(),
            &mut self.rng,
        );
        write_key(&self.spec.key_prefix, key, &mut self.key);
        let tag = tag_of(c.next, op);
        c.next = c.next.wrapping_add(1) & (u32::MAX >> 1);
        let k = Key {
            id: key,
            name: &self.key,
            tag,
        };
        match op {
            OpKind::Get => c.link.codec.encode_get(k, &mut c.link.wbuf),
            OpKind::Set => {
                self.value.clear();
                self.values.write_version(key, version, &mut self.value);
                c.link
                    .codec
                    .encode_set_ttl(k, &self.value, self.spec.ttl_s, &mut c.link.wbuf);
            }
        }
        let measured = intended >= self.timing.measure_start;
        if measured && let Some(q) = c.quota.as_mut() {
            *q -= 1;
            if let Some(t) = self.quota_left.as_mut() {
                *t -= 1;
            }
        }
        c.inflight.push_back(InFlight {
            op,
            tag,
            key,
            version,
            intended,
            sent: now,
            measured,
        });
        self.inflight += 1;
    }

    /// Closed loop: fill the pipeline.
    #[inline]
    fn refill(&mut self, c: &mut Conn<C>, now: Instant) {
        if c.link.stream.is_none() {
            return;
        }
        while c.inflight.len() < self.spec.pipeline && self.may_issue(c, now) {
            self.issue(c, now, now);
        }
    }

    /// Open loop: send every request whose intended time has come, as the pipeline allows.
    fn issue_due(&mut self, c: &mut Conn<C>, p: Pacer, now: Instant) {
        while c.due <= now && c.inflight.len() < self.spec.pipeline && self.may_issue(c, c.due) {
            note_lag(&mut self.schedule, now - c.due);
            let due = c.due;
            self.issue(c, due, now);
            c.due += p.per_conn;
        }
    }

    fn flush(&mut self, c: &mut Conn<C>, now: Instant) {
        if c.link.flush(&self.registry).is_err() {
            self.close(c, now);
        }
    }

    fn on_readable(&mut self, c: &mut Conn<C>, now: Instant) {
        loop {
            if c.link.rend == c.link.rbuf.len() {
                if c.link.rstart > 0 {
                    c.link.rbuf.copy_within(c.link.rstart..c.link.rend, 0);
                    c.link.rend -= c.link.rstart;
                    c.link.rstart = 0;
                } else {
                    // One reply larger than the buffer: grow (rare, not per request).
                    let n = c.link.rbuf.len() * 2;
                    c.link.rbuf.resize(n, 0);
                }
            }
            let Some(s) = c.link.stream.as_mut() else {
                return;
            };
            let space = c.link.rbuf.len() - c.link.rend;
            match s.read(&mut c.link.rbuf[c.link.rend..]) {
                Ok(0) => return self.close(c, now),
                Ok(n) => {
                    c.link.rend += n;
                    if !self.parse(c, now) {
                        return self.close(c, now);
                    }
                    if n < space {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.close(c, now),
            }
        }
        if self.pacer.is_none() {
            let now = Instant::now();
            self.refill(c, now);
            self.flush(c, now);
        } else if let Some(p) = self.pacer
            && c.due <= now
            && !self.draining
        {
            let now = Instant::now();
            self.issue_due(c, p, now);
            self.flush(c, now);
        }
    }

    /// Decodes every whole reply buffered; `false` when the stream is broken.
    #[inline]
    fn parse(&mut self, c: &mut Conn<C>, now: Instant) -> bool {
        loop {
            let buf = &c.link.rbuf[c.link.rstart..c.link.rend];
            if buf.is_empty() {
                c.link.rstart = 0;
                c.link.rend = 0;
                return true;
            }
            let Some(front) = c.inflight.front() else {
                return false; // a reply nobody asked for
            };
            let (len, reply, at) = match c.link.codec.decode(front.op, buf) {
                Ok(Decoded::Incomplete) => return true,
                Ok(Decoded::Frame { len, reply }) => (len, reply, 0),
                Ok(Decoded::Tagged { len, reply, tag }) => {
                    match c.inflight.iter().position(|f| f.tag & C::TAG_MASK == tag) {
                        Some(at) => (len, reply, at),
                        None => return false, // a reply nobody asked for
                    }
                }
                Err(_) => {
                    let f = c.inflight.pop_front().expect("front exists");
                    self.inflight -= 1;
                    self.count(&f, Outcome::Error(ErrorKind::Protocol), None, None);
                    return false;
                }
            };
            let f = if at == 0 {
                c.inflight.pop_front()
            } else {
                c.inflight.remove(at)
            }
            .expect("in flight");
            let mut got = None;
            let outcome = match (f.op, reply) {
                (OpKind::Get, Reply::Value(r)) => match self.values.verify(f.key, &buf[r]) {
                    Some(v) => {
                        got = Some(v);
                        Outcome::Hit
                    }
                    None => Outcome::Error(ErrorKind::WrongValue),
                },
                (OpKind::Get, Reply::Nil) => Outcome::Miss,
                (OpKind::Set, Reply::Stored) => Outcome::Stored,
                (_, Reply::ServerError) => Outcome::Error(ErrorKind::Server),
                _ => Outcome::Error(ErrorKind::Protocol),
            };
            c.link.rstart += len;
            self.inflight -= 1;
            self.count(&f, outcome, Some(now), got);
        }
    }

    /// Counts a finished request (`got`: the version a GET returned) and, when
    /// versions are tracked, ends its write or judges its read.
    #[inline]
    fn count(&mut self, f: &InFlight, outcome: Outcome, done: Option<Instant>, got: Option<u64>) {
        let get = f.op == OpKind::Get;
        let mut stale = None;
        if let Some(b) = &self.spec.board {
            if get {
                stale = got.map(|v| b.judge(f.key, f.version, v, f.sent));
            } else {
                let ok = outcome == Outcome::Stored;
                b.end_write(f.key, f.version, ok, done.unwrap_or_else(Instant::now));
            }
        }
        if !f.measured {
            self.interval_warm.count(get, outcome);
            return;
        }
        self.interval.counts.count(get, outcome);
        if let Some(s) = stale {
            self.interval.checked_read(s);
        }
        if let (Some(done), false) = (done, matches!(outcome, Outcome::Error(_))) {
            let lat = done.saturating_duration_since(f.intended).as_nanos() as u64;
            self.interval.latency.saturating_record(lat.max(1));
            if self.pacer.is_some() {
                let svc = done.saturating_duration_since(f.sent).as_nanos() as u64;
                self.interval.service.saturating_record(svc.max(1));
            }
        }
    }

    fn send_tick(&mut self, ticks: &Sender<Tick>, second: i64) {
        let rec = std::mem::take(&mut self.interval);
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
