//! How to reach a target: its resolved address, credentials and product. Opens
//! ready-to-use connections and probes the server, turning set-up failures into
//! one-line errors that say what to check.

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result};

use super::Product;
use super::counters::ServerCounters;
use super::endpoint::Endpoint;
use crate::wire::Session;

/// What kvlab learned about a server when it first connected.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ServerInfo {
    /// Product as reported by the server (`redis`, `valkey`, `memcached`).
    pub product: String,
    /// Version string as reported by the server.
    pub version: String,
}

/// How to open a ready-to-use connection to a target: address and credentials.
#[derive(Clone)]
pub struct Connector {
    /// The product spoken.
    pub product: &'static dyn Product,
    /// Resolved address.
    pub addr: SocketAddr,
    /// Name used in messages, e.g. `redis://127.0.0.1:6379` (no password).
    pub display: String,
    /// User name, if any.
    pub user: Option<String>,
    /// Password, if any (never printed).
    pub password: Option<String>,
    /// Database name, if any.
    pub database: Option<String>,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("product", &self.product.name())
            .field("addr", &self.addr)
            .field("display", &self.display)
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// A connector for `endpoint` of `product`, resolving its host name once.
    pub fn new(product: impl Into<&'static dyn Product>, endpoint: &Endpoint) -> Result<Connector> {
        let product: &'static dyn Product = product.into();
        let display = endpoint.display_url(product);
        let addr = (endpoint.host.as_str(), endpoint.port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve host '{}' of {display}", endpoint.host))?
            .next()
            .with_context(|| format!("host '{}' of {display} has no address", endpoint.host))?;
        Ok(Connector {
            product,
            addr,
            display,
            user: endpoint.user.clone(),
            password: endpoint.password.as_ref().map(|p| p.expose().to_string()),
            database: endpoint.database.clone(),
        })
    }

    /// A TCP connection (`TCP_NODELAY`) with read and write timeouts, for set-up.
    pub fn tcp(&self, timeout: Duration) -> io::Result<TcpStream> {
        let s = TcpStream::connect_timeout(&self.addr, timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        Ok(s)
    }

    /// Opens a TCP connection (`TCP_NODELAY`) ready for the engine: authenticated
    /// and, on databases, with kvlab's statements prepared; all within `timeout`.
    pub fn connect(&self, timeout: Duration) -> io::Result<(TcpStream, Session)> {
        self.product.connect(self, timeout)
    }

    /// Connects once, checks the server speaks the expected protocol, and reads its
    /// version. Fails with a one-line message within about `timeout`.
    pub fn probe(&self, timeout: Duration) -> Result<ServerInfo> {
        self.product.probe(self, timeout)
    }

    /// The server's own request counters now.
    pub fn counters(&self) -> Result<ServerCounters> {
        self.product.counters(self)
    }

    /// A one-line error for a connection that could not be opened (or whose
    /// login was refused): what to check.
    pub fn connect_error(&self, e: io::Error) -> anyhow::Error {
        match e.kind() {
            io::ErrorKind::PermissionDenied => anyhow::anyhow!(
                "{}: {e}; check the user and password in --target",
                self.display
            ),
            _ => anyhow::anyhow!(
                "cannot connect to {}: {e}; is the server running and is the port right?",
                self.display
            ),
        }
    }

    /// A one-line error for a failed set-up session on a server whose protocol
    /// starts with a handshake (the server speaks first): what to check.
    pub fn setup_error(&self, e: io::Error) -> anyhow::Error {
        let what = self.product.title();
        match e.kind() {
            io::ErrorKind::PermissionDenied => anyhow::anyhow!(
                "{}: {e}; check the user and password in --target",
                self.display
            ),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => anyhow::anyhow!(
                "{} does not answer as a {what} server should: no reply in time; check the scheme and port of --target",
                self.display
            ),
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => anyhow::anyhow!(
                "{} does not answer as a {what} server should: {e}; check the scheme and port of --target",
                self.display
            ),
            io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable => anyhow::anyhow!(
                "cannot connect to {}: {e}; is the server running and is the port right?",
                self.display
            ),
            _ => anyhow::anyhow!("{}: {e}", self.display),
        }
    }

    /// A one-line error for a server that accepted the connection but did not
    /// answer the probe as the product should.
    pub fn probe_error(&self, e: anyhow::Error, waited: Duration) -> anyhow::Error {
        let e = if is_timeout(&e) {
            anyhow::anyhow!("no reply within {waited:.0?}")
        } else {
            e
        };
        anyhow::anyhow!(
            "{} does not answer as a {} server should: {e:#}; check the scheme and port of --target",
            self.display,
            self.product.title()
        )
    }
}

fn is_timeout(e: &anyhow::Error) -> bool {
    e.downcast_ref::<io::Error>().is_some_and(|e| {
        matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        )
    })
}
