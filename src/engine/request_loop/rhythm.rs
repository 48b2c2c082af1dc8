//! The rhythm of the request loop: once-a-second ticks, the start of the
//! measured window, the drain, housekeeping, and the poll with its precise
//! timer.

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Registry, Token};

use crate::engine::clock::{StartLine, Timing, first_tick, thread_busy_ns};
use crate::engine::pacer::PreciseTimer;
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
            t.fired(Instant::now());
        }
        Ok(())
    }

    /// How long before a due send the loop should wake: its timer's usual
    /// lateness (none without a timer).
    pub fn wake_lead(&self) -> Duration {
        self.timer
            .as_ref()
            .map_or(Duration::ZERO, PreciseTimer::wake_lead)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(t0: Instant, warmup_ms: u64, run_ms: u64) -> Timing {
        let measure_start = t0 + Duration::from_millis(warmup_ms);
        Timing {
            t0,
            measure_start,
            deadline: Some(measure_start + Duration::from_millis(run_ms)),
        }
    }

    #[test]
    fn the_drain_ends_when_all_is_answered_or_its_time_is_up() {
        let poll = Poll::new().unwrap();
        let t0 = Instant::now();
        let mut r = Rhythm::new(&poll, timing(t0, 100, 1000), false).unwrap();
        let drain = Duration::from_millis(50);
        assert_eq!(r.begin(t0, false, drain, 3), Phase::Running);
        assert!(!r.draining);
        // The end: requests still in flight are awaited for `drain`.
        let end = t0 + Duration::from_millis(1100);
        assert_eq!(r.begin(end, true, drain, 3), Phase::Running);
        assert!(r.draining);
        assert_eq!(
            r.begin(end + Duration::from_millis(10), false, drain, 1),
            Phase::Running
        );
        assert_eq!(r.begin(end + drain, false, drain, 1), Phase::TimedOut);
        assert_eq!(r.begin(end + drain, false, drain, 0), Phase::Done);
    }

    #[test]
    fn ticks_come_once_a_second_from_the_measured_start() {
        let poll = Poll::new().unwrap();
        let t0 = Instant::now();
        let mut r = Rhythm::new(&poll, timing(t0, 0, 5000), false).unwrap();
        let first = r.tick_second;
        assert_eq!(r.tick_due(t0), None);
        let next = r.next_tick;
        assert_eq!(r.tick_due(next), Some(first));
        assert_eq!(r.tick_due(next), None);
        assert_eq!(r.tick_due(next + Duration::from_secs(1)), Some(first + 1));
        assert_eq!(r.last_second(), first + 2);
    }

    #[test]
    fn housekeeping_waits_its_period() {
        let poll = Poll::new().unwrap();
        let t0 = Instant::now();
        let mut r = Rhythm::new(&poll, timing(t0, 0, 5000), false).unwrap();
        let every = Duration::from_millis(10);
        assert!(r.housekeeping_due(t0, every));
        assert!(!r.housekeeping_due(t0 + Duration::from_millis(9), every));
        assert!(r.housekeeping_due(t0 + Duration::from_millis(10), every));
        assert!(r.wake() <= t0 + Duration::from_millis(20));
    }
}
