//! One engine connection with its buffers, shared by both hot loops: open
//! (blocking, bounded), flush what is buffered, read what the socket has.
//! Non-blocking, registered with the worker's poll; no allocation once warm
//! (over TLS, rustls 0.23 still allocates one buffer per record it encrypts
//! or decrypts: a pipelined batch is one record).

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::{Interest, Token};
use rustls::ClientConnection;

use crate::target::Connector;
use crate::transport::EngineSock;
use crate::wire::Codec;

/// One connection with its buffers and its codec (bound to its session).
pub(crate) struct Link<C> {
    pub(crate) codec: C,
    pub(crate) stream: Option<EngineSock>,
    /// The TLS session over `stream`, if the target uses TLS.
    tls: Option<Box<ClientConnection>>,
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
            tls: None,
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
        let (mut s, tls) = s.into_engine()?;
        poll.register(&mut s, self.token, Interest::READABLE)?;
        self.codec = self.codec.bind(&session);
        self.stream = Some(s);
        self.tls = tls;
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
        self.tls = None;
        self.reset();
        self.retry_at = now;
    }

    /// Whether bytes wait to be written: requests not yet handed over, or
    /// TLS records rustls has not yet sent.
    pub(crate) fn has_output(&self) -> bool {
        self.wpos < self.wbuf.len() || self.tls.as_ref().is_some_and(|t| t.wants_write())
    }

    /// Writes what is buffered; `Err` when the connection broke.
    pub(crate) fn flush(&mut self, registry: &mio::Registry) -> io::Result<()> {
        let Some(s) = self.stream.as_mut() else {
            return Ok(());
        };
        let blocked = match self.tls.as_deref_mut() {
            None => write_plain(s, &self.wbuf, &mut self.wpos)?,
            Some(tls) => write_tls(s, tls, &self.wbuf, &mut self.wpos)?,
        };
        if blocked {
            if !self.want_write {
                self.want_write = true;
                registry.reregister(s, self.token, Interest::READABLE | Interest::WRITABLE)?;
            }
            return Ok(());
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
            match self.read_some() {
                Ok((0, _)) => return Ok(false),
                Ok((_, true)) => {}
                Ok((_, false)) => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads once into the free end of the read buffer (making room first):
    /// `(0, _)` when the peer closed, else the bytes read and whether more
    /// may be waiting; `WouldBlock` when nothing was there.
    pub(crate) fn read_some(&mut self) -> io::Result<(usize, bool)> {
        self.make_room();
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

    /// Leaves free space at the end of the read buffer: moves unparsed bytes
    /// to the front, or doubles it when it is full of them.
    fn make_room(&mut self) {
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
