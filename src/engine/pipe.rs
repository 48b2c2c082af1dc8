//! One engine socket's buffers, whatever the client does over it: the
//! request bytes waiting to leave, the reply bytes waiting to be decoded,
//! the round trip kvlab emulates on it ([`Link`]) and the back-off of failed
//! attempts. How the bytes leave and arrive is its reactor's ([`Sock`]). No
//! allocation once warm (over TLS, rustls 0.23 still allocates one buffer per
//! record it encrypts or decrypts: a pipelined batch is one record). It knows
//! no protocol: the client keeps the codec bound to its session.

use std::io;
use std::time::{Duration, Instant};

use mio::Token;

use super::link::Link;
use super::reactor::sock::Sock;
use super::reactor::{Inbox, Reactor, too_large};
use crate::driver::Connector;
use crate::driver::wire::Session;
use crate::workload::LinkDelay;

/// One socket of a connection with its buffers and its back-off.
pub(crate) struct Pipe {
    /// The socket as its reactor serves it.
    sock: Sock,
    pub(crate) wbuf: Vec<u8>,
    pub(crate) wpos: usize,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) rstart: usize,
    pub(crate) rend: usize,
    /// The most the read buffer may grow to: a reply that does not fit is
    /// larger than any this run's requests can be answered with.
    rmax: usize,
    /// Not before this instant is it opened again.
    pub(crate) retry_at: Instant,
    /// A request succeeded since the socket was opened.
    pub(crate) served: bool,
    /// Attempts in a row that failed: not opened, or closed before serving.
    pub(crate) streak: u32,
    /// The round trip kvlab emulates on this socket, if any.
    link: Option<Box<Link>>,
    /// More may wait to be read than one pass reads: the socket is in the
    /// worker's backlog, read again next pass without waiting for an event.
    pub(crate) backlog: bool,
}

/// The read side of a pipe as its socket fills it.
struct ReadEnd<'a> {
    rbuf: &'a mut Vec<u8>,
    rstart: &'a mut usize,
    rend: &'a mut usize,
    rmax: usize,
    link: Option<&'a mut Link>,
}

impl Inbox for ReadEnd<'_> {
    /// Moves unparsed bytes to the front when the free end is short of
    /// `need`, grows the buffer (doubling) when that is not enough
    /// (`InvalidData` past its limit: the server sent a reply no request of
    /// the run has).
    #[inline]
    fn room(&mut self, need: usize) -> io::Result<&mut [u8]> {
        let (start, end) = (*self.rstart, *self.rend);
        if start > 0 && (start == end || self.rbuf.len() - end < need) {
            self.rbuf.copy_within(start..end, 0);
            if let Some(l) = self.link.as_deref_mut() {
                l.shift_in(start);
            }
            *self.rend -= start;
            *self.rstart = 0;
        }
        let end = *self.rend + need;
        if end > self.rbuf.len() {
            if end > self.rmax {
                return Err(too_large());
            }
            let n = (self.rbuf.len() * 2).clamp(end, self.rmax);
            self.rbuf.resize(n, 0);
        }
        Ok(&mut self.rbuf[*self.rend..])
    }

    #[inline]
    fn filled(&mut self, n: usize) {
        *self.rend += n;
    }
}

impl Pipe {
    /// A closed socket of `reactor` polled as `token`, with buffers of
    /// `wbuf` and `rbuf` bytes, the read buffer growing to at most `rmax`.
    pub(crate) fn new(
        reactor: &Reactor,
        token: Token,
        (wbuf, rbuf, rmax): (usize, usize, usize),
        now: Instant,
    ) -> Pipe {
        Pipe {
            sock: Sock::new(reactor, token),
            wbuf: Vec::with_capacity(wbuf),
            wpos: 0,
            rbuf: vec![0; rbuf],
            rstart: 0,
            rend: 0,
            rmax: rmax.max(rbuf),
            retry_at: now,
            served: false,
            streak: 0,
            link: None,
            backlog: false,
        }
    }

    /// Emulates `delay` on this socket (bytes wait half of it each way), its
    /// jitter drawn from `seed`, with room for `inflight` requests' marks.
    pub(crate) fn with_link(
        mut self,
        delay: Option<LinkDelay>,
        seed: u64,
        inflight: usize,
    ) -> Pipe {
        self.link = delay.map(|d| Box::new(Link::new(d, seed, inflight)));
        self
    }

    /// Opens the socket (blocking, bounded by `timeout`) with empty buffers;
    /// the session the client's codec binds to.
    pub(crate) fn open(
        &mut self,
        connector: &Connector,
        reactor: &mut Reactor,
        timeout: Duration,
    ) -> io::Result<Session> {
        let session = self.sock.open(connector, reactor, timeout)?;
        self.served = false;
        self.reset();
        Ok(session)
    }

    /// The socket and the read side it fills.
    #[inline]
    fn split(&mut self) -> (&mut Sock, ReadEnd<'_>) {
        let read = ReadEnd {
            rbuf: &mut self.rbuf,
            rstart: &mut self.rstart,
            rend: &mut self.rend,
            rmax: self.rmax,
            link: self.link.as_deref_mut(),
        };
        (&mut self.sock, read)
    }

    /// io_uring: the socket's receive completed with `res` and `flags`: the
    /// bytes it brought are appended to the read buffer (unless the socket
    /// was closed since).
    #[inline]
    pub(crate) fn received(&mut self, reactor: &mut Reactor, res: i32, flags: u32) {
        let (sock, mut read) = self.split();
        sock.received(reactor, res, flags, &mut read);
    }

    /// io_uring: the socket's send completed with `res` (the rest of a
    /// partial one is queued); `Err` when the connection broke.
    #[inline]
    pub(crate) fn sent(&mut self, reactor: &mut Reactor, res: i32) -> io::Result<()> {
        self.sock.sent(reactor, res)
    }

    /// Whether the socket is open.
    #[inline]
    pub(crate) fn is_open(&self) -> bool {
        self.sock.is_open()
    }

    fn reset(&mut self) {
        self.wbuf.clear();
        self.wpos = 0;
        self.rstart = 0;
        self.rend = 0;
        self.backlog = false;
        if let Some(l) = self.link.as_mut() {
            l.clear();
        }
    }

    /// The end of what the client may decode: what the read buffer holds, or
    /// on an emulated link what has come through its inbound half.
    #[inline]
    pub(crate) fn readable_end(&self) -> usize {
        self.link.as_ref().map_or(self.rend, |l| l.visible())
    }

    /// On an emulated link: the bytes just read arrive after the inbound
    /// half; when they may be decoded (`None`: no link, or nothing new).
    #[inline]
    pub(crate) fn arrived(&mut self, now: Instant) -> Option<Instant> {
        let end = self.rend;
        self.link.as_mut()?.arrived(end, now)
    }

    /// On an emulated link: shows the client the next bytes that have come
    /// through by `now`; when they did (`None`: nothing new has).
    #[inline]
    pub(crate) fn reveal(&mut self, now: Instant) -> Option<Instant> {
        self.link.as_mut()?.reveal(now)
    }

    /// Closes the socket, dropping what was buffered. One that served nothing
    /// since it was opened counts as a failed attempt (backed off).
    pub(crate) fn close(&mut self, reactor: &mut Reactor, now: Instant) {
        self.sock.close(reactor);
        self.reset();
        self.retry_at = now;
        if self.served {
            self.streak = 0;
        } else {
            self.failed(now);
        }
    }

    /// One more failed attempt in a row: the next waits [`backoff`] longer.
    pub(crate) fn failed(&mut self, now: Instant) {
        self.streak += 1;
        self.retry_at = now + backoff(self.streak);
    }

    /// Lets the socket go at the end of the run (deregistered from epoll).
    pub(crate) fn deregister(&mut self, reactor: &mut Reactor) {
        self.sock.deregister(reactor);
    }

    /// Whether bytes wait to be written: requests not yet handed over, or
    /// TLS records rustls has not yet sent.
    pub(crate) fn has_output(&self) -> bool {
        self.wpos < self.wbuf.len() || self.sock.has_output()
    }

    /// Writes what is buffered (on an emulated link, what has come through
    /// its outbound half by `now`, the bytes new since the last flush
    /// written by the application at `written`); `Err` when the connection
    /// broke. On a link, when those new bytes may leave, if not yet.
    pub(crate) fn flush(
        &mut self,
        reactor: &mut Reactor,
        now: Instant,
        written: Instant,
    ) -> io::Result<Option<Instant>> {
        if !self.sock.is_open() {
            return Ok(None);
        }
        let (end, marked) = match self.link.as_deref_mut() {
            None => (self.wbuf.len(), None),
            Some(l) => {
                let marked = l.sent(self.wbuf.len(), written).filter(|&at| at > now);
                l.release(now);
                (l.released(), marked)
            }
        };
        if self
            .sock
            .write(reactor, &self.wbuf[..end], &mut self.wpos)?
        {
            return Ok(marked);
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
            if let Some(l) = self.link.as_deref_mut() {
                l.shift_out(end);
            }
        } else if self.wpos * 2 >= self.wbuf.len() {
            // On a link: drop what was written, keep what waits.
            self.wbuf.drain(..self.wpos);
            if let Some(l) = self.link.as_deref_mut() {
                l.shift_out(self.wpos);
            }
            self.wpos = 0;
        }
        Ok(marked)
    }

    /// On an emulated link: what is buffered and not yet timed was written
    /// by the application at `written`; when it leaves (`None`: no link,
    /// or nothing new).
    #[inline]
    pub(crate) fn mark(&mut self, written: Instant) -> Option<Instant> {
        let len = self.wbuf.len();
        self.link.as_mut()?.sent(len, written)
    }

    /// Whether the read buffer can ever hold a reply of `n` bytes.
    #[inline]
    pub(crate) fn can_hold(&self, n: usize) -> bool {
        n <= self.rmax
    }

    /// Reads once into the free end of the read buffer (making room first):
    /// `(0, _)` when the peer closed, else the bytes read and whether more
    /// may be waiting; `WouldBlock` when nothing was there. Over io_uring:
    /// what the receive brought, else the next receive is queued.
    #[inline]
    pub(crate) fn read_some(&mut self, reactor: &mut Reactor) -> io::Result<(usize, bool)> {
        let (sock, mut read) = self.split();
        sock.read(reactor, &mut read)
    }
}

/// The wait before the next attempt after `streak` failed ones in a row: 0.2 s,
/// 0.4 s, … up to 6.4 s (a server refusing connections is not hammered).
pub(crate) fn backoff(streak: u32) -> Duration {
    Duration::from_millis(100 << streak.min(6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_six_seconds() {
        let ms: Vec<u128> = (1..=8).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(ms, [200, 400, 800, 1600, 3200, 6400, 6400, 6400]);
    }

    #[test]
    fn a_socket_closed_before_serving_backs_off() {
        let now = Instant::now();
        let mut r = Reactor::new(crate::engine::reactor::IoKind::Epoll, false, 1).unwrap();
        let mut p = Pipe::new(&r, Token(0), (16, 16, 64), now);
        p.close(&mut r, now);
        assert_eq!((p.streak, p.retry_at), (1, now + backoff(1)));
        p.served = true;
        p.close(&mut r, now);
        assert_eq!((p.streak, p.retry_at), (0, now));
    }
}
