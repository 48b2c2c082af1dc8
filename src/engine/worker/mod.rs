//! The only plain hot loop: one thread driving its share of the connections over
//! one `mio` poll, generic over the protocol codec. Keeps up to P requests in
//! flight per connection, paced (open loop) or not (closed loop), verifies every
//! reply, records latency into its own recorder and hands a snapshot over once a
//! second.
//!
//! A connection is one client: on a plain target one socket ("leg"), on a
//! sharded one a socket to each node, each request going to the node that
//! serves its key's slot (redirects followed, see [`crate::engine::route`]).
//!
//! Per request it allocates nothing, formats nothing and takes no lock: buffers are
//! reused, outcomes are `Copy` counters, and the only cross-thread traffic is one
//! message per second.
//!
//! # Layout
//! - `legs`: opening, watching and closing a connection's sockets.
//! - `requests`: issuing (closed and open loop), redirects, flushing.
//! - `replies`: reading, decoding, verifying and counting replies.

mod legs;
mod replies;
mod requests;

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mio::{Events, Token};
use rand::rngs::SmallRng;

use super::clock::{StartLine, Timing};
use super::link::Link;
use super::pacer::{Pacer, ScheduleReport};
use super::rhythm::{Phase, Rhythm, TIMER, open_poll, unsent};
use super::route::Router;
use super::spec::{ConnPlan, Links, Spec, WorkerReport};
use crate::stats::{Counts, ErrorKind, Recorder};
use crate::wire::Codec;
use crate::workload::{KeyGen, OpKind, OpMix, Values};

/// Tokens carry the connection's index above these bits and its leg below.
const LEG_BITS: u32 = 8;
/// The most nodes (legs) a connection may have.
const MAX_LEGS: usize = 1 << LEG_BITS;

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
    /// Sent after an ASKING-like request whose reply comes first.
    asking: bool,
    /// Times it was redirected.
    hops: u8,
}

/// One socket of a connection, to one node, with its requests in flight.
struct Leg<C> {
    link: Link<C>,
    inflight: VecDeque<InFlight>,
    /// A request succeeded since the socket was opened.
    served: bool,
    /// Attempts in a row that failed: not opened, or closed before serving.
    streak: u32,
}

/// Attempts in a row after which a connection is given up (about 20 s of
/// back-off): a server that accepts and then drops it (e.g. Redis's
/// `maxclients`) must not keep a `--requests` run waiting.
const GIVE_UP: u32 = 8;

struct Conn<C> {
    /// One per node the connection reached (one on a plain target).
    legs: Vec<Leg<C>>,
    /// Requests in flight over all legs.
    inflight: usize,
    /// Number of the next request on this connection (its tag).
    next: u32,
    index: usize,
    keys: KeyGen,
    quota: Option<u64>,
    due: Instant,
    /// Refused at the start: never retried.
    refused: bool,
}

impl<C> Conn<C> {
    /// Every leg is open: requests may be issued.
    #[inline]
    fn ready(&self) -> bool {
        self.legs.iter().all(|l| l.link.stream.is_some())
    }
}

/// Everything of the worker except its connections, so both can be borrowed at once.
struct Ctx<'a, C: Codec> {
    codec: C,
    registry: mio::Registry,
    spec: &'a Spec,
    router: Router,
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
    /// Measured requests redirected for good (MOVED) and for once (ASK).
    redirects: [u64; 2],
    /// Buffer sizes of a new leg: write, read.
    buffers: (usize, usize),
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
    let router = Router::new(&spec.connector, spec.topology.as_deref());
    let mut conns: Vec<Conn<C>> = plans
        .into_iter()
        .map(|p| Conn {
            legs: Vec::with_capacity(router.nodes()),
            inflight: 0,
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
        router,
        timing: Timing::placeholder(now),
        quota_left: None,
        pacer: spec.rate.map(|r| Pacer::new(r, spec.share.total)),
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
        redirects: [0; 2],
        buffers: ((spec.pipeline * frame).min(4 << 20), rbuf_len),
    };
    for (i, c) in conns.iter_mut().enumerate() {
        if shutdown.load(Ordering::Relaxed) {
            break;
        }
        for node in 0..cx.router.nodes() {
            cx.add_leg(c, i, node, now);
        }
        // A connection the server refused at the start (e.g. too many clients)
        // is not retried: the run goes on with the connections it has.
        c.refused = !c.ready() || c.legs.is_empty();
        opened.fetch_add(1, Ordering::Relaxed);
    }
    let established = conns.iter().filter(|c| !c.refused).count();
    // `--requests`: a connection refused at the start makes none of its share
    // (the result shows how many were open; a load then stores fewer keys and
    // fails), so the run does not wait for it forever.
    for c in conns.iter_mut().filter(|c| c.refused) {
        c.quota = c.quota.map(|_| 0);
    }
    cx.quota_left = conns.iter().map(|c| c.quota).sum();
    let timing = start.wait(shutdown);
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
        for (i, c) in conns.iter_mut().enumerate() {
            cx.refill(c, i, timing.t0);
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
                        for l in 0..c.legs.len() {
                            cx.fail_all(c, l, ErrorKind::Timeout);
                        }
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
            for (i, c) in conns.iter_mut().enumerate() {
                cx.housekeep(c, i, now);
            }
        }
        let mut wake = rhythm.wake();
        if let Some(p) = cx.pacer
            && !cx.draining
        {
            for (i, c) in conns.iter_mut().enumerate() {
                if c.ready() && c.due <= now {
                    cx.issue_due(c, i, p, now);
                    cx.flush(c, Instant::now());
                }
                if c.ready()
                    && c.inflight < requests::depth(spec.pipeline, c)
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
            let (i, l) = (ev.token().0 >> LEG_BITS, ev.token().0 & (MAX_LEGS - 1));
            let Some(c) = conns.get_mut(i) else { continue };
            if c.legs.get(l).is_none_or(|leg| leg.link.stream.is_none()) {
                continue;
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                cx.on_readable(c, i, l, now);
            }
            cx.flush(c, now);
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
        for leg in c.legs.iter_mut() {
            if let Some(mut s) = leg.link.stream.take() {
                let _ = poll.registry().deregister(&mut s);
            }
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
        redirects: cx.redirects,
    })
}

/// The poll token of leg `leg` of connection `conn`.
fn token(conn: usize, leg: usize) -> Token {
    Token((conn << LEG_BITS) | leg)
}
