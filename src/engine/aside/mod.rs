//! The cache-aside client: each connection owns one cache socket and one
//! database socket and runs one request at a time through its steps:
//!
//! - read: GET from the cache; on a miss GET from the database, then SET the
//!   value into the cache (with the TTL, if any);
//! - write: SET in the database, then DELETE the cache entry (invalidate) or
//!   SET the new value there (update).
//!
//! When the cache is unreachable (killed, restarting) a connection goes on
//! around it, as applications do: a read is served by the database without a
//! fill, a write skips its cache step; each is counted as bypassed. The cache
//! socket is retried in the background ([`Client::optional`]).
//!
//! End-to-end latency goes into the run's recorder (by the request loop's
//! [`Tally`]), each step's into its leg; every value read is verified and, when
//! versions are tracked, judged for staleness by the version it returned. The
//! request loop ([`super::request_loop`]) owns the sockets, the schedule, the
//! timeouts and the reconnection.
//!
//! # Layout
//! - `steps`: sending a step onto the cache or the database socket.
//! - `replies`: decoding replies and taking each request to its next step.

mod replies;
mod steps;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Result;

use super::request_loop::{Client, Io, Request, Tally};
use super::run::execute_with;
use super::spec::{AsideSpec, EngineReport, Observer, Spec};
use crate::driver::Connector;
use crate::driver::wire::{CacheCodec, Codec, Session};
use crate::results::stats::{ErrorKind, Leg, Outcome, Recorder};
use crate::workload::OpKind;

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
    execute_with(spec, shutdown, observer, || Aside {
        cache: cache.clone(),
        db: db.clone(),
        spec,
        aside,
        key: Vec::with_capacity(spec.key_prefix.len() + 24),
        value: Vec::with_capacity(spec.values.typical()),
        near: crate::engine::near::Near::of(spec),
    })
}

/// The socket of the cache.
const CACHE: usize = 0;
/// The socket of the database.
const DB: usize = 1;

/// The socket `step` goes over.
fn socket_of(step: Leg) -> usize {
    match step {
        Leg::DbGet | Leg::DbSet => DB,
        Leg::CacheGet | Leg::CacheFill | Leg::CacheWrite => CACHE,
    }
}

/// The request a connection has in flight.
#[derive(Clone, Copy)]
struct Op {
    r: Request,
    /// Version the read returned (from the cache or the database).
    got: Option<u64>,
    step: Leg,
    step_sent: Instant,
    /// The read went around an unreachable cache: no fill.
    bypass: bool,
}

/// One cache-aside connection: its codecs bound to each socket's session and
/// the request in flight.
pub struct AsideConn<K, D> {
    cache: K,
    db: D,
    op: Option<Op>,
}

/// The cache-aside client of one worker.
pub struct Aside<'a, K, D> {
    cache: K,
    db: D,
    spec: &'a Spec,
    aside: &'a AsideSpec,
    /// The key name being encoded.
    key: Vec<u8>,
    /// The value being written or filled.
    value: Vec<u8>,
    /// A near cache in front of the cache (`--near-cache`): reads it holds
    /// end in the worker; the cache's hits fill it; writes and the cache's
    /// invalidations empty it.
    near: Option<crate::engine::near::Near>,
}

impl<K: CacheCodec, D: Codec> Client for Aside<'_, K, D> {
    type Conn = AsideConn<K, D>;

    fn conn(&self) -> AsideConn<K, D> {
        AsideConn {
            cache: self.cache.clone(),
            db: self.db.clone(),
            op: None,
        }
    }

    fn sockets(&self) -> usize {
        2
    }

    fn optional(&self, s: usize) -> bool {
        s == CACHE
    }

    fn connector(&self, s: usize) -> &Connector {
        match s {
            CACHE => &self.aside.cache,
            _ => &self.spec.connector,
        }
    }

    fn link(&self, s: usize) -> Option<crate::workload::LinkDelay> {
        match s {
            CACHE => self.aside.link,
            _ => self.spec.link,
        }
    }

    fn buffers(&self) -> (usize, usize) {
        let read = (2 * self.spec.values.typical() + 4096).max(16 * 1024);
        (read / 2, read)
    }

    fn recorder() -> Recorder {
        Recorder {
            legs: Some(Box::default()),
            ..Recorder::default()
        }
    }

    fn opened(&self, c: &mut Self::Conn, s: usize, session: &Session) {
        match s {
            CACHE => c.cache = self.cache.bind(session),
            _ => c.db = self.db.bind(session),
        }
    }

    #[inline]
    fn depth(&self, _: &Self::Conn, _: usize) -> usize {
        1
    }

    #[inline]
    fn inflight(&self, c: &Self::Conn) -> usize {
        usize::from(c.op.is_some())
    }

    fn start(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, r: Request) {
        if let Some(near) = self.near.as_mut()
            && near.answer(io, &r, &self.spec.values)
        {
            // A hit of the caching layer: the database was spared it.
            if r.measured
                && let Some(l) = io.tally.interval.legs.as_mut()
            {
                l.cache_hits += 1;
            }
            return;
        }
        let step = match r.op {
            OpKind::Get => Leg::CacheGet,
            OpKind::Set => Leg::DbSet,
        };
        c.op = Some(Op {
            r,
            got: None,
            step,
            step_sent: r.sent,
            bypass: false,
        });
        if r.op == OpKind::Set {
            self.value.clear();
            self.spec
                .values
                .write_version(r.key, r.version, &mut self.value);
        }
        self.send(io, c, step, r.sent);
    }

    fn replies(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, s: usize, now: Instant) -> bool {
        self.read(io, c, s, now)
    }

    fn oldest(&self, c: &Self::Conn, s: usize) -> Option<Instant> {
        c.op.filter(|op| socket_of(op.step) == s)
            .map(|op| op.step_sent)
    }

    fn fail(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, s: usize, kind: ErrorKind) {
        if let Some(op) = c.op
            && socket_of(op.step) == s
        {
            let now = Instant::now();
            leg_done(io.tally, &op, now, false, false);
            if s == CACHE && kind == ErrorKind::Disconnect {
                // The cache went away under this step: go on around it.
                return self.around_cache(io, c, now);
            }
            finish(io.tally, c, Outcome::Error(kind), now);
        }
    }
}

/// Counts a measured read that went around the cache.
fn count_bypass(tally: &mut Tally, op: &Op) {
    if op.r.measured
        && let Some(l) = tally.interval.legs.as_mut()
    {
        l.cache_bypassed += 1;
    }
}

/// Records the end of `op`'s current step: `ok` (a good reply), a failed
/// reply, or (`replied` false) no reply at all.
fn leg_done(tally: &mut Tally, op: &Op, now: Instant, ok: bool, replied: bool) {
    if !op.r.measured {
        return;
    }
    if let Some(l) = tally.interval.legs.as_mut() {
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

/// Ends `c`'s request with `outcome`: a read's version is judged only when it
/// hit (from the cache, or from the database and filled).
fn finish<K, D>(tally: &mut Tally, c: &mut AsideConn<K, D>, outcome: Outcome, now: Instant) {
    let Some(op) = c.op.take() else { return };
    let got = op.got.filter(|_| outcome == Outcome::Hit);
    tally.finish(&op.r, outcome, now, got);
}
