//! Connection churn (`--conn-life`): each connection lives a number of
//! requests or a time, spread by its jitter; when its life is over it issues
//! nothing more, and once nothing of it is in flight it closes every socket
//! and opens them again in line (a pooled application's thread waits for its
//! new connection the same way), counted apart from reconnects after a
//! failure. Per request: one decrement and one comparison.

use std::time::Instant;

use rand::Rng;

use super::{Client, Conn, Worker};

/// What is left of a connection's life.
#[derive(Clone, Copy, Debug)]
pub(super) struct Life {
    /// Requests it may still issue.
    pub left: u64,
    /// When it ends (`None`: not by time).
    pub until: Option<Instant>,
}

impl Life {
    /// A life that lasts the whole run.
    pub const ENDLESS: Life = Life {
        left: u64::MAX,
        until: None,
    };

    /// Whether it is over at `now`.
    #[inline]
    pub fn over(&self, now: Instant) -> bool {
        self.left == 0 || self.until.is_some_and(|u| now >= u)
    }
}

impl Worker<'_> {
    /// A new life for `c`, from `now`.
    pub(super) fn new_life<S>(&mut self, c: &mut Conn<S>, now: Instant) {
        c.life = match self.spec.conn_life {
            Some(l) => {
                let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let (left, time) = l.draw(u);
                Life {
                    left,
                    until: time.map(|t| now + t),
                }
            }
            None => Life::ENDLESS,
        };
    }

    /// When `c`'s life is over and nothing of it is in flight: closes every
    /// socket and opens it again, gives it a new life and lets it go on.
    /// Returns whether it did.
    pub(super) fn renew<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        now: Instant,
    ) -> bool {
        if !c.life.over(now)
            || self.draining
            || c.refused
            || (0..c.pipes.len()).any(|s| client.oldest(&c.state, s).is_some())
        {
            return false;
        }
        for s in 0..c.pipes.len() {
            if c.pipes[s].is_open() {
                c.pipes[s].close(&mut self.net.reactor, now);
            }
            let (mut io, state) = self.io(c);
            if let Some(session) = io.open(s, client.connector(s), now) {
                client.opened(state, s, &session);
            }
        }
        let now = Instant::now();
        c.room_at = now;
        self.tally.churned[0] += 1;
        if now >= self.timing.measure_start {
            self.tally.churned[1] += 1;
        }
        self.new_life(c, now);
        if self.closed() {
            self.refill_and_flush(client, c, now);
        } else if self.pacer.is_some() && self.has_room(client, c) {
            self.queue_due(c);
        }
        true
    }
}
