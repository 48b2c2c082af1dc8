//! The reactor's timed wake-ups: a `timerfd` precise to the microsecond for
//! epoll, how late a loop's wake-ups come (both back ends arm that much
//! early), and the thread's narrowed timer slack.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

use crate::workload::timing::SEND_TOLERANCE;

/// A wake-up with microsecond precision for the open loop: a `timerfd` in the
/// worker's poll. (`epoll_wait` alone rounds timeouts up to whole milliseconds,
/// which would add up to 1 ms of kvlab's own delay to every paced request.)
/// The timer also learns how late its wake-ups come (the kernel's and the
/// virtual machine's timer latency, 2 µs on bare metal, ~25 µs on some
/// virtual machines) and is armed that much before the send it wakes for.
pub(super) struct PreciseTimer {
    fd: OwnedFd,
    armed: Option<Instant>,
    late: Lateness,
}

/// How late a loop's timed wake-ups come: a running median, in steps, so
/// that an outlier (a descheduled thread) moves it one step as any other
/// wake-up does. The loop asks to be woken that much before a send.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lateness {
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
    pub(super) fn woke(&mut self, at: Instant, now: Instant) {
        let late = now.saturating_duration_since(at).as_nanos() as u64;
        self.late_ns = match late > self.late_ns {
            true => (self.late_ns + LATE_STEP_NS).min(LATE_MAX_NS),
            false => self.late_ns.saturating_sub(LATE_STEP_NS),
        };
    }

    /// The median lateness so far.
    #[inline]
    pub(super) fn lead(&self) -> Duration {
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
    pub(super) fn new(registry: &Registry, token: Token) -> io::Result<PreciseTimer> {
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
    pub(super) fn arm(&mut self, at: Instant) {
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
    pub(super) fn fired(&mut self, now: Instant) {
        if let Some(at) = self.armed.take() {
            self.late.woke(at, now);
        }
    }

    /// How long before a send the timer is best armed: the median lateness
    /// of its wake-ups so far.
    pub(super) fn wake_lead(&self) -> Duration {
        self.late.lead()
    }
}

/// Narrows the calling thread's timer slack to 1 µs (from 50 µs), so that
/// its timed waits (a `timerfd`, io_uring's wait) end when asked.
pub(super) fn narrow_timer_slack() {
    // SAFETY: prctl with an integer argument; affects only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
}
