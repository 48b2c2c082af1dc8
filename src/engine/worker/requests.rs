//! Issuing requests: the closed loop's refill, the open loop's due requests,
//! a request's encoding onto the leg of the node that serves its key, a
//! redirected request's resend, and flushing what was buffered.

use std::net::SocketAddr;
use std::time::Instant;

use super::{Conn, Ctx, InFlight};
use crate::engine::pacer::Pacer;
use crate::engine::rhythm::{draw, note_lag};
use crate::stats::{ErrorKind, Outcome};
use crate::wire::{Codec, Key, tag_of};
use crate::workload::{OpKind, write_key};

/// Redirects after which a request counts as a server error (a loop).
const MAX_HOPS: u8 = 5;

/// Requests a connection may have in flight: `--pipeline` per node it
/// reaches (one on a plain target), as a cluster client pipelines to each
/// node (memtier_benchmark's cluster mode does the same).
#[inline]
pub(super) fn depth<C>(pipeline: usize, c: &Conn<C>) -> usize {
    pipeline * c.legs.len().max(1)
}

/// Where a node sent a request.
pub(super) struct Hop {
    /// The key's slot.
    pub slot: u16,
    /// The node to ask.
    pub to: SocketAddr,
    /// For good (the slot moved), not just for this request.
    pub moved: bool,
}

impl<C: Codec> Ctx<'_, C> {
    #[inline]
    pub(super) fn may_issue(&self, c: &Conn<C>, intended: Instant) -> bool {
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
    fn issue(&mut self, c: &mut Conn<C>, i: usize, intended: Instant, now: Instant) {
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
        let measured = intended >= self.timing.measure_start;
        if measured && let Some(q) = c.quota.as_mut() {
            *q -= 1;
            if let Some(t) = self.quota_left.as_mut() {
                *t -= 1;
            }
        }
        let f = InFlight {
            op,
            tag,
            key,
            version,
            intended,
            sent: now,
            measured,
            asking: false,
            hops: 0,
        };
        let node = self.router.route(&self.codec, &self.key);
        self.send(c, i, node, f, now);
    }

    /// Encodes `f` (its key name already in `self.key`) onto the leg of `node`
    /// and puts it in flight; counts it as failed when that leg is down.
    #[inline]
    fn send(&mut self, c: &mut Conn<C>, i: usize, node: usize, f: InFlight, now: Instant) {
        if node >= c.legs.len() && !self.add_leg(c, i, node, now) {
            return self.count(&f, Outcome::Error(ErrorKind::Server), Some(now), None);
        }
        let leg = &mut c.legs[node];
        if leg.link.stream.is_none() {
            return self.count(&f, Outcome::Error(ErrorKind::Disconnect), Some(now), None);
        }
        let out = &mut leg.link.wbuf;
        if f.asking {
            leg.link.codec.encode_asking(out);
        }
        let k = Key {
            id: f.key,
            name: &self.key,
            tag: f.tag,
        };
        match f.op {
            OpKind::Get => leg.link.codec.encode_get(k, out),
            OpKind::Set => {
                self.value.clear();
                self.values.write_version(f.key, f.version, &mut self.value);
                leg.link
                    .codec
                    .encode_set_ttl(k, &self.value, self.spec.ttl_s, out);
            }
        }
        leg.inflight.push_back(f);
        c.inflight += 1;
        self.inflight += 1;
    }

    /// A node said another one serves `f`'s slot: learn it (`moved`) and send
    /// `f` there, keeping its intended start (the redirect is part of its
    /// latency). Rare: only while the slot map changes.
    pub(super) fn redirect(
        &mut self,
        c: &mut Conn<C>,
        i: usize,
        mut f: InFlight,
        hop: Hop,
        now: Instant,
    ) {
        if f.measured {
            self.redirects[usize::from(!hop.moved)] += 1;
        }
        // A target that is not sharded answers a redirect only when it is a
        // cluster node addressed as a single server: an error, not a route.
        if f.hops >= MAX_HOPS || !self.router.sharded() {
            return self.count(&f, Outcome::Error(ErrorKind::Server), Some(now), None);
        }
        let node = self.router.redirected(hop.slot, hop.to, hop.moved);
        f.hops += 1;
        f.asking = !hop.moved;
        write_key(&self.spec.key_prefix, f.key, &mut self.key);
        self.send(c, i, node, f, now);
    }

    /// Closed loop: fill the pipeline.
    #[inline]
    pub(super) fn refill(&mut self, c: &mut Conn<C>, i: usize, now: Instant) {
        if !c.ready() {
            return;
        }
        while c.inflight < depth(self.spec.pipeline, c) && self.may_issue(c, now) {
            self.issue(c, i, now, now);
        }
    }

    /// Open loop: send every request whose intended time has come, as the pipeline allows.
    pub(super) fn issue_due(&mut self, c: &mut Conn<C>, i: usize, p: Pacer, now: Instant) {
        while c.due <= now && c.inflight < depth(self.spec.pipeline, c) && self.may_issue(c, c.due)
        {
            note_lag(&mut self.schedule, now - c.due);
            let due = c.due;
            self.issue(c, i, due, now);
            c.due += p.per_conn;
        }
    }

    /// Writes what every leg of `c` has buffered; a leg that broke is closed.
    pub(super) fn flush(&mut self, c: &mut Conn<C>, now: Instant) {
        for l in 0..c.legs.len() {
            let link = &mut c.legs[l].link;
            if link.stream.is_some() && link.has_output() && link.flush(&self.registry).is_err() {
                self.close(c, l, now);
            }
        }
    }
}
