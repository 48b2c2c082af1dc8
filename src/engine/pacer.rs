//! Open-loop pacing: each connection's intended send times at a fixed total
//! rate, evenly spaced or as independent Poisson arrivals, and a timer
//! precise enough to keep them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rand::Rng;
use rand::rngs::SmallRng;

use crate::workload::Arrivals;
use crate::workload::timing::{SEND_TOLERANCE, exponential};

/// The schedule of one run at a fixed total rate.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// Mean gap between two requests of one connection.
    pub per_conn: Duration,
    /// Gap between two requests of the whole run (offset between connections
    /// of an evenly spaced schedule).
    pub global: Duration,
    /// How early a request may leave: [`SEND_TOLERANCE`]. One sent early is
    /// timed from its actual send, one sent late from its intended time.
    pub lead: Duration,
    /// How the requests arrive.
    pub arrivals: Arrivals,
}

impl Pacer {
    /// A schedule of `rate` requests per second over `connections`
    /// connections, arriving as `arrivals`.
    pub fn new(rate: f64, connections: usize, arrivals: Arrivals) -> Pacer {
        let global = Duration::from_secs_f64(1.0 / rate);
        Pacer {
            per_conn: global * connections as u32,
            global,
            lead: SEND_TOLERANCE,
            arrivals,
        }
    }

    /// Intended time of the first request of connection `conn`: its offset
    /// of an even schedule, or a first exponential gap from `t0`.
    pub fn first_due(&self, t0: Instant, conn: usize, rng: &mut SmallRng) -> Instant {
        match self.arrivals {
            Arrivals::Uniform => t0 + self.global * conn as u32,
            Arrivals::Poisson => t0 + self.gap(rng),
        }
    }

    /// The gap from a connection's request to its next: the mean, or an
    /// exponential draw of that mean.
    #[inline]
    pub fn gap(&self, rng: &mut SmallRng) -> Duration {
        match self.arrivals {
            Arrivals::Uniform => self.per_conn,
            Arrivals::Poisson => exponential(self.per_conn, rng.next_u64()),
        }
    }
}

/// A wake-up with microsecond precision for the open loop: a `timerfd` in the
/// worker's poll. (`epoll_wait` alone rounds timeouts up to whole milliseconds,
/// which would add up to 1 ms of kvlab's own delay to every paced request.)
/// The timer also learns how late its wake-ups come (the kernel's and the
/// virtual machine's timer latency, 2 µs on bare metal, ~25 µs on some
/// virtual machines) and is armed that much before the send it wakes for.
pub struct PreciseTimer {
    fd: OwnedFd,
    armed: Option<Instant>,
    late: Lateness,
}

/// How late a loop's timed wake-ups come: a running median, in steps, so
/// that an outlier (a descheduled thread) moves it one step as any other
/// wake-up does. The loop asks to be woken that much before a send.
#[derive(Clone, Copy, Debug)]
pub struct Lateness {
    /// The estimate, ns.
    late_ns: u64,
}

impl Default for Lateness {
    fn default() -> Lateness {
        Lateness {
            late_ns: SEND_TOLERANCE.as_nanos() as u64,
        }
    }
}

impl Lateness {
    /// A wake-up meant for `at` came at `now`.
    #[inline]
    pub fn woke(&mut self, at: Instant, now: Instant) {
        let late = now.saturating_duration_since(at).as_nanos() as u64;
        self.late_ns = match late > self.late_ns {
            true => (self.late_ns + LATE_STEP_NS).min(LATE_MAX_NS),
            false => self.late_ns.saturating_sub(LATE_STEP_NS),
        };
    }

    /// The median lateness so far.
    #[inline]
    pub fn lead(&self) -> Duration {
        Duration::from_nanos(self.late_ns)
    }
}

/// The step of the running median of wake-up lateness, ns.
const LATE_STEP_NS: u64 = 250;
/// The most the timer is armed ahead of a send, ns.
const LATE_MAX_NS: u64 = 500_000;

impl PreciseTimer {
    /// A disarmed timer registered under `token`; also narrows this thread's
    /// timer slack ([`narrow_timer_slack`]).
    pub fn new(registry: &Registry, token: Token) -> io::Result<PreciseTimer> {
        // SAFETY: plain syscalls; the fd is checked and then owned.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new, valid descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        narrow_timer_slack();
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(PreciseTimer {
            fd,
            armed: None,
            late: Lateness::default(),
        })
    }

    /// Makes the timer fire at `at` (no syscall if it is already set for then).
    pub fn arm(&mut self, at: Instant) {
        if self.armed == Some(at) {
            return;
        }
        let d = at
            .saturating_duration_since(Instant::now())
            .max(Duration::from_nanos(1000));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid fd and a fully initialised itimerspec.
        unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        self.armed = Some(at);
    }

    /// The poll reported the timer readable: it has fired. Its expiry is not
    /// read (a syscall per wake-up): the next [`PreciseTimer::arm`] sets it
    /// again, which clears it.
    pub fn fired(&mut self, now: Instant) {
        if let Some(at) = self.armed.take() {
            self.late.woke(at, now);
        }
    }

    /// How long before a send the timer is best armed: the median lateness
    /// of its wake-ups so far.
    pub fn wake_lead(&self) -> Duration {
        self.late.lead()
    }
}

/// Narrows the calling thread's timer slack to 1 µs (from 50 µs), so that
/// its timed waits (a `timerfd`, io_uring's wait) end when asked.
pub fn narrow_timer_slack() {
    // SAFETY: prctl with an integer argument; affects only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_connections_evenly() {
        let p = Pacer::new(1000.0, 10, Arrivals::Uniform);
        assert_eq!(p.per_conn, Duration::from_millis(10));
        assert_eq!(p.lead, SEND_TOLERANCE);
        let t0 = Instant::now();
        let mut rng = crate::workload::rng(1);
        assert_eq!(p.first_due(t0, 3, &mut rng) - t0, Duration::from_millis(3));
        assert_eq!(p.gap(&mut rng), p.per_conn);
    }

    /// Kolmogorov-Smirnov: the gaps' distribution against the exponential of
    /// their mean, at the 1% level.
    #[test]
    fn poisson_gaps_are_exponential_with_the_connections_mean() {
        let p = Pacer::new(20_000.0, 10, Arrivals::Poisson);
        let mut rng = crate::workload::rng(7);
        let n = 20_000;
        let mut gaps: Vec<f64> = (0..n).map(|_| p.gap(&mut rng).as_secs_f64()).collect();
        gaps.sort_by(f64::total_cmp);
        let mean = p.per_conn.as_secs_f64();
        let observed = gaps.iter().sum::<f64>() / n as f64;
        assert!((observed / mean - 1.0).abs() < 0.03, "{observed} vs {mean}");
        let d = gaps
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let cdf = 1.0 - (-g / mean).exp();
                (cdf - i as f64 / n as f64)
                    .abs()
                    .max((i + 1) as f64 / n as f64 - cdf)
            })
            .fold(0.0, f64::max);
        assert!(d < 1.63 / (n as f64).sqrt(), "KS distance {d}");
        // Evenly spaced gaps are far from it.
        assert!(1.0 - (-1.0f64).exp() - 0.5 > 1.63 / (n as f64).sqrt());
    }
}
