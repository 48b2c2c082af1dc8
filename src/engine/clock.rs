//! The clock of a run: the common start line every worker waits at, the
//! instants of warm-up, measuring and deadline, the once-a-second tick, and a
//! thread's busy time.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::workload::Stop;

/// The clock of one run, shared by all workers (a value, copied).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Start of the run (warm-up begins).
    pub t0: Instant,
    /// Start of the measured phase.
    pub measure_start: Instant,
    /// End of the measured phase, for a timed run.
    pub deadline: Option<Instant>,
}

impl Timing {
    /// The clock of a run that starts at `t0`.
    pub(super) fn new(t0: Instant, warmup: Duration, stop: Stop) -> Timing {
        let measure_start = t0 + warmup;
        let deadline = match stop {
            Stop::Duration(s) => Some(measure_start + Duration::from_secs_f64(s)),
            Stop::Requests(_) => None,
        };
        Timing {
            t0,
            measure_start,
            deadline,
        }
    }

    /// A stand-in used before the run starts.
    pub fn placeholder(now: Instant) -> Timing {
        Timing {
            t0: now,
            measure_start: now,
            deadline: None,
        }
    }
}

/// Where a worker waits, its connections open, until every worker is ready and
/// the run's clock is set.
pub struct StartLine {
    pub(super) ready: Arc<AtomicUsize>,
    pub(super) clock: Arc<OnceLock<Timing>>,
}

impl StartLine {
    /// Reports this worker ready and waits for the common start: until the
    /// clock is set, then until its `t0` (a start set ahead in time), or
    /// until `shutdown`.
    pub fn wait(self, shutdown: &AtomicBool) -> Timing {
        self.ready.fetch_add(1, Ordering::SeqCst);
        let t = loop {
            if let Some(t) = self.clock.get() {
                break *t;
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        loop {
            let left = t.t0.saturating_duration_since(Instant::now());
            if left.is_zero() || shutdown.load(Ordering::Relaxed) {
                return t;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
}

/// The first once-a-second tick of a run and the index of the second it ends
/// (negative during warm-up, 0 for the first measured second).
pub(crate) fn first_tick(timing: &Timing) -> (Instant, i64) {
    let mut next_tick = timing.measure_start;
    while next_tick > timing.t0 + Duration::from_secs(1) {
        next_tick -= Duration::from_secs(1);
    }
    if next_tick <= timing.t0 {
        next_tick += Duration::from_secs(1);
    }
    let second = (next_tick
        .saturating_duration_since(timing.measure_start)
        .as_secs_f64()
        .round() as i64)
        - (timing
            .measure_start
            .saturating_duration_since(next_tick)
            .as_secs_f64()
            .round() as i64)
        - 1;
    (next_tick, second)
}

/// Context switches of the calling thread so far, voluntary (it slept) and
/// not (it was preempted).
pub(crate) fn thread_context_switches() -> Option<u64> {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) } == 0;
    ok.then(|| (u.ru_nvcsw + u.ru_nivcsw).max(0) as u64)
}

/// On-CPU plus run-queue time of the calling thread (Linux schedstat), in ns.
pub(crate) fn thread_busy_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some(f.next()?? + f.next()??)
}
