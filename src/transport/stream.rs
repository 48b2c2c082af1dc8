//! The byte streams kvlab's connections run over: TCP or a unix socket, with
//! or without TLS. Blocking [`Stream`] for set-up (login, probe, counters);
//! [`Stream::into_engine`] hands the same connection, TLS state and all, to
//! the engine's non-blocking loop as an [`EngineSock`].

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

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

/// Set by the binary's Ctrl-C handler: a blocking read or write a signal
/// interrupts then ends (`Interrupted`) instead of being tried again.
pub static STOP_ASKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `op` again while a signal interrupted it (a socket with a timeout is
/// never restarted by the kernel, whatever the handler's flags) and no stop
/// was asked: a signal meant for something else (a child's, a stray one)
/// must not fail a connection. The handler's thread sets [`STOP_ASKED`] a
/// moment after the signal, hence the millisecond before looking.
fn unless_stopped<T>(mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match op() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                std::thread::sleep(std::time::Duration::from_millis(1));
                if STOP_ASKED.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(e);
                }
            }
            r => return r,
        }
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        unless_stopped(|| match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        })
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        unless_stopped(|| match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        })
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The most bytes a set-up reply may take (what kvlab reads after sending
/// a request and before sending the next): no request kvlab sends at set-up
/// is answered with more, so more is a server gone wrong, refused before it
/// costs memory.
pub const MAX_SETUP_REPLY: usize = 16 << 20;

/// The error of a set-up reply past [`MAX_SETUP_REPLY`], read or declared.
pub fn setup_reply_too_large() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "a reply over {} MiB: no request kvlab sends at set-up is answered with that much",
            MAX_SETUP_REPLY >> 20
        ),
    )
}

/// A blocking connection for set-up work, TLS or not. Every wait has an
/// overall deadline: what is read after a request must come within the
/// timeout of sending it (a trickle of bytes does not extend it), and within
/// [`MAX_SETUP_REPLY`] bytes.
pub struct Stream {
    sock: Sock,
    tls: Option<Box<ClientConnection>>,
    /// The timeout set (`None`: wait as long as it takes).
    limit: Cell<Option<Duration>>,
    /// When what is being read must have come.
    deadline: Cell<Option<Instant>>,
    /// Bytes read since the last request was sent.
    read_since_write: usize,
}

impl Stream {
    /// A plain stream over `sock`.
    pub fn new(sock: Sock) -> Stream {
        Stream {
            sock,
            tls: None,
            limit: Cell::new(None),
            deadline: Cell::new(None),
            read_since_write: 0,
        }
    }

    /// Sets how long a reply (and one write) may take, from now and from
    /// each request sent (`None`: forever).
    pub fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.limit.set(t);
        self.deadline.set(t.map(|t| Instant::now() + t));
        self.socket_timeouts(t)
    }

    fn socket_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
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

    /// Before a read: the time left to the deadline as the socket's read
    /// timeout; an error once it has passed.
    fn before_read(&self) -> io::Result<()> {
        let (Some(deadline), Some(limit)) = (self.deadline.get(), self.limit.get()) else {
            return Ok(());
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no whole reply within {:.1} s: the server answers too slowly or never ends its reply",
                    limit.as_secs_f64()
                ),
            ));
        }
        match &self.sock {
            Sock::Tcp(s) => s.set_read_timeout(Some(left)),
            Sock::Unix(s) => s.set_read_timeout(Some(left)),
        }
    }

    /// After a read of `n` bytes: an error past [`MAX_SETUP_REPLY`].
    fn after_read(&mut self, n: usize) -> io::Result<usize> {
        self.read_since_write += n;
        if self.read_since_write > MAX_SETUP_REPLY {
            return Err(setup_reply_too_large());
        }
        Ok(n)
    }

    /// After a write: what is read next is a new reply, due within the timeout.
    fn after_write(&mut self, n: usize) -> usize {
        if n > 0 {
            self.read_since_write = 0;
            self.deadline
                .set(self.limit.get().map(|t| Instant::now() + t));
        }
        n
    }

    /// Runs a TLS handshake as `client` over this stream (blocking, within
    /// the timeout set); afterwards every byte is encrypted.
    pub fn start_tls(&mut self, client: &TlsClient) -> io::Result<()> {
        let mut conn = ClientConnection::new(client.config.clone(), client.name.clone())
            .map_err(io::Error::other)?;
        while conn.is_handshaking() {
            self.before_read()?; // the handshake, too, within the deadline
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
        self.before_read()?;
        let n = match &mut self.tls {
            Some(c) => rustls::Stream::new(c.as_mut(), &mut self.sock).read(buf),
            None => self.sock.read(buf),
        }?;
        self.after_read(n)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = match &mut self.tls {
            Some(c) => rustls::Stream::new(c.as_mut(), &mut self.sock).write(buf),
            None => self.sock.write(buf),
        }?;
        Ok(self.after_write(n))
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

impl EngineSock {
    /// Its file descriptor (for the engine's io_uring operations).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            EngineSock::Tcp(s) => s.as_raw_fd(),
            EngineSock::Unix(s) => s.as_raw_fd(),
        }
    }

    /// Makes it blocking again: io_uring waits for the socket itself.
    pub fn set_blocking(&self) -> io::Result<()> {
        let fd = self.raw_fd();
        // SAFETY: fcntl on a descriptor this value owns, with integer arguments.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Shuts both directions down (what io_uring still waits on of it ends),
    /// then closes it.
    pub fn shut_down(self) {
        let _ = match &self {
            EngineSock::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            EngineSock::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
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
