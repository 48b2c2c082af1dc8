//! A connection's sockets: opening a leg to a node, backing off after a failed
//! attempt, reconnecting, timing out, and failing what was in flight when a
//! socket broke. Runs at the start, every few milliseconds and on a redirect to
//! a node the connection has not reached yet; never per request.

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use super::{Conn, Ctx, GIVE_UP, Leg, MAX_LEGS, token};
use crate::engine::link::Link;
use crate::stats::{ErrorKind, Outcome};
use crate::wire::Codec;

impl<C: Codec> Ctx<'_, C> {
    /// Adds the legs of connection `i` up to node `node` and opens the new ones;
    /// `false` when `node` is beyond what a connection may reach.
    pub(super) fn add_leg(&mut self, c: &mut Conn<C>, i: usize, node: usize, now: Instant) -> bool {
        if node >= MAX_LEGS {
            return false;
        }
        while c.legs.len() <= node {
            let l = c.legs.len();
            c.legs.push(Leg {
                link: Link::new(
                    self.codec.clone(),
                    token(i, l),
                    self.buffers.0,
                    self.buffers.1,
                    now,
                ),
                inflight: VecDeque::with_capacity(self.spec.pipeline * 2),
                served: false,
                streak: 0,
            });
            self.connect(c, l, now);
        }
        true
    }

    /// Opens leg `l` (blocking, bounded).
    pub(super) fn connect(&mut self, c: &mut Conn<C>, l: usize, now: Instant) {
        let t = self.spec.timeout.min(Duration::from_secs(2));
        let leg = &mut c.legs[l];
        leg.link.codec = self.codec.clone();
        leg.served = false;
        if let Err(e) = leg.link.open(self.router.connector(l), &self.registry, t) {
            self.connect_failed(c, l, now, e);
        }
    }

    fn connect_failed(&mut self, c: &mut Conn<C>, l: usize, now: Instant, e: io::Error) {
        self.connect_failures += 1;
        if self.last_connect_error.is_none() || self.connect_failures % 1000 == 1 {
            self.last_connect_error = Some(e.to_string());
        }
        // Back off: a server refusing connections is not hammered with more.
        c.legs[l].failed(now);
    }

    /// Gives up connection `c` after [`GIVE_UP`] failed attempts in a row on a
    /// leg: it is not retried and its share of `--requests` is dropped.
    fn give_up(&mut self, c: &mut Conn<C>) {
        c.refused = true;
        if let Some(q) = c.quota.replace(0)
            && let Some(t) = self.quota_left.as_mut()
        {
            *t -= q;
        }
    }

    /// Timeouts and reconnection; runs every few milliseconds, not per request.
    pub(super) fn housekeep(&mut self, c: &mut Conn<C>, i: usize, now: Instant) {
        for l in 0..c.legs.len() {
            if c.legs[l].streak >= GIVE_UP && !c.refused {
                self.give_up(c);
            }
            if c.legs[l].link.stream.is_none() {
                if !self.draining
                    && !c.refused
                    && self.attempts_left > 0
                    && now >= c.legs[l].link.retry_at
                {
                    self.attempts_left -= 1;
                    self.connect(c, l, now);
                    if c.legs[l].link.stream.is_some() {
                        self.reconnects += 1;
                        if self.pacer.is_none() {
                            self.refill(c, i, now);
                            self.flush(c, now);
                        }
                    }
                }
                continue;
            }
            if let Some(f) = c.legs[l].inflight.front()
                && now.saturating_duration_since(f.sent) > self.spec.timeout
            {
                self.fail_all(c, l, ErrorKind::Timeout);
                self.close(c, l, now);
            }
        }
    }

    /// Closes leg `l`, failing what it had in flight. A socket closed before
    /// it served anything counts as a failed attempt (backed off).
    pub(super) fn close(&mut self, c: &mut Conn<C>, l: usize, now: Instant) {
        self.fail_all(c, l, ErrorKind::Disconnect);
        let leg = &mut c.legs[l];
        leg.link.close(now);
        if leg.served {
            leg.streak = 0;
        } else {
            leg.failed(now);
        }
    }

    /// Counts everything in flight on leg `l` as failed with `kind`.
    pub(super) fn fail_all(&mut self, c: &mut Conn<C>, l: usize, kind: ErrorKind) {
        while let Some(f) = c.legs[l].inflight.pop_front() {
            c.inflight -= 1;
            self.inflight -= 1;
            self.count(&f, Outcome::Error(kind), None, None);
        }
    }
}

impl<C> Leg<C> {
    /// One more failed attempt in a row: the next waits 0.2 s, 0.4 s, … up
    /// to 6.4 s.
    fn failed(&mut self, now: Instant) {
        self.streak += 1;
        self.link.retry_at = now + Duration::from_millis(100 << self.streak.min(6));
    }
}
