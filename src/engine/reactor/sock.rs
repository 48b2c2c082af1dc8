//! One socket as its worker's reactor serves it: opened, flushed, read and
//! closed by the back end the worker runs ([`EpollSock`]: non-blocking,
//! registered, its own syscalls and TLS; [`UringSock`]: blocking, its
//! receive and send the ring's operations). The socket's buffers are not
//! here: what it reads goes to an [`Inbox`](super::Inbox), what it writes
//! comes as a slice.

use std::io;
use std::time::Duration;

use mio::Token;

use super::epoll::EpollSock;
use super::uring::UringSock;
use super::{Inbox, Reactor};
use crate::driver::Connector;
use crate::driver::wire::Session;

/// One socket's state in its reactor.
pub(crate) enum Sock {
    /// Over epoll.
    Epoll(EpollSock),
    /// Over io_uring.
    Uring(UringSock),
}

/// The error of a socket handed to a reactor of the other kind (a bug).
fn mismatched() -> io::Error {
    io::Error::other("kvlab: a socket handed to the other reactor")
}

impl Sock {
    /// A closed socket of `reactor`'s kind, known to it as `token`.
    pub(crate) fn new(reactor: &Reactor, token: Token) -> Sock {
        match reactor {
            Reactor::Epoll(_) => Sock::Epoll(EpollSock::new(token)),
            Reactor::Uring(_) => Sock::Uring(UringSock::new(token)),
        }
    }

    /// Whether the socket is open.
    #[inline]
    pub(crate) fn is_open(&self) -> bool {
        match self {
            Sock::Epoll(s) => s.is_open(),
            Sock::Uring(s) => s.is_open(),
        }
    }

    /// Opens the socket (blocking, bounded by `timeout`) and hands it to the
    /// reactor (registered with epoll; its first receive queued on io_uring);
    /// the session the client's codec binds to.
    pub(crate) fn open(
        &mut self,
        connector: &Connector,
        reactor: &mut Reactor,
        timeout: Duration,
    ) -> io::Result<Session> {
        let (s, session) = connector.connect(timeout)?;
        let (s, tls) = s.into_engine()?;
        match (self, reactor) {
            (Sock::Epoll(p), Reactor::Epoll(e)) => p.open(e, s, tls)?,
            (Sock::Uring(p), Reactor::Uring(r)) if tls.is_none() => p.open(r, s)?,
            (Sock::Uring(_), Reactor::Uring(_)) => {
                return Err(io::Error::other("TLS runs over epoll, not io_uring"));
            }
            _ => return Err(mismatched()),
        }
        Ok(session)
    }

    /// Writes `buf[*pos..]` (advancing `pos`); `Ok(true)` when the socket
    /// cannot take more now (epoll: full, then watched for writes; io_uring:
    /// a send is out); `Err` when the connection broke.
    #[inline]
    pub(crate) fn write(
        &mut self,
        reactor: &mut Reactor,
        buf: &[u8],
        pos: &mut usize,
    ) -> io::Result<bool> {
        match (self, reactor) {
            (Sock::Epoll(s), Reactor::Epoll(e)) => s.write(e, buf, pos),
            (Sock::Uring(s), Reactor::Uring(r)) => s.write(r, buf, pos),
            _ => Err(mismatched()),
        }
    }

    /// Whether bytes the socket took still wait to leave (TLS records rustls
    /// has not yet sent).
    #[inline]
    pub(crate) fn has_output(&self) -> bool {
        match self {
            Sock::Epoll(s) => s.has_output(),
            Sock::Uring(_) => false,
        }
    }

    /// Reads once into `inbox`: `(0, _)` when the peer closed, else the
    /// bytes read and whether more may be waiting; `WouldBlock` when nothing
    /// was there. Over io_uring: what the receives brought (already in the
    /// inbox), else the next receive is queued.
    #[inline]
    pub(crate) fn read(
        &mut self,
        reactor: &mut Reactor,
        inbox: &mut impl Inbox,
    ) -> io::Result<(usize, bool)> {
        match (self, reactor) {
            (Sock::Epoll(s), Reactor::Epoll(_)) => s.read(inbox),
            (Sock::Uring(s), Reactor::Uring(r)) => s.read(r),
            _ => Err(mismatched()),
        }
    }

    /// io_uring: the socket's receive completed with `res` and `flags`; what
    /// it brought goes to `inbox` (unless the socket was closed since).
    #[inline]
    pub(crate) fn received(
        &mut self,
        reactor: &mut Reactor,
        res: i32,
        flags: u32,
        inbox: &mut impl Inbox,
    ) {
        if let (Sock::Uring(s), Reactor::Uring(r)) = (self, reactor) {
            s.received(r, res, flags, inbox);
        }
    }

    /// io_uring: the socket's send completed with `res` (the rest of a
    /// partial one is queued); `Err` when the connection broke.
    #[inline]
    pub(crate) fn sent(&mut self, reactor: &mut Reactor, res: i32) -> io::Result<()> {
        match (self, reactor) {
            (Sock::Uring(s), Reactor::Uring(r)) => s.sent(r, res),
            _ => Ok(()),
        }
    }

    /// Closes the socket (what the ring still holds of it becomes stale and
    /// ends; the socket is shut down for that).
    pub(crate) fn close(&mut self, reactor: &mut Reactor) {
        match (self, reactor) {
            (Sock::Epoll(s), _) => s.close(),
            (Sock::Uring(s), Reactor::Uring(r)) => s.close(r),
            (Sock::Uring(_), Reactor::Epoll(_)) => {}
        }
    }

    /// Closes the socket at the end of the run (deregistered from epoll).
    pub(crate) fn deregister(&mut self, reactor: &mut Reactor) {
        if let (Sock::Epoll(s), Reactor::Epoll(e)) = (&mut *self, &*reactor) {
            s.deregister(e);
        }
        self.close(reactor);
    }
}
