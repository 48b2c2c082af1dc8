//! Trace replay's schedule (`kvlab replay`): the worker's requests come from
//! its [`Cursor`] over the trace, each at its own time on the run's clock
//! (from the start of the load), and go out on the next connection with room.
//! Latency runs from a request's intended time, as in every open loop; one
//! sent up to [`LEAD`] early is timed from its send. When no connection has
//! room the trace waits (its requests grow late) until a reply frees one.

use std::time::{Duration, Instant};

use super::schedule::note_lag;
use super::{Client, Conn, Worker};
use crate::workload::OpKind;
use crate::workload::trace::feed::{Cursor, Next};

/// The most a traced request leaves before its time to share a wake-up.
pub(super) const LEAD: Duration = Duration::from_micros(300);
/// How soon a worker looks again when the reader has not got that far.
const BEHIND: Duration = Duration::from_millis(1);

/// A worker's place in the trace.
pub(super) struct Replay {
    cursor: Cursor,
    /// A request is due and every connection is full: wait for a reply.
    pub blocked: bool,
    /// The trace is over for this worker (or its window is).
    pub over: bool,
    /// The connection the next request tries first.
    next_conn: usize,
}

impl Replay {
    /// Replays what `cursor` holds.
    pub fn new(cursor: Cursor) -> Replay {
        Replay {
            cursor,
            blocked: false,
            over: false,
            next_conn: 0,
        }
    }

    /// Requests meant before `limit` (from `t0`) that were never sent; the
    /// cursor is spent.
    pub fn unsent(&mut self, t0: Instant, limit: Instant) -> u64 {
        let ns = limit.saturating_duration_since(t0).as_nanos();
        self.cursor
            .left_before(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

impl Worker<'_> {
    /// Sends every traced request due by `now` (and those within [`LEAD`]),
    /// then sets the worker's next wake-up: the next request's time, or a
    /// reply's arrival when the connections are full.
    pub(super) fn issue_traced<Cl: Client>(
        &mut self,
        client: &mut Cl,
        conns: &mut [Conn<Cl::Conn>],
        now: Instant,
    ) {
        let Some(mut rp) = self.replay.take() else {
            return;
        };
        self.next_due = now + super::schedule::FAR;
        rp.blocked = false;
        let horizon = now + LEAD;
        while !rp.over {
            let r = match rp.cursor.peek() {
                Next::Req(r) => r,
                Next::Behind => {
                    self.next_due = now + BEHIND;
                    break;
                }
                Next::End => {
                    rp.over = true;
                    break;
                }
            };
            let intended = self.timing.t0 + Duration::from_nanos(r.at_ns);
            if intended > horizon {
                self.next_due = intended;
                break;
            }
            if self.timing.deadline.is_some_and(|d| intended >= d) {
                rp.over = true;
                break;
            }
            let Some(i) = self.conn_with_room(client, conns, &mut rp.next_conn) else {
                rp.blocked = true;
                break;
            };
            rp.cursor.advance();
            // Every write of the trace is sent: writes to one key may overlap.
            let version = match (r.op, self.spec.board.as_deref()) {
                (OpKind::Set, Some(b)) => b.begin_write(r.key),
                (_, Some(b)) => b.snapshot(r.key),
                (_, None) => 0,
            };
            let start = if intended <= now {
                note_lag(&mut self.tally.schedule, now - intended);
                intended
            } else {
                now
            };
            let c = &mut conns[i];
            self.start_request(client, c, (r.op, r.key, version), (start, now), now);
            self.flush(client, c, now);
        }
        self.replay = Some(rp);
    }

    /// The next connection, round from `next`, with room for a request.
    fn conn_with_room<Cl: Client>(
        &self,
        client: &Cl,
        conns: &[Conn<Cl::Conn>],
        next: &mut usize,
    ) -> Option<usize> {
        let (n, from) = (conns.len(), *next);
        let i = (0..n)
            .map(|k| (from + k) % n)
            .find(|&i| self.has_room(client, &conns[i]))?;
        *next = i + 1;
        Some(i)
    }
}
