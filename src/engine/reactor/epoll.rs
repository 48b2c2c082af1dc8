//! The epoll side of the reactor (mio): readiness events, a `timerfd` for
//! wake-ups finer than `epoll_wait`'s milliseconds, and the sockets'
//! registration, and each socket's state over it ([`EpollSock`]): reads and
//! writes are the socket's own syscalls, through rustls where the target
//! uses TLS.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Registry, Token};
use rustls::ClientConnection;

use super::timer::PreciseTimer;
use super::{Inbox, Ready, What};
use crate::transport::EngineSock;

/// The token of the pacing timer; sockets use small tokens.
const TIMER: Token = Token(usize::MAX - 1);

/// A poll, its events and, for paced loops, a precise timer.
pub(crate) struct Epoll {
    poll: Poll,
    events: Events,
    timer: Option<PreciseTimer>,
}

impl Epoll {
    /// A poll; `paced`: with a timer.
    pub(super) fn new(paced: bool) -> io::Result<Epoll> {
        let poll = Poll::new()?;
        let timer = match paced {
            true => Some(PreciseTimer::new(poll.registry(), TIMER)?),
            false => None,
        };
        Ok(Epoll {
            poll,
            events: Events::with_capacity(1024),
            timer,
        })
    }

    /// The registry sockets are registered with.
    fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    /// Registers `source` as `token`, for reads (and writes when `write`).
    fn watch(
        &self,
        source: &mut impl mio::event::Source,
        token: Token,
        write: bool,
        first: bool,
    ) -> io::Result<()> {
        let interest = match write {
            true => Interest::READABLE | Interest::WRITABLE,
            false => Interest::READABLE,
        };
        match first {
            true => self.registry().register(source, token, interest),
            false => self.registry().reregister(source, token, interest),
        }
    }

    /// Waits for events until `wake` (the timer, when paced, wakes on time;
    /// the poll's timeout is a backstop); the timer's own event is taken here.
    pub(super) fn wait(&mut self, wake: Instant, out: &mut Vec<Ready>) -> io::Result<()> {
        let mut timeout = wake.saturating_duration_since(Instant::now());
        if let Some(t) = self.timer.as_mut()
            && !timeout.is_zero()
        {
            t.arm(wake);
            timeout += Duration::from_millis(2);
        }
        if let Err(e) = self.poll.poll(&mut self.events, Some(timeout))
            && e.kind() != io::ErrorKind::Interrupted
        {
            return Err(e);
        }
        let mut fired = false;
        for ev in self.events.iter() {
            let token = ev.token();
            if token == TIMER {
                fired = true;
                continue;
            }
            let what = match ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                true => What::Readable,
                false => What::Writable,
            };
            out.push(Ready { token, what });
        }
        if fired && let Some(t) = self.timer.as_mut() {
            t.fired(Instant::now());
        }
        Ok(())
    }

    /// The timer's usual lateness (none without a timer).
    pub(super) fn wake_lead(&self) -> Duration {
        self.timer
            .as_ref()
            .map_or(Duration::ZERO, PreciseTimer::wake_lead)
    }
}

/// One socket over epoll: non-blocking and registered with the worker's
/// poll, TLS over it if the target uses TLS.
pub(crate) struct EpollSock {
    token: Token,
    stream: Option<EngineSock>,
    /// The TLS session over `stream`, if the target uses TLS.
    tls: Option<Box<ClientConnection>>,
    /// Watched for writes: the socket was full.
    want_write: bool,
}

impl EpollSock {
    /// A closed socket polled as `token`.
    pub(super) fn new(token: Token) -> EpollSock {
        EpollSock {
            token,
            stream: None,
            tls: None,
            want_write: false,
        }
    }

    #[inline]
    pub(super) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Takes the connected socket `s` (and its TLS session), registered for
    /// reads.
    pub(super) fn open(
        &mut self,
        e: &Epoll,
        mut s: EngineSock,
        tls: Option<Box<ClientConnection>>,
    ) -> io::Result<()> {
        e.watch(&mut s, self.token, false, true)?;
        self.stream = Some(s);
        self.tls = tls;
        self.want_write = false;
        Ok(())
    }

    /// Writes `buf[*pos..]`; `Ok(true)` when the socket is full (then it is
    /// watched for writes until a write empties `buf`).
    #[inline]
    pub(super) fn write(&mut self, e: &Epoll, buf: &[u8], pos: &mut usize) -> io::Result<bool> {
        let Some(s) = self.stream.as_mut() else {
            return Ok(false);
        };
        let blocked = match self.tls.as_deref_mut() {
            None => write_plain(s, buf, pos)?,
            Some(tls) => write_tls(s, tls, buf, pos)?,
        };
        if blocked != self.want_write {
            self.want_write = blocked;
            e.watch(s, self.token, blocked, false)?;
        }
        Ok(blocked)
    }

    /// Whether TLS records rustls has not yet sent wait.
    #[inline]
    pub(super) fn has_output(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.wants_write())
    }

    /// Reads once into `inbox` (see [`super::Sock::read`]).
    #[inline]
    pub(super) fn read(&mut self, inbox: &mut impl Inbox) -> io::Result<(usize, bool)> {
        let room = inbox.room(1)?;
        let Some(s) = self.stream.as_mut() else {
            return Ok((0, false));
        };
        let space = room.len();
        let n = match self.tls.as_deref_mut() {
            None => s.read(room)?,
            Some(tls) => read_tls(s, tls, room)?,
        };
        inbox.filled(n);
        // Over TLS, decrypted data may wait in rustls whatever the count.
        Ok((n, n == space || self.tls.is_some()))
    }

    /// Closes the socket (the kernel drops it from the poll).
    pub(super) fn close(&mut self) {
        self.stream = None;
        self.tls = None;
        self.want_write = false;
    }

    /// Takes the socket out of the poll.
    pub(super) fn deregister(&mut self, e: &Epoll) {
        if let Some(s) = self.stream.as_mut() {
            let _ = e.registry().deregister(s);
        }
    }
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
