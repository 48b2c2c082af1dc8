//! Reading and judging the replies of a cache-aside request: decoding them,
//! taking each step's reply to the next step, counting outcomes, and failing
//! a request whose connection broke.

use std::time::Instant;

use super::{Client, Ctx, Op, is_cache_step};
use crate::stats::{ErrorKind, Leg, Outcome};
use crate::wire::{CacheCodec, Codec, Decoded, Reply};
use crate::workload::OpKind;
use crate::workload::WritePolicy;

impl Ctx<'_> {
    /// Reads what arrived on the client's cache (`on_cache`) or database
    /// connection and takes each complete reply to its request's next step.
    pub(super) fn on_readable<K: CacheCodec, D: Codec>(
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
                // One step is in flight per connection: a tagged reply is its.
                Ok(Decoded::Frame { len, reply } | Decoded::Tagged { len, reply, .. }) => {
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

    /// Counts a measured cache GET as a hit or a miss.
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
    pub(super) fn fail<K: CacheCodec, D: Codec>(
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
    pub(super) fn broke<K: CacheCodec, D: Codec>(
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
}

/// Notes the version the client's read returned.
fn set_got<K, D>(c: &mut Client<K, D>, got: u64) {
    if let Some(op) = c.op.as_mut() {
        op.got = Some(got);
    }
}
