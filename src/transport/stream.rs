//! The byte streams kvlab's connections run over: TCP or a unix socket, with
//! or without TLS. Blocking [`Stream`] for set-up (login, probe, counters);
//! [`Stream::into_engine`] hands the same connection, TLS state and all, to
//! the engine's non-blocking loop as an [`EngineSock`].

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rustls::ClientConnection;

use super::TlsInfo;
use super::tls::TlsClient;

/// A connected socket: TCP or unix.
pub enum Sock {
    /// TCP (`TCP_NODELAY` set).
    Tcp(TcpStream),
    /// A unix-domain stream socket.
    Unix(UnixStream),
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A blocking connection for set-up work, TLS or not.
pub struct Stream {
    sock: Sock,
    tls: Option<Box<ClientConnection>>,
}

impl Stream {
    /// A plain stream over `sock`.
    pub fn new(sock: Sock) -> Stream {
        Stream { sock, tls: None }
    }

    /// Sets how long one read and one write may block (`None`: forever).
    pub fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match &self.sock {
            Sock::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Sock::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
        }
    }

    /// Runs a TLS handshake as `client` over this stream (blocking, within
    /// the timeout set); afterwards every byte is encrypted.
    pub fn start_tls(&mut self, client: &TlsClient) -> io::Result<()> {
        let mut conn = ClientConnection::new(client.config.clone(), client.name.clone())
            .map_err(io::Error::other)?;
        while conn.is_handshaking() {
            conn.complete_io(&mut self.sock)?;
        }
        self.tls = Some(Box::new(conn));
        Ok(())
    }

    /// The negotiated TLS version and cipher suite (`None`: plain).
    pub fn tls_info(&self) -> Option<TlsInfo> {
        let c = self.tls.as_ref()?;
        Some(TlsInfo {
            version: c
                .protocol_version()
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .replace('v', " ")
                .replace('_', "."),
            cipher: c
                .negotiated_cipher_suite()
                .and_then(|s| s.suite().as_str())
                .unwrap_or("?")
                .to_string(),
        })
    }

    /// The same connection, non-blocking, for the engine's poll loop.
    pub fn into_engine(self) -> io::Result<(EngineSock, Option<Box<ClientConnection>>)> {
        let sock = match self.sock {
            Sock::Tcp(s) => {
                s.set_nonblocking(true)?;
                EngineSock::Tcp(mio::net::TcpStream::from_std(s))
            }
            Sock::Unix(s) => {
                s.set_nonblocking(true)?;
                EngineSock::Unix(mio::net::UnixStream::from_std(s))
            }
        };
        Ok((sock, self.tls))
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.tls {
            Some(c) => rustls::Stream::new(c.as_mut(), &mut self.sock).read(buf),
            None => self.sock.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.tls {
            Some(c) => rustls::Stream::new(c.as_mut(), &mut self.sock).write(buf),
            None => self.sock.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.tls {
            Some(c) => rustls::Stream::new(c.as_mut(), &mut self.sock).flush(),
            None => Ok(()),
        }
    }
}

/// A non-blocking socket registered with the engine's poll.
pub enum EngineSock {
    /// TCP.
    Tcp(mio::net::TcpStream),
    /// A unix-domain stream socket.
    Unix(mio::net::UnixStream),
}

impl Read for EngineSock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            EngineSock::Tcp(s) => s.read(buf),
            EngineSock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for EngineSock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            EngineSock::Tcp(s) => s.write(buf),
            EngineSock::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl mio::event::Source for EngineSock {
    fn register(&mut self, r: &mio::Registry, t: mio::Token, i: mio::Interest) -> io::Result<()> {
        match self {
            EngineSock::Tcp(s) => s.register(r, t, i),
            EngineSock::Unix(s) => s.register(r, t, i),
        }
    }
    fn reregister(&mut self, r: &mio::Registry, t: mio::Token, i: mio::Interest) -> io::Result<()> {
        match self {
            EngineSock::Tcp(s) => s.reregister(r, t, i),
            EngineSock::Unix(s) => s.reregister(r, t, i),
        }
    }
    fn deregister(&mut self, r: &mio::Registry) -> io::Result<()> {
        match self {
            EngineSock::Tcp(s) => s.deregister(r),
            EngineSock::Unix(s) => s.deregister(r),
        }
    }
}
