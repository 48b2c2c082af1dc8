//! How kvlab's connections reach a server: TCP or a unix socket, plain or
//! TLS (rustls). Products and the engine open connections through here and
//! never name a socket type.
//!
//! # Layout
//! - [`stream`]: the blocking [`Stream`] for set-up and the non-blocking
//!   [`EngineSock`] the engine polls.
//! - [`tls`]: the user's TLS options, the rustls configuration built from
//!   them, and handshake failures in words.
//! - [`certs`]: a throwaway CA and server certificate for managed servers.

pub mod certs;
pub mod stream;
pub mod tls;

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use stream::{EngineSock, MAX_SETUP_REPLY, Sock, Stream, setup_reply_too_large};
pub use tls::{TlsClient, TlsOptions, Verify};

/// When a product's connection turns to TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsStart {
    /// From the first byte (Redis, memcached, CQL).
    Immediate,
    /// After the product's own request (PostgreSQL `SSLRequest`, MySQL
    /// `CLIENT_SSL`): the product calls [`Stream::start_tls`] itself.
    Negotiated,
    /// Not at all, with the reason.
    Unsupported(&'static str),
}

/// The way to one server: its socket and, if any, TLS.
#[derive(Clone, Debug, Default)]
pub struct Transport {
    /// A unix socket path instead of TCP.
    pub unix: Option<PathBuf>,
    /// TLS on top, if any.
    pub tls: Option<TlsClient>,
}

impl Transport {
    /// A plain (not yet TLS) connection to `addr` (or the unix socket), with
    /// `timeout` on connect, reads and writes.
    pub fn dial(&self, addr: &SocketAddr, timeout: Duration) -> io::Result<Stream> {
        let s = match &self.unix {
            Some(path) => Stream::new(Sock::Unix(UnixStream::connect(path)?)),
            None => {
                let s = TcpStream::connect_timeout(addr, timeout)?;
                s.set_nodelay(true)?;
                Stream::new(Sock::Tcp(s))
            }
        };
        s.set_timeout(Some(timeout))?;
        Ok(s)
    }

    /// What the connection is, for results: `tcp` or `unix`.
    pub fn kind(&self) -> &'static str {
        match self.unix {
            Some(_) => "unix",
            None => "tcp",
        }
    }
}

/// What a TLS connection negotiated, as results record it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsInfo {
    /// Protocol version, e.g. `TLS 1.3`.
    pub version: String,
    /// Cipher suite, e.g. `TLS13_AES_256_GCM_SHA384`.
    pub cipher: String,
}

/// How a run's connections reached the server, as results record it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportInfo {
    /// `tcp` or `unix`.
    pub socket: String,
    /// The TLS version and cipher negotiated (`None`: plain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsInfo>,
    /// How much of the server's certificate was checked (TLS only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verify>,
}

impl TransportInfo {
    /// One line for the summary, e.g. `TLS 1.3 TLS13_AES_256_GCM_SHA384
    /// over tcp (certificate verified)`; `None` for plain TCP.
    pub fn describe(&self) -> Option<String> {
        match (&self.tls, self.socket.as_str()) {
            (None, "tcp") => None,
            (None, s) => Some(format!("plain, over a {s} socket")),
            (Some(t), s) => Some(format!(
                "{} {} over {s} ({})",
                t.version,
                t.cipher,
                self.verify.unwrap_or_default().describe()
            )),
        }
    }
}
