//! What both hot loops ([`super::worker`] and [`super::aside`]) share: the
//! rhythm of a worker's event loop (once-a-second ticks, the start of the
//! measured window, the drain, housekeeping, the poll with its precise timer),
//! the draw of the next operation, and the schedule's bookkeeping.

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Registry, Token};
use rand::rngs::SmallRng;

use super::clock::{StartLine, Timing, first_tick, thread_busy_ns};
use super::pacer::{PreciseTimer, ScheduleReport};
use crate::consistency::VersionBoard;
use crate::workload::{KeyGen, OpKind, OpMix};
use std::sync::atomic::AtomicBool;

/// The token of the pacing timer; connections use small tokens.
pub const TIMER: Token = Token(usize::MAX - 1);

/// A poll and a second handle on its registry, or the error after releasing the
/// start line (a worker that cannot start must not keep the others waiting).
pub fn open_poll(start: StartLine) -> Result<(Poll, Registry, StartLine), io::Error> {
    let polled = Poll::new().and_then(|p| {
        let r = p.registry().try_clone()?;
        Ok((p, r))
    });
    match polled {
        Ok((p, r)) => Ok((p, r, start)),
        Err(e) => {
            // Nothing to wait for: the worker fails at once.
            start.wait(&AtomicBool::new(true));
            Err(e)
        }
    }
}

/// Where a loop pass stands with the end of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Issuing requests (or draining with replies still due).
    Running,
    /// Draining and every request answered: stop.
    Done,
    /// Draining and the drain's time is up: fail what is left, then stop.
    TimedOut,
}

/// The clock of one worker's event loop.
pub struct Rhythm {
    /// The run's clock.
    pub timing: Timing,
    /// No new requests: the run is ending.
    pub draining: bool,
    next_tick: Instant,
    tick_second: i64,
    measure_started: bool,
    busy_start: Option<u64>,
    drain_deadline: Instant,
    housekeeping: Instant,
    timer: Option<PreciseTimer>,
}

impl Rhythm {
    /// The rhythm of a loop on `poll` for `timing`; `paced` loops get a timer.
    pub fn new(poll: &Poll, timing: Timing, paced: bool) -> io::Result<Rhythm> {
        let (next_tick, tick_second) = first_tick(&timing);
        Ok(Rhythm {
            timing,
            draining: false,
            next_tick,
            tick_second,
            measure_started: false,
            busy_start: None,
            drain_deadline: timing.t0,
            housekeeping: timing.t0,
            timer: match paced {
                true => Some(PreciseTimer::new(poll.registry(), TIMER)?),
                false => None,
            },
        })
    }

    /// Starts a loop pass at `now`: notes the start of the measured window and
    /// starts the drain when `over` (it then lasts at most `drain`). Says
    /// whether the loop goes on, given the requests still `inflight`.
    pub fn begin(&mut self, now: Instant, over: bool, drain: Duration, inflight: usize) -> Phase {
        if !self.measure_started && now >= self.timing.measure_start {
            self.measure_started = true;
            self.busy_start = thread_busy_ns();
        }
        if !self.draining && over {
            self.draining = true;
            self.drain_deadline = now + drain;
        }
        match (self.draining, inflight == 0, now >= self.drain_deadline) {
            (true, true, _) => Phase::Done,
            (true, false, true) => Phase::TimedOut,
            _ => Phase::Running,
        }
    }

    /// The index of the second that just ended, when a tick is due at `now`.
    pub fn tick_due(&mut self, now: Instant) -> Option<i64> {
        if now < self.next_tick {
            return None;
        }
        let s = self.tick_second;
        self.tick_second += 1;
        self.next_tick += Duration::from_secs(1);
        Some(s)
    }

    /// The second the last (partial) tick belongs to.
    pub fn last_second(&self) -> i64 {
        self.tick_second
    }

    /// Whether housekeeping (timeouts, reconnection) is due; then the next is
    /// `every` later.
    pub fn housekeeping_due(&mut self, now: Instant, every: Duration) -> bool {
        if now < self.housekeeping {
            return false;
        }
        self.housekeeping = now + every;
        true
    }

    /// The next instant the loop must wake by itself (before any pacing).
    pub fn wake(&self) -> Instant {
        let mut wake = self.next_tick.min(self.housekeeping);
        if self.draining {
            wake = wake.min(self.drain_deadline);
        } else if let Some(d) = self.timing.deadline {
            wake = wake.min(d);
        }
        if !self.measure_started {
            wake = wake.min(self.timing.measure_start);
        }
        wake
    }

    /// Waits for events until `wake` (the timer, when paced, wakes on time; the
    /// poll timeout is a backstop). Timer events are consumed here; the caller
    /// skips [`TIMER`].
    pub fn poll(&mut self, poll: &mut Poll, events: &mut Events, wake: Instant) -> io::Result<()> {
        let mut timeout = wake.saturating_duration_since(Instant::now());
        if let Some(t) = self.timer.as_mut()
            && !timeout.is_zero()
        {
            t.arm(wake);
            timeout += Duration::from_millis(2);
        }
        if let Err(e) = poll.poll(events, Some(timeout))
            && e.kind() != io::ErrorKind::Interrupted
        {
            return Err(e);
        }
        if let Some(t) = self.timer.as_mut()
            && events.iter().any(|e| e.token() == TIMER)
        {
            t.clear();
        }
        Ok(())
    }

    /// Nanoseconds the thread ran or waited to run in the measured window.
    pub fn busy_ns(&self) -> Option<u64> {
        if !self.measure_started {
            return None;
        }
        self.busy_start
            .zip(thread_busy_ns())
            .map(|(a, b)| b.saturating_sub(a))
    }
}

/// The next operation: its kind, key and version (a SET's new version, a GET's
/// snapshot of the newest completed one; 0 without a board). A SET whose key has
/// a write in flight draws another key, up to 8 times, then becomes a GET.
#[inline]
pub fn draw(
    mix: &OpMix,
    keys: &mut KeyGen,
    board: Option<&VersionBoard>,
    rng: &mut SmallRng,
) -> (OpKind, u64, u64) {
    let mut op = mix.next(rng);
    let mut key = keys.next(rng);
    let Some(b) = board else {
        return (op, key, 0);
    };
    if op == OpKind::Set {
        for _ in 0..8 {
            if let Some(v) = b.begin_write(key) {
                return (op, key, v);
            }
            key = keys.next(rng);
        }
        op = OpKind::Get;
    }
    (op, key, b.snapshot(key))
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
