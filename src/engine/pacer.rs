//! Open-loop pacing: a fixed schedule of intended send times spread evenly over
//! the connections, and the bookkeeping of how far the run fell behind it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// The schedule of one run at a fixed total rate.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// Gap between two requests of one connection.
    pub per_conn: Duration,
    /// Gap between two requests of the whole run (offset between connections).
    pub global: Duration,
}

impl Pacer {
    /// A schedule of `rate` requests per second over `connections` connections.
    pub fn new(rate: f64, connections: usize) -> Pacer {
        let global = Duration::from_secs_f64(1.0 / rate);
        Pacer {
            per_conn: global * connections as u32,
            global,
        }
    }

    /// Intended time of the first request of connection `conn`.
    pub fn first_due(&self, t0: Instant, conn: usize) -> Instant {
        t0 + self.global * conn as u32
    }
}

/// A wake-up with microsecond precision for the open loop: a `timerfd` in the
/// worker's poll. (`epoll_wait` alone rounds timeouts up to whole milliseconds,
/// which would add up to 1 ms of kvlab's own delay to every paced request.)
pub struct PreciseTimer {
    fd: OwnedFd,
    armed: Option<Instant>,
}

impl PreciseTimer {
    /// A disarmed timer registered under `token`; also narrows this thread's timer slack.
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
        // SAFETY: prctl with an integer argument; affects only the calling thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(PreciseTimer { fd, armed: None })
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

    /// Consumes an expiry after the poll reported the timer readable.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a local buffer; non-blocking fd.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_connections_evenly() {
        let p = Pacer::new(1000.0, 10);
        assert_eq!(p.per_conn, Duration::from_millis(10));
        let t0 = Instant::now();
        assert_eq!(p.first_due(t0, 3) - t0, Duration::from_millis(3));
    }
}
