//! How one worker's loop talks to the kernel: its sends, receives and the
//! wait for the next wake-up, over io_uring or epoll (`--io`). The loop's
//! schedule, tally and codecs are the same over both; a [`Reactor`] only
//! changes how the bytes a socket buffered leave, how replies arrive and how
//! the loop sleeps.
//!
//! - epoll ([`epoll`]): `epoll_wait` (a `timerfd` for microsecond wakes),
//!   then a `read` of each ready socket and a `write` of each flushed one.
//! - io_uring ([`uring`]): each open socket keeps one multishot receive in
//!   the kernel, filling the worker's provided buffers (`bufs`), each copied
//!   to the socket's read buffer and handed back; a flush hands the socket's
//!   bytes to a send; every send and the wait with the next wake's timeout go
//!   to the kernel in one `io_uring_enter` per pass, which returns the
//!   completions.
//!
//! TLS runs use epoll (rustls reads and writes the socket itself); the
//! choice and its reason are in the results ([`Chosen`]).

mod bufs;
mod epoll;
pub(crate) mod sock;
mod timer;
mod uring;

use std::io;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mio::Token;

use crate::plan::io::IoChoice;
use epoll::Epoll;
use uring::Ring;

/// The interface a run's workers use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// io_uring.
    Uring,
    /// epoll (mio).
    Epoll,
}

impl IoKind {
    /// The name in results and the summary: `io_uring` or `epoll`.
    pub fn name(self) -> &'static str {
        match self {
            IoKind::Uring => "io_uring",
            IoKind::Epoll => "epoll",
        }
    }
}

/// The interface a point runs over, and why when it is not the one asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    /// The interface.
    pub kind: IoKind,
    /// Why `auto` came to epoll (TLS, a kernel without io_uring); `None`
    /// when it is io_uring or was asked for by name.
    pub why: Option<String>,
}

/// Resolves `choice` for a point whose connections use TLS when `tls`:
/// `auto` is io_uring unless the run has TLS or the kernel refuses it (then
/// epoll, saying why); `uring` by name is refused in one line where it
/// cannot run.
pub fn choose(choice: IoChoice, tls: bool) -> Result<Chosen, crate::error::UsageError> {
    let epoll = |why: Option<String>| Chosen {
        kind: IoKind::Epoll,
        why,
    };
    match choice {
        IoChoice::Epoll => Ok(epoll(None)),
        IoChoice::Auto if tls => Ok(epoll(Some("TLS runs over epoll".into()))),
        IoChoice::Auto => Ok(match uring_refused() {
            Some(why) => epoll(Some(format!("io_uring refused here: {why}"))),
            None => Chosen {
                kind: IoKind::Uring,
                why: None,
            },
        }),
        IoChoice::Uring if tls => Err(crate::plan::io::uring_with_tls()),
        IoChoice::Uring => match uring_refused() {
            Some(why) => Err(crate::error::UsageError::bad(
                "--io",
                format!("io_uring refused here: {why}"),
                "give --io epoll or leave --io out (then epoll is used where io_uring is refused)",
            )),
            None => Ok(Chosen {
                kind: IoKind::Uring,
                why: None,
            }),
        },
    }
}

/// Why this process cannot use io_uring (`io_uring_setup` refused, as in
/// older kernels and some sandboxes; a kernel without the wait's timeout
/// argument), asked once; `None`: it can.
pub fn uring_refused() -> Option<&'static str> {
    static REFUSED: OnceLock<Option<String>> = OnceLock::new();
    REFUSED
        .get_or_init(|| {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            match kernel_version(&release) {
                // Multishot receives (and their provided buffers) are 6.0's.
                Some(v) if v < (6, 0) => Some(format!(
                    "Linux {}.{} (kvlab's io_uring needs 6.0: multishot receives)",
                    v.0, v.1
                )),
                _ => Ring::new(1, false).err().map(|e| e.to_string()),
            }
        })
        .as_deref()
}

/// The major and minor version of a kernel release (`6.1.0-18-amd64`).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Where the bytes a socket reads go: its read buffer.
pub(crate) trait Inbox {
    /// At least `need` free bytes at the read buffer's end (`InvalidData`
    /// past its limit: a reply larger than any the run's requests have).
    fn room(&mut self, need: usize) -> io::Result<&mut [u8]>;
    /// The first `n` bytes of that room now hold what was read.
    fn filled(&mut self, n: usize);
}

/// The error of a reply past the read buffer's limit.
pub(crate) fn too_large() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a reply larger than any this run's requests can be answered with",
    )
}

/// What a wait brought for one socket.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ready {
    /// The socket's token (its connection and its place there).
    pub token: Token,
    /// What happened.
    pub what: What,
}

/// What happened to a socket.
#[derive(Clone, Copy, Debug)]
pub(crate) enum What {
    /// epoll: readable, closed or in error (a read tells which).
    Readable,
    /// epoll: writable again.
    Writable,
    /// io_uring: its receive completed with this result and these flags.
    Received(i32, u32),
    /// io_uring: its send completed with this result.
    Sent(i32),
}

/// One worker's interface to the kernel.
pub(crate) enum Reactor {
    /// epoll with a precise timer.
    Epoll(Epoll),
    /// An io_uring ring.
    Uring(Box<Ring>),
}

impl Reactor {
    /// A reactor of `kind` for about `sockets` sockets; `paced` loops need
    /// wake-ups finer than epoll's milliseconds (a timer is added there).
    pub(crate) fn new(kind: IoKind, paced: bool, sockets: usize) -> io::Result<Reactor> {
        Ok(match kind {
            IoKind::Epoll => Reactor::Epoll(Epoll::new(paced)?),
            IoKind::Uring => Reactor::Uring(Box::new(Ring::new(sockets, paced)?)),
        })
    }

    /// Hands the kernel what was queued and waits until `wake` or the first
    /// completion or event, appending what came to `out`.
    #[inline]
    pub(crate) fn wait(&mut self, wake: Instant, out: &mut Vec<Ready>) -> io::Result<()> {
        match self {
            Reactor::Epoll(e) => e.wait(wake, out),
            Reactor::Uring(r) => r.wait(wake, out),
        }
    }

    /// How long before a due send the loop should ask to be woken: the usual
    /// lateness of its wake-ups.
    #[inline]
    pub(crate) fn wake_lead(&self) -> Duration {
        match self {
            Reactor::Epoll(e) => e.wake_lead(),
            Reactor::Uring(r) => r.wake_lead(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_read_as_versions() {
        assert_eq!(kernel_version("6.1.0-18-amd64\n"), Some((6, 1)));
        assert_eq!(kernel_version("5.19.17"), Some((5, 19)));
        assert_eq!(kernel_version("6.18.44-fc-v657"), Some((6, 18)));
        assert_eq!(kernel_version(""), None);
    }

    #[test]
    fn tls_and_a_refusing_kernel_come_to_epoll_with_the_reason() {
        let tls = choose(IoChoice::Auto, true).unwrap();
        assert_eq!(tls.kind, IoKind::Epoll);
        assert_eq!(tls.why.as_deref(), Some("TLS runs over epoll"));
        let e = choose(IoChoice::Uring, true).unwrap_err().to_string();
        assert!(e.contains("--io") && e.contains("epoll"), "{e}");
        assert_eq!(choose(IoChoice::Epoll, false).unwrap().why, None);
        let auto = choose(IoChoice::Auto, false).unwrap();
        match uring_refused() {
            None => assert_eq!(auto.kind, IoKind::Uring),
            Some(why) => assert!(auto.why.unwrap().contains(why)),
        }
    }
}
