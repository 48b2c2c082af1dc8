//! When a worker's emulated links have bytes coming through, by connection:
//! requests leaving, woken for at their instant, and replies arriving,
//! which a paced worker may handle up to its send slack later (no more than
//! the outbound half it folds), with the wake-up that sends. A reply is
//! still timed at the instant it came through, and what it calls for is
//! written then: it leaves at that instant plus the outbound half, which
//! the deferral never passes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// The instants a worker's links have bytes coming through.
pub(super) struct LinkMarks {
    /// Bytes leaving: (when, connection), earliest first (duplicates are
    /// harmless).
    out: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Bytes arriving, likewise.
    inb: BinaryHeap<Reverse<(Instant, usize)>>,
    /// How much later than its instant an arrival may be handled.
    defer: Duration,
    /// The connections due now (reused).
    due: Vec<usize>,
}

impl LinkMarks {
    /// No marks yet; arrivals handled up to `defer` late.
    pub(super) fn new(defer: Duration) -> LinkMarks {
        LinkMarks {
            out: BinaryHeap::new(),
            inb: BinaryHeap::new(),
            defer,
            due: Vec::new(),
        }
    }

    /// Connection `conn` has bytes leaving at `at`.
    #[inline]
    pub(super) fn leaving(&mut self, at: Instant, conn: usize) {
        self.out.push(Reverse((at, conn)));
    }

    /// Connection `conn` has bytes arriving at `at`.
    #[inline]
    pub(super) fn arriving(&mut self, at: Instant, conn: usize) {
        self.inb.push(Reverse((at, conn)));
    }

    /// Whether any bytes have come through by `now`.
    #[inline]
    pub(super) fn any_by(&self, now: Instant) -> bool {
        let by = |h: &BinaryHeap<Reverse<(Instant, usize)>>| h.peek().is_some_and(|r| r.0.0 <= now);
        by(&self.out) || by(&self.inb)
    }

    /// When the loop must wake for them: the next leaving, or an arrival's
    /// instant plus the deferral.
    #[inline]
    pub(super) fn wake(&self) -> Option<Instant> {
        let out = self.out.peek().map(|r| r.0.0);
        let inb = self.inb.peek().map(|r| r.0.0 + self.defer);
        match (out, inb) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The connections with bytes come through by `now`, each once (hand
    /// the list back with [`LinkMarks::done`]).
    pub(super) fn take_due(&mut self, now: Instant) -> Vec<usize> {
        let mut due = std::mem::take(&mut self.due);
        for h in [&mut self.out, &mut self.inb] {
            while let Some(&Reverse((at, i))) = h.peek() {
                if at > now {
                    break;
                }
                h.pop();
                if !due.contains(&i) {
                    due.push(i);
                }
            }
        }
        due
    }

    /// The list [`LinkMarks::take_due`] lent, for reuse.
    pub(super) fn done(&mut self, mut due: Vec<usize>) {
        due.clear();
        self.due = due;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_wait_the_deferral_and_leavings_do_not() {
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let mut m = LinkMarks::new(us(300));
        assert_eq!(m.wake(), None);
        m.arriving(t0 + us(100), 1);
        assert_eq!(m.wake(), Some(t0 + us(400)));
        m.leaving(t0 + us(200), 2);
        assert_eq!(m.wake(), Some(t0 + us(200)));
        assert!(!m.any_by(t0 + us(99)) && m.any_by(t0 + us(100)));
        m.arriving(t0 + us(150), 1);
        let due = m.take_due(t0 + us(250));
        assert_eq!(due, [2, 1]);
        m.done(due);
        assert_eq!(m.wake(), None);
    }
}
