//! One engine connection with its buffers, shared by both hot loops: open
//! (blocking, bounded), flush what is buffered, read what the socket has.
//! Non-blocking, registered with the worker's poll; no allocation once warm.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Interest, Token};

use crate::target::Connector;
use crate::wire::Codec;

/// One connection with its buffers and its codec (bound to its session).
pub(crate) struct Link<C> {
    pub(crate) codec: C,
    pub(crate) stream: Option<TcpStream>,
    pub(crate) wbuf: Vec<u8>,
    pub(crate) wpos: usize,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) rstart: usize,
    pub(crate) rend: usize,
    pub(crate) want_write: bool,
    pub(crate) token: Token,
    pub(crate) retry_at: Instant,
    pub(crate) fails: u32,
}

impl<C: Codec> Link<C> {
    pub(crate) fn new(codec: C, token: Token, wbuf: usize, rbuf: usize, now: Instant) -> Link<C> {
        Link {
            codec,
            stream: None,
            wbuf: Vec::with_capacity(wbuf),
            wpos: 0,
            rbuf: vec![0; rbuf],
            rstart: 0,
            rend: 0,
            want_write: false,
            token,
            retry_at: now,
            fails: 0,
        }
    }

    /// Opens the connection (blocking, bounded by `timeout`) and registers it.
    pub(crate) fn open(
        &mut self,
        connector: &Connector,
        poll: &mio::Registry,
        timeout: Duration,
    ) -> io::Result<()> {
        let (s, session) = connector.connect(timeout)?;
        s.set_nonblocking(true)?;
        let mut s = TcpStream::from_std(s);
        poll.register(&mut s, self.token, Interest::READABLE)?;
        self.codec = self.codec.bind(&session);
        self.stream = Some(s);
        self.fails = 0;
        self.reset();
        Ok(())
    }

    pub(crate) fn reset(&mut self) {
        self.wbuf.clear();
        self.wpos = 0;
        self.rstart = 0;
        self.rend = 0;
        self.want_write = false;
    }

    pub(crate) fn close(&mut self, now: Instant) {
        self.stream = None;
        self.reset();
        self.retry_at = now;
    }

    /// Writes what is buffered; `Err` when the connection broke.
    pub(crate) fn flush(&mut self, registry: &mio::Registry) -> io::Result<()> {
        let Some(s) = self.stream.as_mut() else {
            return Ok(());
        };
        while self.wpos < self.wbuf.len() {
            match s.write(&self.wbuf[self.wpos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !self.want_write {
                        self.want_write = true;
                        registry.reregister(
                            s,
                            self.token,
                            Interest::READABLE | Interest::WRITABLE,
                        )?;
                    }
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        if self.want_write {
            self.want_write = false;
            registry.reregister(s, self.token, Interest::READABLE)?;
        }
        Ok(())
    }

    /// Reads what the socket has; `Ok(false)` when the peer closed.
    pub(crate) fn fill(&mut self) -> io::Result<bool> {
        loop {
            if self.rstart == self.rend {
                self.rstart = 0;
                self.rend = 0;
            }
            if self.rend == self.rbuf.len() {
                if self.rstart > 0 {
                    self.rbuf.copy_within(self.rstart..self.rend, 0);
                    self.rend -= self.rstart;
                    self.rstart = 0;
                } else {
                    let n = self.rbuf.len() * 2;
                    self.rbuf.resize(n, 0);
                }
            }
            let Some(s) = self.stream.as_mut() else {
                return Ok(false);
            };
            let space = self.rbuf.len() - self.rend;
            match s.read(&mut self.rbuf[self.rend..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.rend += n;
                    if n < space {
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
