//! The rhythm of the request loop: once-a-second ticks, the start of the
//! measured window, the drain, housekeeping and when the loop must wake.

use std::io;
use std::time::{Duration, Instant};

use crate::engine::clock::{
    StartLine, Timing, first_tick, thread_busy_ns, thread_context_switches,
};
use crate::engine::reactor::{IoKind, Reactor};
use crate::engine::spec::WakeCounts;
use std::sync::atomic::AtomicBool;

/// The worker's reactor of `kind` (for about `sockets` sockets; `paced`:
/// with wake-ups finer than milliseconds), or the error after releasing the
/// start line (a worker that cannot start must not keep the others waiting).
pub(crate) fn open_reactor(
    start: StartLine,
    kind: IoKind,
    paced: bool,
    sockets: usize,
) -> Result<(Reactor, StartLine), io::Error> {
    match Reactor::new(kind, paced, sockets) {
        Ok(r) => Ok((r, start)),
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
    /// Wake-ups of the loop from the window's start to the drain's, and the
    /// thread's context switches at either end.
    wakes: u64,
    switches: [Option<u64>; 2],
    drain_deadline: Instant,
    housekeeping: Instant,
}

impl Rhythm {
    /// The rhythm of a loop on the run's clock `timing`.
    pub fn new(timing: Timing) -> Rhythm {
        let (next_tick, tick_second) = first_tick(&timing);
        Rhythm {
            timing,
            draining: false,
            next_tick,
            tick_second,
            measure_started: false,
            busy_start: None,
            wakes: 0,
            switches: [None; 2],
            drain_deadline: timing.t0,
            housekeeping: timing.t0,
        }
    }

    /// Starts a loop pass at `now`: notes the start of the measured window and
    /// starts the drain when `over` (it then lasts at most `drain`). Says
    /// whether the loop goes on, given the requests still `inflight`.
    pub fn begin(&mut self, now: Instant, over: bool, drain: Duration, inflight: usize) -> Phase {
        if !self.measure_started && now >= self.timing.measure_start {
            self.measure_started = true;
            self.busy_start = thread_busy_ns();
            self.switches[0] = thread_context_switches();
        }
        if !self.draining && over {
            self.draining = true;
            self.switches[1] = thread_context_switches();
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

    /// Counts a return from the loop's wait, in the window before the drain.
    #[inline(always)]
    pub fn woke(&mut self) {
        if self.measure_started && !self.draining {
            self.wakes += 1;
        }
    }

    /// The loop's wake-ups and the thread's context switches in the window
    /// (`None`: the window never started, or the thread's count is unknown).
    pub fn wake_counts(&self) -> Option<WakeCounts> {
        let [Some(a), Some(b)] = self.switches else {
            return None;
        };
        Some(WakeCounts {
            wakes: self.wakes,
            context_switches: b.saturating_sub(a),
        })
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
        let t0 = Instant::now();
        let mut r = Rhythm::new(timing(t0, 100, 1000));
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
        let t0 = Instant::now();
        let mut r = Rhythm::new(timing(t0, 0, 5000));
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
        let t0 = Instant::now();
        let mut r = Rhythm::new(timing(t0, 0, 5000));
        let every = Duration::from_millis(10);
        assert!(r.housekeeping_due(t0, every));
        assert!(!r.housekeeping_due(t0 + Duration::from_millis(9), every));
        assert!(r.housekeeping_due(t0 + Duration::from_millis(10), every));
        assert!(r.wake() <= t0 + Duration::from_millis(20));
    }
}
