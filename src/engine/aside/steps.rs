//! Issuing a cache-aside request and sending its steps: cache GET, database
//! GET, cache fill, database SET and cache write (DELETE or SET, by policy).

use std::time::Instant;

use super::{Client, Ctx, Op, is_cache_step};
use crate::engine::rhythm::{draw, note_lag};
use crate::stats::{ErrorKind, Leg};
use crate::wire::{CacheCodec, Codec, Key, tag_of};
use crate::workload::WritePolicy;
use crate::workload::{OpKind, write_key};

impl Ctx<'_> {
    /// Whether the client may run: not refused, and both connections open.
    pub(super) fn ready<K, D>(&self, c: &Client<K, D>) -> bool {
        !c.refused && c.cache.stream.is_some() && c.db.stream.is_some()
    }

    /// Whether a request meant for `intended` may still start: not draining,
    /// before the deadline, and within the client's quota.
    pub(super) fn may_issue<K, D>(&self, c: &Client<K, D>, intended: Instant) -> bool {
        if self.draining || self.timing.deadline.is_some_and(|d| intended >= d) {
            return false;
        }
        !(intended >= self.timing.measure_start && c.quota == Some(0))
    }

    /// Starts the client's next request when it may (closed loop: now; paced:
    /// when due).
    pub(super) fn next<K: CacheCodec, D: Codec>(&mut self, c: &mut Client<K, D>, now: Instant) {
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
    pub(super) fn send<K: CacheCodec, D: Codec>(
        &mut self,
        c: &mut Client<K, D>,
        step: Leg,
        now: Instant,
    ) {
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
        let kind = if matches!(step, Leg::CacheGet | Leg::DbGet) {
            OpKind::Get
        } else {
            OpKind::Set
        };
        let k = Key {
            id: op.key,
            name: &self.key,
            tag: tag_of(0, kind),
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
}
