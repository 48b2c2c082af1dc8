//! Open-loop pacing: a fixed schedule of intended send times spread evenly over
//! the connections, and the bookkeeping of how far the run fell behind it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// Requests one wake-up of a worker aims to send together: waking once per
/// request cost kvlab 2-4x the CPU per request of its closed loop, and near
/// the target's capacity made kvlab's own late sends the measured tail (see
/// docs/PERFORMANCE.md, "A fixed rate at closed-loop cost").
const BATCH: u32 = 16;

/// The most a request is sent before its intended time to join the worker's batch.
pub const MAX_LEAD: Duration = Duration::from_micros(300);

/// The most a pipelining connection sends a request early to join its own batch.
pub const MAX_CONN_LEAD: Duration = Duration::from_millis(2);

/// The schedule of one run at a fixed total rate.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// Gap between two requests of one connection.
    pub per_conn: Duration,
    /// Gap between two requests of the whole run (offset between connections).
    pub global: Duration,
    /// How early a request may go out with the batch of an earlier one: the
    /// worker wakes at the first request due and sends every request due
    /// within `lead` of it. A request sent early is timed from its actual send,
    /// so batching never shortens a latency; one sent late is timed from its
    /// intended time, as always. Zero until [`Pacer::for_worker`].
    pub lead: Duration,
    /// With `--pipeline P`, how early a connection whose first request is due
    /// sends its next ones with it: up to P per write, as a pipelining client
    /// does (sending them one per write cost 3-5x the closed loop's CPU), at
    /// most [`MAX_CONN_LEAD`] early. Zero at pipeline 1.
    pub conn_lead: Duration,
}

impl Pacer {
    /// A schedule of `rate` requests per second over `connections` connections.
    pub fn new(rate: f64, connections: usize) -> Pacer {
        let global = Duration::from_secs_f64(1.0 / rate);
        Pacer {
            per_conn: global * connections as u32,
            global,
            lead: Duration::ZERO,
            conn_lead: Duration::ZERO,
        }
    }

    /// This schedule for a worker driving `conns` of its connections at
    /// `pipeline`: a lead of about [`BATCH`] of the worker's requests, at most
    /// [`MAX_LEAD`]; a connection's lead of `pipeline - 1` of its requests, at
    /// most [`MAX_CONN_LEAD`].
    pub fn for_worker(self, conns: usize, pipeline: usize) -> Pacer {
        let gap = self.per_conn / conns.max(1) as u32;
        let more = pipeline.saturating_sub(1).min(u32::MAX as usize) as u32;
        Pacer {
            lead: (gap * BATCH).min(MAX_LEAD),
            conn_lead: self.per_conn.saturating_mul(more).min(MAX_CONN_LEAD),
            ..self
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

    #[test]
    fn a_worker_batches_about_sixteen_requests_within_the_most_lead() {
        // 1000 req/s over 10 connections, a worker with 5: one request per 2 ms.
        let p = Pacer::new(1000.0, 10).for_worker(5, 1);
        assert_eq!(p.lead, MAX_LEAD);
        assert_eq!(p.conn_lead, Duration::ZERO);
        // 1M req/s, 10 connections on one worker: one per µs, 16 µs of lead;
        // at pipeline 4 a connection (one per 10 µs) sends 3 more with its first.
        let p = Pacer::new(1e6, 10).for_worker(10, 4);
        assert_eq!(p.lead, Duration::from_micros(16));
        assert_eq!(p.conn_lead, Duration::from_micros(30));
        assert_eq!(Pacer::new(1e6, 10).lead, Duration::ZERO);
        // Never more than the most.
        assert_eq!(
            Pacer::new(100.0, 10).for_worker(10, 16).conn_lead,
            MAX_CONN_LEAD
        );
    }
}
