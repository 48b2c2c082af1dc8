//! When a request starts and which: whether the schedule lets one start
//! (drain, deadline, quota), the draw of its operation, key and version, the
//! closed loop's refill, the open loop's due requests and their lateness, and
//! the requests a schedule called for that were never sent.

use std::cmp::Reverse;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;

use super::{Client, Conn, Request, Worker};
use crate::engine::pacer::Pacer;
use crate::results::ScheduleReport;
use crate::workload::consistency::VersionBoard;
use crate::workload::{KeyGen, OpKind, OpMix};

/// Requests a closed loop's refill may see answered at once (by a near
/// cache) before it lets the poll have a turn.
const ANSWERED_AT_ONCE: u32 = 64;

impl Worker<'_> {
    /// Whether a request of `c` meant for `intended` may still start `now`.
    #[inline]
    pub(super) fn may_issue<S>(&self, c: &Conn<S>, intended: Instant, now: Instant) -> bool {
        !c.life.over(now)
            && may_start(
                self.draining,
                self.timing.deadline,
                self.timing.measure_start,
                c.quota,
                intended,
                now,
            )
    }

    /// Draws the next request of `c`, `times` when it was meant for and when
    /// sent (the application's clock), takes it from the quotas, and hands
    /// it to the client.
    #[inline]
    fn issue<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        times: (Instant, Instant),
        now: Instant,
    ) {
        let (op, mut key, mut version) = draw(
            &self.mix,
            &mut c.keys,
            self.spec.board.as_deref(),
            &mut self.rng,
        );
        if op == OpKind::Get
            && let Some(hot) = self.hot.and_then(|h| h.take(now, &mut self.rng))
        {
            key = hot;
            version = self.spec.board.as_deref().map_or(0, |b| b.snapshot(key));
            if now >= self.timing.measure_start {
                self.tally.interval.counts.hot_reads += 1;
            }
        }
        self.start_request(client, c, (op, key, version), times, now);
    }

    /// Hands request `(op, key, version)` of `c`, meant for `intended` and
    /// sent at `sent`, to the client at `now`: takes it from the quotas, and
    /// draws a batch read's other keys.
    #[inline]
    pub(super) fn start_request<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        (op, key, version): (OpKind, u64, u64),
        (intended, sent): (Instant, Instant),
        now: Instant,
    ) {
        // A request belongs to the window it is sent in: one an overloaded
        // schedule meant for the warm-up but sent in the window counts there
        // (its latency still runs from its intended time).
        let measured = now >= self.timing.measure_start;
        if measured && let Some(q) = c.quota.as_mut() {
            *q -= 1;
            if let Some(t) = self.quota_left.as_mut() {
                *t -= 1;
            }
        }
        let r = Request {
            op,
            key,
            version,
            intended,
            sent,
            measured,
        };
        self.tally.inflight += 1;
        c.life.left -= 1;
        self.extra.clear();
        if op == OpKind::Get
            && let Some(b) = &self.spec.batch
        {
            let n = b.draw(&mut self.rng);
            draw_more(
                n,
                key,
                &mut c.keys,
                self.spec.board.as_deref(),
                &mut self.rng,
                &mut self.extra,
            );
        }
        if op == OpKind::Get
            && let Some(b) = self.spec.board.as_deref()
        {
            let after = b.after_read(key) as u64
                + self
                    .extra
                    .iter()
                    .map(|&(k, _)| b.after_read(k) as u64)
                    .sum::<u64>();
            if measured {
                self.tally.interval.counts.after_read += after;
            }
        }
        let mut io = super::Io {
            pipes: &mut c.pipes,
            tally: &mut self.tally,
            extra: &self.extra,
            net: &mut self.net,
            conn: c.slot,
        };
        client.start(&mut io, &mut c.state, r);
    }

    /// Closed loop: fills `c`'s pipeline.
    #[inline]
    pub(super) fn refill<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        now: Instant,
    ) {
        let (mut now, mut answered) = (now, 0);
        while self.has_room(client, c) && self.may_issue(c, now, now) {
            let before = self.tally.inflight;
            self.issue(client, c, (now, now), now);
            if self.tally.inflight == before {
                // Answered at once (a near cache): no reply will call for
                // the next, so the loop comes back for it after a poll.
                answered += 1;
                if answered == ANSWERED_AT_ONCE {
                    self.again = true;
                    return;
                }
                now = Instant::now();
            }
        }
    }

    /// Open loop: sends `c`'s requests due by `now` plus the send slack
    /// (the pacer's lead), as the pipeline allows, each counted with its
    /// send-time error, or as having waited for room when the pipeline was
    /// full at its time (queueing, not kvlab's timing). One sent early is
    /// timed from its send, one sent late from its intended time, both on
    /// the application's clock (the wire's less the folded half: when the
    /// application wrote them, returned for the flush). Then keeps the
    /// worker's next wake-up no later than `c`'s next request, when `c` has
    /// room for it.
    pub(super) fn issue_due<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        p: Pacer,
        now: Instant,
    ) -> Instant {
        let horizon = now + p.lead;
        // Not written before its pipeline had room.
        let written = p.written(now).max(c.room_at);
        if !p.fold.is_zero() {
            // Bytes not yet timed (a reply's writes are timed as it is
            // handled) were written now, not half a round trip before.
            for s in 0..c.pipes.len() {
                if let Some(at) = c.pipes[s].mark(now) {
                    self.links.leaving(at, c.slot);
                }
            }
        }
        while c.due <= horizon && self.has_room(client, c) && self.may_issue(c, c.due, now) {
            let measured = now >= self.timing.measure_start;
            if c.due <= now {
                self.tally.sent_late(now - c.due, measured, c.held);
            } else {
                self.tally.sent_early(c.due - now, measured);
            }
            c.held = false;
            let intended = p.written(c.due).min(written);
            self.issue(client, c, (intended, written), now);
            c.due += p.gap(&mut self.rng, c.due);
        }
        if !self.has_room(client, c) {
            c.full = true;
        }
        if self.has_room(client, c) && self.may_issue(c, c.due, c.due.max(now)) {
            self.queue_due(c);
        }
        written
    }

    /// Puts `c`'s next request in the worker's queue of due times (once).
    #[inline]
    pub(super) fn queue_due<S>(&mut self, c: &mut Conn<S>) {
        if c.queued != Some(c.due) {
            c.queued = Some(c.due);
            self.dues.push(Reverse((c.due, c.slot)));
        }
        self.next_due = self.next_due.min(c.due);
    }

    /// Whether `c` is open and its pipeline has room for one more request.
    #[inline]
    pub(super) fn has_room<Cl: Client>(&self, client: &Cl, c: &Conn<Cl::Conn>) -> bool {
        c.ready() && client.inflight(&c.state) < client.depth(&c.state, c.pipes.len())
    }

    /// Open loop, when the worker's next request is due: sends what the
    /// connections whose requests are due within the send slack have (see
    /// [`Worker::issue_due`]), taken from the queue of due times (no pass over
    /// every connection), and finds the next wake-up.
    pub(super) fn issue_batch<Cl: Client>(
        &mut self,
        client: &mut Cl,
        conns: &mut [Conn<Cl::Conn>],
        p: Pacer,
        mut now: Instant,
    ) {
        while let Some(&Reverse((due, i))) = self.dues.peek() {
            if due > now + p.lead {
                break;
            }
            self.dues.pop();
            let Some(c) = conns.get_mut(i) else { continue };
            if c.queued != Some(due) {
                continue; // superseded
            }
            c.queued = None;
            if c.ready() {
                let written = self.issue_due(client, c, p, now);
                self.flush_at(client, c, now, written);
                // Each write takes a syscall: the next send's error is
                // measured from when it really leaves.
                now = Instant::now();
            }
        }
        self.next_due = self.dues.peek().map_or(now + FAR, |r| r.0.0);
    }

    /// Open loop: queues the next request of every connection with room (at
    /// the start, and after housekeeping may have re-opened some).
    pub(super) fn queue_all<Cl: Client>(&mut self, client: &Cl, conns: &mut [Conn<Cl::Conn>]) {
        for c in conns.iter_mut() {
            if self.has_room(client, c) {
                self.queue_due(c);
            }
        }
    }
}

/// A wake-up no schedule needs (the next tick or housekeeping comes first).
pub(super) const FAR: Duration = Duration::from_secs(3600);

/// Whether a request meant for `intended` may start at `sent`: not while
/// draining, not when meant for the `deadline` or later, and when sent in the
/// measured window (from `measure_start`) only within the connection's `quota`.
#[inline]
pub fn may_start(
    draining: bool,
    deadline: Option<Instant>,
    measure_start: Instant,
    quota: Option<u64>,
    intended: Instant,
    sent: Instant,
) -> bool {
    if draining || deadline.is_some_and(|d| intended >= d) {
        return false;
    }
    !(sent >= measure_start && quota == Some(0))
}

/// The next operation: its kind, key and version (a SET's new version, a GET's
/// snapshot of the newest completed one; 0 without a board). Every write goes
/// to the key drawn: writes to one key may overlap, as an application's do.
#[inline]
pub fn draw(
    mix: &OpMix,
    keys: &mut KeyGen,
    board: Option<&VersionBoard>,
    rng: &mut SmallRng,
) -> (OpKind, u64, u64) {
    let op = mix.next(rng);
    let key = keys.next(rng);
    let version = match (op, board) {
        (_, None) => 0,
        (OpKind::Set, Some(b)) => b.begin_write(key),
        (OpKind::Get, Some(b)) => b.snapshot(key),
    };
    (op, key, version)
}

/// The other keys of a batch read of `n` keys whose first is `first`, each
/// distinct, with its version snapshot (0 without a board), into `out`. A key
/// drawn again is drawn anew, up to 16 times (then the batch is smaller).
#[inline]
pub fn draw_more(
    n: usize,
    first: u64,
    keys: &mut KeyGen,
    board: Option<&VersionBoard>,
    rng: &mut SmallRng,
    out: &mut Vec<(u64, u64)>,
) {
    for _ in 1..n {
        let mut tries = 0;
        let key = loop {
            let k = keys.next(rng);
            if k != first && !out.iter().any(|&(o, _)| o == k) {
                break Some(k);
            }
            tries += 1;
            if tries == 16 {
                break None;
            }
        };
        let Some(key) = key else { return };
        out.push((key, board.map_or(0, |b| b.snapshot(key))));
    }
}

/// Counts a send that left `lag` after its intended time.
#[inline]
pub fn note_lag(schedule: &mut ScheduleReport, lag: Duration) {
    if lag > Duration::from_millis(1) {
        schedule.late_requests += 1;
        schedule.max_lag_ms = schedule.max_lag_ms.max(lag.as_secs_f64() * 1e3);
    }
}

/// Requests a schedule called for from `due` up to `deadline`, one per
/// `per_conn`, that were never sent.
pub fn unsent(due: Instant, deadline: Instant, per_conn: Duration) -> u64 {
    if due >= deadline {
        return 0;
    }
    ((deadline - due).as_nanos() / per_conn.as_nanos().max(1)) as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_starts_only_within_drain_deadline_and_quota() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let (measure, deadline) = (t0 + ms(100), Some(t0 + ms(200)));
        let may =
            |quota, intended, sent| may_start(false, deadline, measure, quota, intended, sent);
        // Warm-up ignores the quota; the measured window spends it.
        assert!(may(Some(0), t0, t0));
        assert!(!may(Some(0), measure, measure));
        assert!(may(Some(1), measure, measure));
        assert!(may(None, t0 + ms(150), t0 + ms(150)));
        // A late request meant for the warm-up but sent in the window spends it.
        assert!(!may(Some(0), t0, measure));
        // Nothing meant for the deadline or later, nothing while draining.
        let end = t0 + ms(200);
        assert!(!may(None, end, end));
        assert!(!may_start(true, None, measure, None, t0, t0));
        let later = t0 + ms(10_000);
        assert!(may_start(false, None, measure, None, later, later));
    }

    #[test]
    fn unsent_counts_the_schedule_left_before_the_deadline() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(unsent(t0 + ms(10), t0 + ms(10), ms(1)), 0);
        assert_eq!(unsent(t0 + ms(20), t0 + ms(10), ms(1)), 0);
        // Both ends count: due at 0, 1, …, 10 ms.
        assert_eq!(unsent(t0, t0 + ms(10), ms(1)), 11);
        assert_eq!(unsent(t0, t0 + ms(10), ms(4)), 3);
    }

    #[test]
    fn only_sends_more_than_a_millisecond_late_count_as_late() {
        let mut s = ScheduleReport::default();
        note_lag(&mut s, Duration::from_micros(900));
        note_lag(&mut s, Duration::from_millis(1));
        assert_eq!(s.late_requests, 0);
        note_lag(&mut s, Duration::from_millis(3));
        note_lag(&mut s, Duration::from_millis(2));
        assert_eq!(s.late_requests, 2);
        assert_eq!(s.max_lag_ms, 3.0);
    }
}
