//! One engine socket with its buffers, whatever the client does over it: open
//! (blocking, bounded), flush what is buffered, read what the socket has, and
//! the back-off of failed attempts. Over epoll it is non-blocking and
//! registered with the worker's poll, and reads and writes are its own
//! syscalls; over io_uring its receive and send are the ring's operations on
//! its buffers ([`RingOps`]). No allocation once warm (over TLS, rustls 0.23 still allocates one
//! buffer per record it encrypts or decrypts: a pipelined batch is one record).
//! It knows no protocol: the client keeps the codec bound to its session.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::Token;
use rustls::ClientConnection;

use super::link::Link;
use super::reactor::Reactor;
use super::reactor::uring::{Ring, RingOps, TOO_LARGE};
use crate::driver::Connector;
use crate::driver::wire::Session;
use crate::transport::EngineSock;
use crate::workload::LinkDelay;

/// One socket of a connection with its buffers and its back-off.
pub(crate) struct Pipe {
    pub(crate) stream: Option<EngineSock>,
    /// The TLS session over `stream`, if the target uses TLS.
    tls: Option<Box<ClientConnection>>,
    pub(crate) wbuf: Vec<u8>,
    pub(crate) wpos: usize,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) rstart: usize,
    pub(crate) rend: usize,
    /// The most the read buffer may grow to: a reply that does not fit is
    /// larger than any this run's requests can be answered with.
    rmax: usize,
    want_write: bool,
    token: Token,
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
    /// Over io_uring: its receive and send on the ring.
    ring: RingOps,
}

impl Pipe {
    /// A closed socket polled as `token`, with buffers of `wbuf` and `rbuf`
    /// bytes, the read buffer growing to at most `rmax`.
    pub(crate) fn new(
        token: Token,
        (wbuf, rbuf, rmax): (usize, usize, usize),
        now: Instant,
    ) -> Pipe {
        Pipe {
            stream: None,
            tls: None,
            wbuf: Vec::with_capacity(wbuf),
            wpos: 0,
            rbuf: vec![0; rbuf],
            rstart: 0,
            rend: 0,
            rmax: rmax.max(rbuf),
            want_write: false,
            token,
            retry_at: now,
            served: false,
            streak: 0,
            link: None,
            backlog: false,
            ring: RingOps::default(),
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
        let (mut s, tls) = s.into_engine()?;
        match reactor {
            Reactor::Epoll(e) => e.watch(&mut s, self.token, false, true)?,
            // The ring waits for the socket itself.
            Reactor::Uring(_) => s.set_blocking()?,
        }
        let fd = s.raw_fd();
        self.stream = Some(s);
        self.tls = tls;
        self.served = false;
        self.reset();
        if let Reactor::Uring(r) = reactor {
            self.ring.opened(r, fd);
            self.receive(r)?;
        }
        Ok(session)
    }

    /// io_uring: queues the socket's multishot receive, unless one is out
    /// (or a stale one has yet to end).
    fn receive(&mut self, ring: &mut Ring) -> io::Result<()> {
        let Some(s) = self.stream.as_ref() else {
            return Ok(());
        };
        if !self.ring.may_receive() {
            return Ok(());
        }
        self.ring.receive(ring, self.token, s.raw_fd())
    }

    /// io_uring: the socket's receive completed with `res` and `flags`: the
    /// bytes it brought are appended to the read buffer (unless the socket
    /// was closed since) and its provided buffer handed back.
    #[inline]
    pub(crate) fn received(&mut self, reactor: &mut Reactor, res: i32, flags: u32) {
        let Reactor::Uring(r) = reactor else {
            return;
        };
        let (current, bid) = self.ring.received(res, flags);
        if let Some(bid) = bid {
            if current && res > 0 {
                let came = match self.take_in(r.bytes(bid, res as usize)) {
                    Ok(()) => res,
                    Err(_) => TOO_LARGE,
                };
                self.ring.came(came);
            }
            r.recycle(bid);
        }
    }

    /// io_uring: appends `bytes` to the read buffer (making room for them
    /// first); `InvalidData` past its limit.
    fn take_in(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.make_room(bytes.len())?;
        let end = self.rend + bytes.len();
        self.rbuf[self.rend..end].copy_from_slice(bytes);
        self.rend = end;
        Ok(())
    }

    /// io_uring: the socket's send completed with `res` (the rest of a
    /// partial one is queued); `Err` when the connection broke.
    #[inline]
    pub(crate) fn sent(&mut self, reactor: &mut Reactor, res: i32) -> io::Result<()> {
        let Reactor::Uring(r) = reactor else {
            return Ok(());
        };
        let fd = self.stream.as_ref().map(EngineSock::raw_fd);
        self.ring.sent(r, self.token, fd, res)
    }

    /// Whether the socket is open.
    #[inline]
    pub(crate) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    fn reset(&mut self) {
        self.wbuf.clear();
        self.wpos = 0;
        self.rstart = 0;
        self.rend = 0;
        self.want_write = false;
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

    /// On an emulated link: shows the client what has come through by
    /// `now`; whether anything new has.
    #[inline]
    pub(crate) fn reveal(&mut self, now: Instant) -> bool {
        self.link.as_mut().is_some_and(|l| l.reveal(now))
    }

    /// Closes the socket, dropping what was buffered. One that served nothing
    /// since it was opened counts as a failed attempt (backed off).
    pub(crate) fn close(&mut self, reactor: &mut Reactor, now: Instant) {
        self.let_go(reactor);
        self.tls = None;
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

    /// Lets the socket go: what the ring still holds of it becomes stale and
    /// the socket is shut down so that it ends (the buffers stay until then);
    /// its slot in the ring's fixed-file table is emptied.
    fn let_go(&mut self, reactor: &mut Reactor) {
        self.ring.closed();
        let Some(s) = self.stream.take() else {
            return;
        };
        if self.ring.holds() {
            s.shut_down();
        }
        if let Reactor::Uring(r) = reactor {
            self.ring.unfix(r);
        }
    }

    /// Lets the socket go at the end of the run (deregistered from epoll).
    pub(crate) fn deregister(&mut self, reactor: &mut Reactor) {
        if let (Reactor::Epoll(e), Some(s)) = (&*reactor, self.stream.as_mut()) {
            let _ = e.registry().deregister(s);
        }
        self.let_go(reactor);
    }

    /// Whether bytes wait to be written: requests not yet handed over, or
    /// TLS records rustls has not yet sent.
    pub(crate) fn has_output(&self) -> bool {
        self.wpos < self.wbuf.len() || self.tls.as_ref().is_some_and(|t| t.wants_write())
    }

    /// Writes what is buffered (on an emulated link, what has come through
    /// its outbound half by `now`); `Err` when the connection broke. On a
    /// link, when the bytes new since the last flush may leave.
    pub(crate) fn flush(
        &mut self,
        reactor: &mut Reactor,
        now: Instant,
    ) -> io::Result<Option<Instant>> {
        let Some(s) = self.stream.as_mut() else {
            return Ok(None);
        };
        let (end, marked) = match self.link.as_deref_mut() {
            None => (self.wbuf.len(), None),
            Some(l) => {
                let marked = l.sent(self.wbuf.len(), now);
                l.release(now);
                (l.released(), marked)
            }
        };
        let buf = &self.wbuf[..end];
        let blocked = match (&mut *reactor, self.tls.as_deref_mut()) {
            (Reactor::Uring(r), _) => {
                let fd = s.raw_fd();
                self.ring.send(r, self.token, fd, buf, &mut self.wpos)?
            }
            (Reactor::Epoll(_), None) => write_plain(s, buf, &mut self.wpos)?,
            (Reactor::Epoll(_), Some(tls)) => write_tls(s, tls, buf, &mut self.wpos)?,
        };
        if blocked {
            if let Reactor::Epoll(e) = reactor
                && !self.want_write
            {
                self.want_write = true;
                e.watch(s, self.token, true, false)?;
            }
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
        if self.want_write
            && let Reactor::Epoll(e) = reactor
        {
            self.want_write = false;
            e.watch(s, self.token, false, false)?;
        }
        Ok(marked)
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
    pub(crate) fn read_some(&mut self, reactor: &mut Reactor) -> io::Result<(usize, bool)> {
        if let Reactor::Uring(r) = reactor {
            return self.take_received(r);
        }
        self.make_room(1)?;
        let Some(s) = self.stream.as_mut() else {
            return Ok((0, false));
        };
        let space = self.rbuf.len() - self.rend;
        let n = match self.tls.as_deref_mut() {
            None => s.read(&mut self.rbuf[self.rend..])?,
            Some(tls) => read_tls(s, tls, &mut self.rbuf[self.rend..])?,
        };
        self.rend += n;
        // Over TLS, decrypted data may wait in rustls whatever the count.
        Ok((n, n == space || self.tls.is_some()))
    }

    /// io_uring: what the socket's receive brought (`(n, true)`: the next
    /// call queues the next receive), else the next receive is queued and
    /// `WouldBlock`.
    fn take_received(&mut self, ring: &mut Ring) -> io::Result<(usize, bool)> {
        match self.ring.take() {
            Some(TOO_LARGE) => Err(too_large()),
            Some(r) if r < 0 => Err(io::Error::from_raw_os_error(-r)),
            Some(0) => Ok((0, false)),
            // Already in the read buffer.
            Some(n) => Ok((n as usize, true)),
            None => {
                self.receive(ring)?;
                Err(io::ErrorKind::WouldBlock.into())
            }
        }
    }

    /// Leaves at least `need` bytes free at the end of the read buffer:
    /// moves unparsed bytes to the front when that is short of them, grows
    /// it (doubling) when that is not enough (`InvalidData` past its limit:
    /// the server sent a reply no request of the run has).
    fn make_room(&mut self, need: usize) -> io::Result<()> {
        if self.rstart == self.rend {
            if let Some(l) = self.link.as_deref_mut() {
                l.shift_in(self.rstart);
            }
            self.rstart = 0;
            self.rend = 0;
        }
        if self.rbuf.len() - self.rend < need && self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            if let Some(l) = self.link.as_deref_mut() {
                l.shift_in(self.rstart);
            }
            self.rend -= self.rstart;
            self.rstart = 0;
        }
        let end = self.rend + need;
        if end > self.rbuf.len() {
            if end > self.rmax {
                return Err(too_large());
            }
            let n = (self.rbuf.len() * 2).clamp(end, self.rmax);
            self.rbuf.resize(n, 0);
        }
        Ok(())
    }
}

/// The error of a reply past the read buffer's limit.
fn too_large() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a reply larger than any this run's requests can be answered with",
    )
}

/// The wait before the next attempt after `streak` failed ones in a row: 0.2 s,
/// 0.4 s, … up to 6.4 s (a server refusing connections is not hammered).
pub(crate) fn backoff(streak: u32) -> Duration {
    Duration::from_millis(100 << streak.min(6))
}

/// Writes `buf[*pos..]` to `s`; `Ok(true)` when the socket is full.
fn write_plain(s: &mut EngineSock, buf: &[u8], pos: &mut usize) -> io::Result<bool> {
    while *pos < buf.len() {
        match s.write(&buf[*pos..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => *pos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// Encrypts `buf[*pos..]` and writes the records to `s`; `Ok(true)` when the
/// socket is full (what is encrypted waits in rustls).
fn write_tls(
    s: &mut EngineSock,
    tls: &mut ClientConnection,
    buf: &[u8],
    pos: &mut usize,
) -> io::Result<bool> {
    loop {
        while *pos < buf.len() {
            match tls.writer().write(&buf[*pos..])? {
                0 => break,
                n => *pos += n,
            }
        }
        if !tls.wants_write() {
            return Ok(*pos < buf.len());
        }
        match tls.write_tls(s) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads plaintext into `buf`: what rustls has decrypted, else records from
/// `s`; `WouldBlock` when the socket has nothing more, `Ok(0)` at the end.
fn read_tls(s: &mut EngineSock, tls: &mut ClientConnection, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match tls.reader().read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            r => return r,
        }
        if tls.read_tls(s)? == 0 {
            return Ok(0);
        }
        let state = tls.process_new_packets().map_err(io::Error::other)?;
        if state.tls_bytes_to_write() > 0 {
            // An alert or key update to answer: send it now (small).
            while tls.wants_write() {
                match tls.write_tls(s) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    r => {
                        r?;
                    }
                }
            }
        }
    }
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
        let mut p = Pipe::new(Token(0), (16, 16, 64), now);
        let mut r = Reactor::new(crate::engine::reactor::IoKind::Epoll, false, 1).unwrap();
        p.close(&mut r, now);
        assert_eq!((p.streak, p.retry_at), (1, now + backoff(1)));
        p.served = true;
        p.close(&mut r, now);
        assert_eq!((p.streak, p.retry_at), (0, now));
    }
}
