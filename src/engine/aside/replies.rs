//! Reading and judging the replies of a cache-aside request: decoding them,
//! taking each step's reply to the next step, and counting the cache's hits
//! and misses and each step's latency.

use std::time::Instant;

use super::{Aside, AsideConn, CACHE, Op, finish, leg_done, socket_of};
use crate::driver::wire::{CacheCodec, Codec, Decoded, Reply};
use crate::engine::request_loop::{Io, Tally};
use crate::results::stats::{ErrorKind, Leg, Outcome};
use crate::workload::{OpKind, WritePolicy};

impl<K: CacheCodec, D: Codec> Aside<'_, K, D> {
    /// Takes each whole reply buffered on socket `s` to its request's next
    /// step; `false` when the stream is broken or out of step.
    pub(super) fn read(
        &mut self,
        io: &mut Io<'_>,
        c: &mut AsideConn<K, D>,
        s: usize,
        now: Instant,
    ) -> bool {
        while io.pending(s).is_some() {
            if s == CACHE
                && let Some(near) = self.near.as_mut()
            {
                match near.heard(&c.cache, io, s, &self.spec.key_prefix, now) {
                    std::ops::ControlFlow::Continue(true) => continue,
                    std::ops::ControlFlow::Continue(false) => {}
                    std::ops::ControlFlow::Break(ok) => return ok,
                }
            }
            let buf = io.buffered(s);
            let op = match c.op {
                Some(op) if socket_of(op.step) == s => op,
                // Bytes nobody waits for on this socket: out of step.
                _ => return false,
            };
            let decoded = if s == CACHE {
                match op.step {
                    Leg::CacheGet => c.cache.decode(OpKind::Get, buf),
                    Leg::CacheWrite if self.aside.policy == WritePolicy::Invalidate => {
                        c.cache.decode_delete(buf)
                    }
                    _ => c.cache.decode(OpKind::Set, buf),
                }
            } else {
                let kind = match op.step {
                    Leg::DbGet => OpKind::Get,
                    _ => OpKind::Set,
                };
                c.db.decode(kind, buf)
            };
            match decoded {
                Ok(Decoded::Incomplete) => {
                    let declared = match s == CACHE {
                        true => c.cache.declared_len(buf),
                        false => c.db.declared_len(buf),
                    };
                    return io.may_hold(s, declared);
                }
                Err(_) => {
                    leg_done(io.tally, &op, now, false, true);
                    finish(io.tally, c, Outcome::Error(ErrorKind::Protocol), now);
                    return false;
                }
                // One step is in flight per socket: a tagged reply is its.
                Ok(Decoded::Frame { len, reply } | Decoded::Tagged { len, reply, .. }) => {
                    if !matches!(reply, Reply::ServerError) {
                        io.served(s);
                    }
                    self.advance(io, c, s, op, reply, now);
                    io.consume(s, len);
                }
            }
        }
        true
    }

    /// Takes the reply to `op`'s current step (its value, if any, still in
    /// socket `s`'s buffer) and sends the next step or finishes.
    fn advance(
        &mut self,
        io: &mut Io<'_>,
        c: &mut AsideConn<K, D>,
        s: usize,
        op: Op,
        reply: Reply,
        now: Instant,
    ) {
        let ok = !matches!(reply, Reply::ServerError);
        leg_done(io.tally, &op, now, ok, true);
        let key = op.r.key;
        match (op.step, reply) {
            (_, Reply::ServerError) => finish(io.tally, c, Outcome::Error(ErrorKind::Server), now),
            (Leg::CacheGet, Reply::Value(r)) => {
                count_cache(io.tally, &op, true);
                match self.spec.values.verify(key, &io.buffered(s)[r.clone()]) {
                    Some(got) => {
                        if let Some(near) = self.near.as_mut() {
                            near.fill_from(io, s, (key, got), r, now);
                        }
                        set_got(c, got);
                        finish(io.tally, c, Outcome::Hit, now);
                    }
                    None => finish(io.tally, c, Outcome::Error(ErrorKind::WrongValue), now),
                }
            }
            (Leg::CacheGet, Reply::Nil) => {
                count_cache(io.tally, &op, false);
                self.send(io, c, Leg::DbGet, now);
            }
            (Leg::DbGet, Reply::Value(r)) => {
                let v = &io.buffered(s)[r];
                match self.spec.values.verify(key, v) {
                    Some(got) => {
                        self.value.clear();
                        self.value.extend_from_slice(v);
                        // No near fill from the database: only a cache GET's
                        // reply comes with the tracking that keeps it fresh
                        // (this read's may be spent by another's fill already).
                        set_got(c, got);
                        if op.bypass {
                            // The cache was down when this read began: no fill.
                            return finish(io.tally, c, Outcome::Hit, now);
                        }
                        self.send(io, c, Leg::CacheFill, now);
                    }
                    None => finish(io.tally, c, Outcome::Error(ErrorKind::WrongValue), now),
                }
            }
            (Leg::DbGet, Reply::Nil) => finish(io.tally, c, Outcome::Miss, now),
            (Leg::CacheFill, Reply::Stored) => finish(io.tally, c, Outcome::Hit, now),
            (Leg::DbSet, Reply::Stored) => {
                self.value.clear();
                self.spec
                    .values
                    .write_version(key, op.r.version, &mut self.value);
                self.send(io, c, Leg::CacheWrite, now);
            }
            (Leg::CacheWrite, Reply::Stored) => finish(io.tally, c, Outcome::Stored, now),
            _ => finish(io.tally, c, Outcome::Error(ErrorKind::Protocol), now),
        }
    }
}

/// Counts a measured cache GET as a hit or a miss.
fn count_cache(tally: &mut Tally, op: &Op, hit: bool) {
    if !op.r.measured {
        return;
    }
    if let Some(l) = tally.interval.legs.as_mut() {
        if hit {
            l.cache_hits += 1;
        } else {
            l.cache_misses += 1;
        }
    }
}

/// Notes the version the connection's read returned.
fn set_got<K, D>(c: &mut AsideConn<K, D>, got: u64) {
    if let Some(op) = c.op.as_mut() {
        op.got = Some(got);
    }
}
