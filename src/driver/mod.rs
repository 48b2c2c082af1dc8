//! Protocol drivers: one sans-IO codec per protocol behind one narrow interface,
//! plus the blocking set-up steps (connect, authenticate, identify the server).
//!
//! The engine's hot loop is generic over [`Codec`]; drivers never see a clock or a
//! histogram. Dispatch from [`Protocol`] to a concrete codec happens once per run.

pub mod memcache;
pub mod mysql;
pub mod postgres;
pub mod resp;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::ops::Range;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::plan::{Endpoint, TargetKind};
use crate::workload::OpKind;

/// The wire protocol a target speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Redis serialization protocol (Redis, Valkey, and compatibles).
    Resp,
    /// Memcached text protocol.
    Memcache,
    /// PostgreSQL wire protocol v3.
    Postgres,
    /// MySQL/MariaDB client/server protocol.
    Mysql,
}

impl Protocol {
    /// The protocol a target kind speaks.
    pub fn of(kind: TargetKind) -> Protocol {
        match kind {
            TargetKind::Redis | TargetKind::Valkey => Protocol::Resp,
            TargetKind::Memcached => Protocol::Memcache,
            TargetKind::Postgres => Protocol::Postgres,
            TargetKind::Mariadb => Protocol::Mysql,
        }
    }

    /// Whether more than one request may be in flight on a connection.
    pub fn pipelines(self) -> bool {
        self != Protocol::Mysql
    }
}

/// One decoded reply, borrowing nothing: a value is a byte range of the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A GET found a value at this range of the decoded buffer.
    Value(Range<usize>),
    /// A GET found no value.
    Nil,
    /// A SET was stored.
    Stored,
    /// The server answered with an error (e.g. `-OOM`, `SERVER_ERROR`).
    ServerError,
}

/// Result of trying to decode one reply from the front of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The buffer does not yet hold a whole reply: read more. Not an error.
    Incomplete,
    /// A whole reply of `len` bytes.
    Frame {
        /// Bytes the reply occupies at the front of the buffer.
        len: usize,
        /// What it says.
        reply: Reply,
    },
}

/// The bytes cannot be a reply of this protocol to the request sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// The key of one request: its numeric id (SQL targets) and its name (caches).
#[derive(Clone, Copy, Debug)]
pub struct Key<'a> {
    /// Key id, `0..keys`.
    pub id: u64,
    /// `prefix` + decimal id.
    pub name: &'a [u8],
}

/// A sans-IO request encoder and reply decoder. Cloned once per worker.
pub trait Codec: Clone + Send + Sync + 'static {
    /// Appends a GET of `key` to `out`.
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>);
    /// Appends a SET of `key` to `value` to `out`.
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>);
    /// Appends a SET that expires after `ttl_s` seconds (0: never). Targets
    /// without expiry (databases) ignore the TTL.
    #[inline]
    fn encode_set_ttl(&self, key: Key<'_>, value: &[u8], ttl_s: u32, out: &mut Vec<u8>) {
        let _ = ttl_s;
        self.encode_set(key, value, out);
    }
    /// Decodes the reply to a request of kind `op` from the front of `buf`.
    fn decode(&self, op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed>;
    /// This codec for a connection with `session` (default: unchanged).
    fn bind(&self, session: &Session) -> Self {
        let _ = session;
        self.clone()
    }
}

/// A cache's codec: also deletes keys (cache-aside invalidation).
pub trait CacheCodec: Codec {
    /// Appends a DELETE of `key` to `out`.
    fn encode_delete(&self, key: Key<'_>, out: &mut Vec<u8>);
    /// Decodes the reply to a DELETE: [`Reply::Stored`] whether or not the key
    /// existed, [`Reply::ServerError`] for an error.
    fn decode_delete(&self, buf: &[u8]) -> Result<Decoded, Malformed>;
}

/// What a connection's set-up produced that its requests need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Session {
    /// Nothing.
    Plain,
    /// MySQL statement ids of kvlab's GET and SET on this connection.
    MysqlStatements {
        /// Id of the prepared GET.
        get: u32,
        /// Id of the prepared SET.
        set: u32,
    },
}

/// What kvlab learned about a server when it first connected.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ServerInfo {
    /// Product as reported by the server (`redis`, `valkey`, `memcached`).
    pub product: String,
    /// Version string as reported by the server.
    pub version: String,
}

/// How to open a ready-to-use connection to a target: address and credentials.
#[derive(Clone, Debug)]
pub struct Connector {
    /// The protocol spoken.
    pub protocol: Protocol,
    /// Resolved address.
    pub addr: SocketAddr,
    /// Name used in messages, e.g. `redis://127.0.0.1:6379` (no password).
    pub display: String,
    user: Option<String>,
    password: Option<String>,
    database: Option<String>,
}

impl Connector {
    /// A connector for `endpoint`, resolving its host name once.
    pub fn new(kind: TargetKind, endpoint: &Endpoint) -> Result<Connector> {
        let display = endpoint.display_url(kind);
        let addr = (endpoint.host.as_str(), endpoint.port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve host '{}' of {display}", endpoint.host))?
            .next()
            .with_context(|| format!("host '{}' of {display} has no address", endpoint.host))?;
        Ok(Connector {
            protocol: Protocol::of(kind),
            addr,
            display,
            user: endpoint.user.clone(),
            password: endpoint.password.as_ref().map(|p| p.expose().to_string()),
            database: endpoint.database.clone(),
        })
    }

    /// Opens a set-up session on a PostgreSQL target (not prepared for the engine).
    pub fn open_pg(&self, timeout: Duration) -> io::Result<postgres::PgConn> {
        let s = TcpStream::connect_timeout(&self.addr, timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        let user = self.user.as_deref().unwrap_or("postgres");
        let db = self.database.as_deref().unwrap_or("postgres");
        postgres::PgConn::start(s, user, self.password.as_deref(), db)
    }

    /// Opens a set-up session on a MySQL/MariaDB target.
    pub fn open_my(&self, timeout: Duration) -> io::Result<mysql::MyConn> {
        let s = TcpStream::connect_timeout(&self.addr, timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        let user = self.user.as_deref().unwrap_or("root");
        let db = self.database.as_deref().unwrap_or("");
        mysql::MyConn::start(s, user, self.password.as_deref(), db)
    }

    /// Opens a TCP connection (`TCP_NODELAY`) ready for the engine: authenticated
    /// and, on databases, with kvlab's statements prepared; all within `timeout`.
    pub fn connect(&self, timeout: Duration) -> io::Result<(TcpStream, Session)> {
        match self.protocol {
            Protocol::Postgres => {
                let mut c = self.open_pg(timeout)?;
                c.prepare_kv()?;
                c.set_timeout(None)?;
                return Ok((c.into_stream(), Session::Plain));
            }
            Protocol::Mysql => {
                let mut c = self.open_my(timeout)?;
                let (get, set) = c.prepare_ids()?;
                c.set_timeout(None)?;
                return Ok((c.into_stream(), Session::MysqlStatements { get, set }));
            }
            _ => {}
        }
        let s = TcpStream::connect_timeout(&self.addr, timeout)?;
        s.set_nodelay(true)?;
        if let (Protocol::Resp, Some(pass)) = (self.protocol, &self.password) {
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(u) = &self.user {
                args.push(u.as_bytes());
            }
            args.push(pass.as_bytes());
            let mut s2 = &s;
            let reply = resp::command(&mut s2, &args)?;
            if !reply.starts_with(b"+OK") {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "authentication failed: {}",
                        String::from_utf8_lossy(reply.trim_ascii())
                    ),
                ));
            }
            s.set_read_timeout(None)?;
            s.set_write_timeout(None)?;
        }
        Ok((s, Session::Plain))
    }

    /// Connects once, checks the server speaks the expected protocol, and reads its
    /// version. Fails with a one-line message within about `timeout`.
    pub fn probe(&self, timeout: Duration) -> Result<ServerInfo> {
        if self.protocol == Protocol::Postgres {
            let c = self.open_pg(timeout).map_err(|e| self.probe_error(e))?;
            return Ok(ServerInfo {
                product: "postgres".into(),
                version: c.server_version,
            });
        }
        if self.protocol == Protocol::Mysql {
            let c = self.open_my(timeout).map_err(|e| self.probe_error(e))?;
            let product = if c.server_version.to_ascii_lowercase().contains("mariadb") {
                "mariadb"
            } else {
                "mysql"
            };
            return Ok(ServerInfo {
                product: product.into(),
                version: c.server_version,
            });
        }
        let (s, _) = self.connect(timeout).map_err(|e| match e.kind() {
            io::ErrorKind::PermissionDenied => anyhow::anyhow!(
                "{}: {e}; check the user and password in --target",
                self.display
            ),
            _ => anyhow::anyhow!(
                "cannot connect to {}: {e}; is the server running and is the port right?",
                self.display
            ),
        })?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        let started = Instant::now();
        let mut s = &s;
        let info = match self.protocol {
            Protocol::Resp => resp::probe(&mut s),
            Protocol::Memcache => memcache::probe(&mut s),
            Protocol::Postgres | Protocol::Mysql => unreachable!("databases probe above"),
        };
        info.map_err(|e| {
            let e = if is_timeout(&e) {
                anyhow::anyhow!("no reply within {:.0?}", started.elapsed())
            } else {
                e
            };
            anyhow::anyhow!(
                "{} does not answer as {} should: {e:#}; check the scheme and port of --target",
                self.display,
                match self.protocol {
                    Protocol::Resp => "a Redis/Valkey server",
                    _ => "a memcached server",
                }
            )
        })
    }
}

impl Connector {
    /// A one-line error for a failed set-up connection to a database.
    fn probe_error(&self, e: io::Error) -> anyhow::Error {
        let what = match self.protocol {
            Protocol::Mysql => "a MySQL/MariaDB server",
            _ => "a PostgreSQL server",
        };
        match e.kind() {
            io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable => {
                anyhow::anyhow!(
                    "cannot connect to {}: {e}; is the server running and is the port right?",
                    self.display
                )
            }
            io::ErrorKind::PermissionDenied => {
                anyhow::anyhow!(
                    "{}: {e}; check the user and password in --target",
                    self.display
                )
            }
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => anyhow::anyhow!(
                "{} does not answer as {what} should: no reply in time; check the scheme and port of --target",
                self.display
            ),
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => anyhow::anyhow!(
                "{} does not answer as {what} should: {e}; check the scheme and port of --target",
                self.display
            ),
            _ => anyhow::anyhow!("{}: {e}", self.display),
        }
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

/// Sends `req` and reads until `frame_len` reports a whole reply; returns its bytes.
/// Blocking; for set-up and counters only, never on the hot path.
pub fn roundtrip<S: Read + Write>(
    s: &mut S,
    req: &[u8],
    frame_len: impl Fn(&[u8]) -> Result<Option<usize>, Malformed>,
) -> io::Result<Vec<u8>> {
    s.write_all(req)?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 16384];
    loop {
        match frame_len(&buf) {
            Ok(Some(n)) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Ok(None) => {}
            Err(Malformed(why)) => {
                let shown = String::from_utf8_lossy(&buf[..buf.len().min(60)]).into_owned();
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{why}: got {:?}", shown.trim_end()),
                ));
            }
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            if buf.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection without a reply",
                ));
            }
            let shown = String::from_utf8_lossy(&buf[..buf.len().min(60)]).into_owned();
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the server closed the connection after {:?}",
                    shown.trim_end()
                ),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 64 << 20 {
            bail_io("reply larger than 64 MiB")?;
        }
    }
}

fn bail_io(msg: &'static str) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::InvalidData, msg))
}

/// Position just past the first `\r\n` at or after `from`, if any.
#[inline]
pub(crate) fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let rest = buf.get(from..)?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    Some(from + nl + 1)
}

/// The end (just past its CRLF) of the reply line that starts at 0 and whose
/// content starts at `from`; `None` while incomplete. Fails when the line is not
/// ended by CRLF, or when `max` bytes hold no line end (`too_long` says so).
#[inline]
pub(crate) fn reply_line(
    buf: &[u8],
    from: usize,
    max: usize,
    too_long: &'static str,
) -> Result<Option<usize>, Malformed> {
    let Some(eol) = line_end(buf, from) else {
        return if buf.len() > max {
            Err(Malformed(too_long))
        } else {
            Ok(None)
        };
    };
    if eol < from + 2 || buf[eol - 2] != b'\r' {
        return Err(Malformed("reply line not ended by CRLF"));
    }
    Ok(Some(eol))
}

/// Parses an unsigned decimal; `None` for empty, non-digit or overflow.
#[inline]
pub(crate) fn parse_usize(d: &[u8]) -> Option<usize> {
    if d.is_empty() || d.len() > 18 {
        return None;
    }
    let mut n = 0usize;
    for &b in d {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + usize::from(b - b'0');
    }
    Some(n)
}

/// Fails unless `s` is a usable key prefix for `protocol`.
pub fn check_prefix(protocol: Protocol, prefix: &str) -> Result<()> {
    if protocol == Protocol::Memcache
        && (prefix.len() > 200 || prefix.bytes().any(|b| b <= b' ' || b == 0x7f))
    {
        bail!(
            "--key-prefix: memcached keys cannot contain spaces or control characters and must stay under 250 bytes; choose a prefix such as 'kvlab:'"
        );
    }
    Ok(())
}
