//! The one request loop: one thread driving its share of the run's
//! connections over one `mio` poll. It owns everything but what a request
//! does on the wire: opening and re-opening sockets (with back-off, giving a
//! connection up after [`GIVE_UP`] failed attempts in a row), the open- and
//! closed-loop schedule, the warm-up and the measured window, timeouts,
//! housekeeping, the drain, and the accounting of every outcome ([`Tally`]).
//!
//! What a connection does per request is a [`Client`] the loop is generic over
//! (static dispatch): [`super::plain`] sends one command to the node that
//! serves its key, [`super::aside`] runs the cache-aside steps over a cache and
//! a database socket. A client sees the sockets and the tally through [`Io`].
//!
//! Per request it allocates nothing, formats nothing and takes no lock: buffers
//! are reused, outcomes are `Copy` counters, and the only cross-thread traffic
//! is one message per second.
//!
//! # Layout
//! - `client`: the [`Client`] trait and the [`Request`] it is handed.
//! - `ends`: the worker's start (connections made, opened, put on the
//!   clock) and end (what was never sent, the sockets let go).
//! - `conns`: opening (a client's [`Io::add_socket`] too), watching and
//!   closing a connection's sockets;
//!   `churn`: their lives (`--conn-life`) and renewal; `burst`: a hot-key
//!   burst's reads (`--hot-keys`); `marks`: the emulated links' instants.
//! - `schedule`: whether a request may start, drawing it, refilling and pacing.
//! - `replay`: trace replay's schedule (requests from the trace, at its times).
//! - [`tally`]: counting outcomes and latency, the per-second hand-over.
//! - [`rhythm`]: ticks, the measured window, the drain, the poll and its timer.

mod burst;
mod churn;
mod client;
mod conns;
mod ends;
mod marks;
mod replay;
pub mod rhythm;
mod schedule;
pub mod tally;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use mio::Token;
use rand::rngs::SmallRng;

use super::clock::{StartLine, Timing};
use super::pacer::Pacer;
use super::pipe::Pipe;
use super::reactor::{Ready, What};
use super::spec::{ConnPlan, Links, Spec, Tick, WorkerReport};
use crate::results::stats::ErrorKind;
use crate::workload::{KeyGen, OpMix};
pub use client::{Client, Request};
use rhythm::{Phase, Rhythm, open_reactor};
pub use tally::Tally;

/// Tokens carry the connection's index above these bits and its socket below.
const SOCKET_BITS: u32 = 8;
/// The most sockets a connection may have (nodes of a sharded target).
pub const MAX_SOCKETS: usize = 1 << SOCKET_BITS;

/// Attempts in a row after which a connection is given up (about 20 s of
/// back-off): a server that accepts and then drops it (e.g. Redis's
/// `maxclients`) must not keep a `--requests` run waiting.
pub const GIVE_UP: u32 = 8;

/// Housekeeping (timeouts, reconnection) runs this often, never per request.
const HOUSEKEEPING: Duration = Duration::from_millis(10);

/// Reads of one socket per loop pass, each up to its read buffer (the rest
/// waits for the next pass, after the run's end and deadlines are seen).
const READS_PER_PASS: usize = 4;

/// What the loop lends a client for one call: the connection's sockets and the
/// worker's tally.
pub struct Io<'a> {
    /// The connection's sockets.
    pub(crate) pipes: &'a mut Vec<Pipe>,
    /// The worker's accounting.
    pub tally: &'a mut Tally,
    /// In [`Client::start`] of a batch read: the request's other keys and
    /// their versions (empty otherwise).
    pub extra: &'a [(u64, u64)],
    net: &'a mut Net,
    conn: usize,
}

/// How a worker opens sockets and talks to the kernel.
struct Net {
    /// epoll or io_uring.
    reactor: super::reactor::Reactor,
    /// Buffer sizes of a new socket: write, read, and the most the read
    /// buffer may grow to.
    buffers: (usize, usize, usize),
    /// Bound on one blocking connect.
    connect_timeout: Duration,
    /// Seeds the jitter of emulated links.
    seed: u64,
    /// Requests a connection may have in flight (room for a link's marks).
    inflight: usize,
}

impl Io<'_> {
    /// The number of sockets the connection has.
    #[inline]
    pub fn sockets(&self) -> usize {
        self.pipes.len()
    }

    /// Whether socket `s` is open.
    #[inline]
    pub fn is_open(&self, s: usize) -> bool {
        self.pipes.get(s).is_some_and(Pipe::is_open)
    }

    /// Socket `s`'s write buffer, or `None` while it is down.
    #[inline]
    pub fn out(&mut self, s: usize) -> Option<&mut Vec<u8>> {
        let p = &mut self.pipes[s];
        p.is_open().then_some(&mut p.wbuf)
    }

    /// The bytes buffered on socket `s` and not yet decoded (on an emulated
    /// link, those that have come through it).
    #[inline]
    pub fn buffered(&self, s: usize) -> &[u8] {
        let p = &self.pipes[s];
        &p.rbuf[p.rstart..p.readable_end()]
    }

    /// The bytes buffered on socket `s` and not yet decoded; `None` when none are.
    #[inline]
    pub fn pending(&self, s: usize) -> Option<&[u8]> {
        let buf = self.buffered(s);
        (!buf.is_empty()).then_some(buf)
    }

    /// Whether socket `s` can ever buffer a reply the server declared to take
    /// `declared` bytes ([`crate::driver::wire::Codec::declared_len`]);
    /// `false`: larger than any the run can get, the protocol is broken.
    #[inline]
    pub fn may_hold(&self, s: usize, declared: Option<usize>) -> bool {
        declared.is_none_or(|n| self.pipes[s].can_hold(n))
    }

    /// Drops the first `len` buffered bytes of socket `s` (a decoded reply).
    #[inline]
    pub fn consume(&mut self, s: usize, len: usize) {
        self.pipes[s].rstart += len;
    }

    /// A request succeeded on socket `s`: its failed attempts are forgiven.
    #[inline]
    pub fn served(&mut self, s: usize) {
        self.pipes[s].served = true;
    }
}

/// One connection: its sockets, the client's state, and its schedule.
struct Conn<S> {
    pipes: Vec<Pipe>,
    /// Its place among this worker's connections (in its sockets' tokens).
    slot: usize,
    state: S,
    index: usize,
    keys: KeyGen,
    /// Measured requests it may still issue (`None`: until the deadline).
    quota: Option<u64>,
    /// When its next paced request is due.
    due: Instant,
    /// Its pipeline was full when the open loop last looked.
    full: bool,
    /// When its pipeline last had room again or opened (see [`Pacer::fold`]).
    room_at: Instant,
    /// Its next paced request was due while its pipeline was full.
    held: bool,
    /// The due time it has in the worker's queue, if any.
    queued: Option<Instant>,
    /// Refused at the start or given up: never retried.
    refused: bool,
    /// What is left of its life before it reconnects (`--conn-life`).
    life: churn::Life,
    /// Sockets the client can do without (bit `s`: [`Client::optional`]).
    optional: u64,
}

impl<S> Conn<S> {
    /// Every socket the client needs is open: requests may be issued.
    #[inline]
    fn ready(&self) -> bool {
        !self.refused
            && self.pipes.iter().any(Pipe::is_open)
            && self
                .pipes
                .iter()
                .enumerate()
                .all(|(s, p)| p.is_open() || self.may_lack(s))
    }

    /// Every socket is open (as the start requires).
    fn all_open(&self) -> bool {
        !self.pipes.is_empty() && self.pipes.iter().all(Pipe::is_open)
    }

    /// Whether socket `s` is one the client can do without.
    #[inline]
    fn may_lack(&self, s: usize) -> bool {
        s < 64 && self.optional & (1 << s) != 0
    }
}

/// Everything of the worker except its connections and client, so that all
/// three can be borrowed at once.
struct Worker<'a> {
    spec: &'a Spec,
    net: Net,
    tally: Tally,
    timing: Timing,
    pacer: Option<Pacer>,
    mix: OpMix,
    rng: SmallRng,
    quota_left: Option<u64>,
    /// A hot-key burst on the run's clock (`--hot-keys`).
    hot: Option<burst::Burst>,
    /// Open loop: when the next request of a connection with room is due.
    next_due: Instant,
    /// Open loop: the due times of connections with room, earliest first
    /// (a connection's entry is current while it equals its `queued`).
    dues: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>>,
    /// Connects housekeeping may still try in this pass (they block the thread).
    attempts_left: u32,
    draining: bool,
    /// The other keys of the batch read being started, with their versions.
    extra: Vec<(u64, u64)>,
    /// Trace replay: the worker's place in the trace (else `None`).
    replay: Option<replay::Replay>,
    /// Emulated links: when connections have bytes coming through.
    links: marks::LinkMarks,
    /// Closed loop: a refill stopped after requests answered at once (a
    /// near cache); every connection is refilled after the next poll, which
    /// does not wait.
    again: bool,
    /// Sockets (connection, socket) a pass left with more to read: read on
    /// the next, whose poll does not wait (reused; see [`Pipe::backlog`]).
    backlog: Vec<(usize, usize)>,
    /// What the last wait brought (reused).
    ready: Vec<Ready>,
}

impl Worker<'_> {
    /// A closed loop: each reply makes room for the next request at once.
    #[inline]
    fn closed(&self) -> bool {
        self.pacer.is_none() && self.replay.is_none()
    }

    /// The client's view of connection `c`.
    fn io<'b, S>(&'b mut self, c: &'b mut Conn<S>) -> (Io<'b>, &'b mut S) {
        let io = Io {
            pipes: &mut c.pipes,
            tally: &mut self.tally,
            extra: &[],
            net: &mut self.net,
            conn: c.slot,
        };
        (io, &mut c.state)
    }
}

/// Runs one worker with `client` to the end of its drain and returns its report.
pub fn run<Cl: Client>(
    mut client: Cl,
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
        trace,
        io,
    } = links;
    // The open loop and emulated links keep times finer than epoll's
    // milliseconds.
    let linked = spec.link.is_some() || spec.aside.as_ref().is_some_and(|a| a.link.is_some());
    let paced = spec.rate.is_some() || spec.trace.is_some() || linked;
    let sockets = plans.len() * client.sockets();
    let (reactor, start) = open_reactor(start, io, paced, sockets)?;
    let now = Instant::now();
    let mut conns = ends::conns(&client, plans, now);
    let mut w = Worker::new(spec, &client, reactor, (seed, conns.len()), trace, now);
    let established = w.open_conns(&client, &mut conns, shutdown, opened, now);
    w.set_clock(&mut conns, start.wait(shutdown));
    let mut rhythm = Rhythm::new(w.timing);
    let window_end = w.drive(&mut client, &mut conns, &mut rhythm, shutdown, &ticks)?;
    w.count_unsent(&conns, window_end, shutdown);
    w.tally.send_tick(&ticks, rhythm.last_second());
    drop(ticks); // the last worker to drop its sender ends the run for the caller
    w.release(&mut conns, release);
    let window = window_end.saturating_duration_since(w.timing.measure_start);
    let costs = (rhythm.busy_ns(), rhythm.wake_counts());
    Ok(w.tally.report(established, costs, window))
}

impl Worker<'_> {
    /// The loop, from the start to the end of the drain (returned: when the
    /// window ended). Each pass: whether the run is over, the tick and
    /// housekeeping when due, the requests the schedule has due, the poll, and
    /// what the backlog and the events bring (a bounded read of each socket).
    fn drive<Cl: Client>(
        &mut self,
        client: &mut Cl,
        conns: &mut [Conn<Cl::Conn>],
        rhythm: &mut Rhythm,
        shutdown: &AtomicBool,
        ticks: &Sender<Tick>,
    ) -> io::Result<Instant> {
        // Closed loop: fill every connection's pipeline to start.
        if self.closed() {
            let t0 = self.timing.t0;
            for c in conns.iter_mut() {
                self.refill_and_flush(client, c, t0);
            }
        }
        loop {
            let now = Instant::now();
            let over = self.over(shutdown, now);
            match rhythm.begin(now, over, self.spec.timeout, self.tally.inflight) {
                Phase::Running => {}
                phase => {
                    if phase == Phase::TimedOut {
                        for c in conns.iter_mut() {
                            self.fail_all(client, c, ErrorKind::Timeout);
                        }
                    }
                    return Ok(now);
                }
            }
            self.draining = rhythm.draining;
            self.chores(client, conns, rhythm, ticks, now);
            // Replies that came through an emulated link may make room for
            // requests due: before the schedule's turn, which sets the wake.
            if self.links.any_by(now) {
                self.advance_links(client, conns, now);
            }
            let lead = self.net.reactor.wake_lead();
            let mut wake = self.issue_scheduled(client, conns, (rhythm.wake(), lead), now);
            if let Some(at) = self.links.wake() {
                wake = wake.min(at);
            }
            if self.again || !self.backlog.is_empty() {
                wake = now;
            }
            self.net.reactor.wait(wake, &mut self.ready)?;
            rhythm.woke();
            // Requests due leave before the replies are read: a pass over a
            // few replies would otherwise add its time to their send error.
            if self.pacer.is_some() {
                self.issue_scheduled(client, conns, (wake, lead), Instant::now());
            }
            self.read_backlog(client, conns);
            self.on_events(client, conns);
            if std::mem::take(&mut self.again) {
                let now = Instant::now();
                for c in conns.iter_mut() {
                    self.refill_and_flush(client, c, now);
                }
            }
        }
    }

    /// Whether the run is over at `now`: stopped, past its deadline, its
    /// quota or its trace.
    #[inline(always)]
    fn over(&self, shutdown: &AtomicBool, now: Instant) -> bool {
        shutdown.load(Ordering::Relaxed)
            || self.timing.deadline.is_some_and(|d| now >= d)
            || self.quota_left == Some(0)
            || self.replay.as_ref().is_some_and(|r| r.over)
    }

    /// What the loop does now and then, never per request: the tick when a
    /// second ended, housekeeping when due.
    #[inline(always)]
    fn chores<Cl: Client>(
        &mut self,
        client: &mut Cl,
        conns: &mut [Conn<Cl::Conn>],
        rhythm: &mut Rhythm,
        ticks: &Sender<Tick>,
        now: Instant,
    ) {
        if let Some(second) = rhythm.tick_due(now) {
            self.tally.send_tick(ticks, second);
        }
        if rhythm.housekeeping_due(now, HOUSEKEEPING) {
            // Re-connecting blocks this thread: at most two attempts per pass.
            self.attempts_left = 2;
            for c in conns.iter_mut() {
                self.housekeep(client, c, now);
            }
            // A connection re-opened may have requests due: look at them all.
            match self.pacer {
                Some(_) => self.queue_all(client, conns),
                None => self.next_due = self.next_due.min(now),
            }
        }
    }

    /// Open loop or replay, unless draining: sends what is due by `now`;
    /// returns when the loop must wake, `wake` or the next request's time
    /// less the timer's usual lateness `lead`.
    #[inline(always)]
    fn issue_scheduled<Cl: Client>(
        &mut self,
        client: &mut Cl,
        conns: &mut [Conn<Cl::Conn>],
        (mut wake, lead): (Instant, Duration),
        now: Instant,
    ) -> Instant {
        if let Some(p) = self.pacer
            && !self.draining
        {
            // Sends due within the slack leave now; the wake-up comes the
            // timer's own delay (tens of µs on a virtual machine) early, so
            // that it lands near the next send's time.
            if now + p.lead >= self.next_due {
                self.issue_batch(client, conns, p, now);
            }
            wake = wake.min(self.next_due.checked_sub(lead).unwrap_or(self.next_due));
        } else if self.replay.is_some() && !self.draining {
            if now >= self.next_due {
                self.issue_traced(client, conns, now);
            }
            wake = wake.min(self.next_due);
        }
        wake
    }

    /// Handles what the wait brought. First every completed receive's bytes
    /// go to their sockets' read buffers (several of one socket are then
    /// read as one); then a completed send is followed by the rest of its
    /// bytes, a readable socket or one that received is read (the client
    /// takes its replies), and the connection is flushed.
    #[inline(always)]
    fn on_events<Cl: Client>(&mut self, client: &mut Cl, conns: &mut [Conn<Cl::Conn>]) {
        let now = Instant::now();
        let mut ready = std::mem::take(&mut self.ready);
        for r in &ready {
            if let What::Received(res, flags) = r.what
                && let Some(p) = pipe_of(conns, r.token)
            {
                p.received(&mut self.net.reactor, res, flags);
            }
        }
        for r in &ready {
            let (i, s) = place(r.token);
            let Some(c) = conns.get_mut(i) else { continue };
            let Some(p) = c.pipes.get_mut(s) else {
                continue;
            };
            // A stale receive that ended lets a socket opened since queue its own.
            let read = matches!(r.what, What::Readable | What::Received(..));
            if let What::Sent(res) = r.what
                && p.sent(&mut self.net.reactor, res).is_err()
                && p.is_open()
            {
                self.close(client, c, s, now);
            }
            if !c.pipes[s].is_open() {
                continue;
            }
            if read {
                self.on_readable(client, c, s, now);
            }
            self.flush(client, c, now);
        }
        ready.clear();
        self.ready = ready;
    }
}

/// Socket `token` of `conns`, if it is one.
#[inline]
fn pipe_of<S>(conns: &mut [Conn<S>], token: Token) -> Option<&mut Pipe> {
    let (i, s) = place(token);
    conns.get_mut(i)?.pipes.get_mut(s)
}

/// The connection and socket a token names (see [`token`]).
#[inline]
fn place(token: Token) -> (usize, usize) {
    (token.0 >> SOCKET_BITS, token.0 & (MAX_SOCKETS - 1))
}

/// The poll token of socket `s` of connection `conn`.
fn token(conn: usize, s: usize) -> Token {
    Token((conn << SOCKET_BITS) | s)
}
