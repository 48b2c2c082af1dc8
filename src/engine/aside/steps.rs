//! Sending a step of a cache-aside request: cache GET, database GET, cache
//! fill, database SET and cache write (DELETE or SET, by policy).

use std::time::Instant;

use super::{Aside, AsideConn, CACHE, count_bypass, finish, leg_done, socket_of};
use crate::driver::wire::{CacheCodec, Codec, Key, tag_of};
use crate::engine::request_loop::Io;
use crate::results::stats::{ErrorKind, Leg, Outcome};
use crate::workload::{OpKind, WritePolicy, write_key};

impl<K: CacheCodec, D: Codec> Aside<'_, K, D> {
    /// Encodes `step` of `c`'s request onto its socket (the value to write or
    /// fill is in `self.value`); fails the request when that socket is down.
    pub(super) fn send(
        &mut self,
        io: &mut Io<'_>,
        c: &mut AsideConn<K, D>,
        step: Leg,
        now: Instant,
    ) {
        let Some(op) = c.op.as_mut() else { return };
        op.step = step;
        op.step_sent = now;
        let key = op.r.key;
        let Some(out) = io.out(socket_of(step)) else {
            if socket_of(step) == CACHE {
                return self.around_cache(io, c, now);
            }
            // The database's socket broke while this request was on its way.
            let op = *op;
            leg_done(io.tally, &op, now, false, false);
            return finish(io.tally, c, Outcome::Error(ErrorKind::Disconnect), now);
        };
        write_key(&self.spec.key_prefix, key, &mut self.key);
        let kind = match step {
            Leg::CacheGet | Leg::DbGet => OpKind::Get,
            _ => OpKind::Set,
        };
        let k = Key {
            id: key,
            name: &self.key,
            tag: tag_of(0, kind),
        };
        let ttl = self.aside.ttl_s;
        match step {
            Leg::CacheGet => c.cache.encode_get(k, out),
            Leg::DbGet => c.db.encode_get(k, out),
            Leg::CacheFill => c.cache.encode_set_ttl(k, &self.value, ttl, out),
            Leg::DbSet => c.db.encode_set(k, &self.value, out),
            Leg::CacheWrite => match self.aside.policy {
                WritePolicy::Invalidate => c.cache.encode_delete(k, out),
                WritePolicy::Update => c.cache.encode_set_ttl(k, &self.value, ttl, out),
            },
        }
        io.tally.steps[step as usize] += 1;
    }

    /// Goes on without the cache, which is down, for `c`'s request at its
    /// step: a read asks the database (and will not fill; counted as
    /// bypassed), a fill or a write's cache step is skipped.
    pub(super) fn around_cache(&mut self, io: &mut Io<'_>, c: &mut AsideConn<K, D>, now: Instant) {
        let Some(op) = c.op.as_mut() else { return };
        op.bypass = true;
        let op = *op;
        match op.step {
            Leg::CacheGet => {
                count_bypass(io.tally, &op);
                self.send(io, c, Leg::DbGet, now)
            }
            Leg::CacheFill => finish(io.tally, c, Outcome::Hit, now),
            _ => finish(io.tally, c, Outcome::Stored, now),
        }
    }
}
