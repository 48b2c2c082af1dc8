//! An emulated network link on one socket: a delay line that holds the bytes
//! a request wrote for the outbound half of the round trip before they reach
//! the socket, and the bytes a reply brought for the inbound half before the
//! client may decode them. A link that only delays (no loss, ample bandwidth)
//! is, as the server sees it, the same as one in the network. Both ways are
//! first in, first out, as TCP is: with jitter a later segment never
//! overtakes an earlier one. Marks are offsets into the socket's buffers;
//! memory is bounded by the requests in flight.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::workload::LinkDelay;
use crate::workload::timing::exponential;

/// One way of a link: marks into one buffer, first in, first out.
struct Way {
    /// (when the bytes up to the offset come through, the offset).
    marks: VecDeque<(Instant, usize)>,
    /// Bytes given a time so far.
    marked: usize,
    /// Bytes whose time has come.
    through: usize,
}

impl Way {
    fn new(inflight: usize) -> Way {
        Way {
            marks: VecDeque::with_capacity(inflight),
            marked: 0,
            through: 0,
        }
    }

    /// The buffer is `len` bytes: what is new comes through at `at` (never
    /// before the last mark); that time, if anything is new.
    #[inline]
    fn mark(&mut self, len: usize, at: Instant) -> Option<Instant> {
        if len <= self.marked {
            return None;
        }
        let at = self.marks.back().map_or(at, |&(last, _)| at.max(last));
        self.marks.push_back((at, len));
        self.marked = len;
        Some(at)
    }

    /// Lets through what has come by `now`; whether anything new has.
    #[inline]
    fn pass(&mut self, now: Instant) -> bool {
        let before = self.through;
        while let Some(&(at, end)) = self.marks.front() {
            if at > now {
                break;
            }
            self.through = end;
            self.marks.pop_front();
        }
        self.through > before
    }

    /// Lets through the first mark if it has come by `now`; its time.
    #[inline]
    fn pass_one(&mut self, now: Instant) -> Option<Instant> {
        let &(at, end) = self.marks.front().filter(|m| m.0 <= now)?;
        self.through = end;
        self.marks.pop_front();
        Some(at)
    }

    /// The buffer's first `by` bytes were dropped.
    fn shift(&mut self, by: usize) {
        self.marked -= by;
        self.through -= by;
        for m in self.marks.iter_mut() {
            m.1 -= by;
        }
    }

    fn clear(&mut self) {
        self.marks.clear();
        (self.marked, self.through) = (0, 0);
    }
}

/// One socket's link: what waits to go out and what waits to be seen.
pub(crate) struct Link {
    half: Duration,
    jitter: Duration,
    /// A xorshift state for the jitter's draws.
    rng: u64,
    /// Outbound: the write buffer's bytes, written once through.
    out: Way,
    /// Inbound: the read buffer's bytes, decoded once through.
    inb: Way,
}

impl Link {
    /// A link of `delay`, its jitter drawn from `seed`, with room for
    /// `inflight` marks each way before it grows.
    pub(crate) fn new(delay: LinkDelay, seed: u64, inflight: usize) -> Link {
        Link {
            half: delay.half(),
            jitter: delay.half_jitter(),
            rng: seed | 1,
            out: Way::new(inflight),
            inb: Way::new(inflight),
        }
    }

    /// One way's delay from `now`: the half, and an exponential extra of the
    /// jitter's mean.
    fn due(&mut self, now: Instant) -> Instant {
        let mut at = now + self.half;
        if !self.jitter.is_zero() {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            at += exponential(self.jitter, self.rng);
        }
        at
    }

    /// Write-buffer bytes whose time has come (they may be written).
    #[inline]
    pub(crate) fn released(&self) -> usize {
        self.out.through
    }

    /// Read-buffer bytes whose time has come (the client may decode them).
    #[inline]
    pub(crate) fn visible(&self) -> usize {
        self.inb.through
    }

    /// The write buffer is `len` bytes: what is new, written by the
    /// application at `written`, leaves the outbound half after it. The new
    /// mark's time, if there is one.
    #[inline]
    pub(crate) fn sent(&mut self, len: usize, written: Instant) -> Option<Instant> {
        if len <= self.out.marked {
            return None;
        }
        let at = self.due(written);
        self.out.mark(len, at)
    }

    /// Releases what may be written by `now`.
    #[inline]
    pub(crate) fn release(&mut self, now: Instant) {
        self.out.pass(now);
    }

    /// The read buffer ends at `end`: what is new may be decoded after the
    /// inbound half. The new mark's time, if there is one.
    #[inline]
    pub(crate) fn arrived(&mut self, end: usize, now: Instant) -> Option<Instant> {
        if end <= self.inb.marked {
            return None;
        }
        let at = self.due(now);
        self.inb.mark(end, at)
    }

    /// Shows the client the next bytes that may be decoded by `now`: when
    /// they came through (`None`: nothing new has).
    #[inline]
    pub(crate) fn reveal(&mut self, now: Instant) -> Option<Instant> {
        self.inb.pass_one(now)
    }

    /// The write buffer's first `by` bytes were written and dropped.
    pub(crate) fn shift_out(&mut self, by: usize) {
        self.out.shift(by);
    }

    /// The read buffer's first `by` bytes were decoded and dropped.
    pub(crate) fn shift_in(&mut self, by: usize) {
        self.inb.shift(by);
    }

    /// Drops everything on the way (the socket closed).
    pub(crate) fn clear(&mut self) {
        self.out.clear();
        self.inb.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_wait_half_the_round_trip_each_way_in_order() {
        let d = LinkDelay {
            rtt_ms: 2.0,
            jitter_ms: 0.0,
        };
        let mut l = Link::new(d, 1, 4);
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(l.sent(10, t0), Some(t0 + ms(1)));
        assert_eq!(l.sent(10, t0), None);
        assert_eq!(l.sent(25, t0 + ms(1)), Some(t0 + ms(2)));
        l.release(t0 + ms(1) - Duration::from_nanos(1));
        assert_eq!(l.released(), 0);
        l.release(t0 + ms(1));
        assert_eq!(l.released(), 10);
        l.release(t0 + ms(5));
        assert_eq!(l.released(), 25);
        l.shift_out(25);
        assert_eq!((l.out.marked, l.released()), (0, 0));
        assert_eq!(l.arrived(7, t0), Some(t0 + ms(1)));
        assert_eq!(l.reveal(t0), None);
        assert_eq!(l.arrived(9, t0 + ms(1)), Some(t0 + ms(2)));
        // Each segment seen at the time it came through, one at a time.
        assert_eq!(l.reveal(t0 + ms(5)), Some(t0 + ms(1)));
        assert_eq!(l.visible(), 7);
        assert_eq!(l.reveal(t0 + ms(5)), Some(t0 + ms(2)));
        assert_eq!((l.visible(), l.reveal(t0 + ms(5))), (9, None));
    }

    #[test]
    fn with_jitter_a_later_segment_never_overtakes() {
        let d = LinkDelay {
            rtt_ms: 0.2,
            jitter_ms: 0.5,
        };
        let mut l = Link::new(d, 42, 4);
        let t0 = Instant::now();
        let mut last = t0;
        let mut extra = Duration::ZERO;
        // Segments 1 ms apart: an earlier one rarely holds a later one back.
        for i in 1..=2000 {
            let now = t0 + Duration::from_millis(i);
            let at = l.sent(i as usize, now).unwrap();
            assert!(at >= last && at >= now + l.half);
            extra += at - now - l.half;
            last = at;
        }
        // The extra's mean is about the jitter's half, 0.25 ms (FIFO adds a
        // little).
        let mean = extra.as_secs_f64() / 2000.0 * 1e3;
        assert!((0.2..0.35).contains(&mean), "{mean}");
    }
}
