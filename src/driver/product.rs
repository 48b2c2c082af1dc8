//! The narrow interfaces a product implements so that generic code can drive it
//! without naming it: [`Product`] (its [`Facts`], URL options, connections,
//! counters),
//! [`Server`] (how kvlab runs it; [`Replication`], its read replicas: both in
//! `server`), and one data role, [`Cache`] or [`Database`];
//! and the [`Connector`] that holds a product with the address and credentials
//! of one of its servers (the two refer to each other, so they share a file).
//! The registry in `products/` lists the implementations; codecs, the only part
//! on the hot path, are dispatched statically there, never through these traits.

mod server;

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::driver::choice::{Consistency, QueryMode};
use crate::driver::counters::{CacheMemory, ReportedUsage, ServerCounters};
use crate::driver::endpoint::Endpoint;
use crate::driver::facts::Facts;
use crate::driver::table_steps::{DataSpec, TableSteps};
use crate::driver::topology::Topology;
use crate::driver::wire::Session;
use crate::error::UsageError;
use crate::system::progress::RunOptions;
use crate::transport::{Stream, TlsClient, TlsStart, Transport, TransportInfo};
pub use server::{Following, IsAlive, Launch, Login, ReplicaLag, Replication, Server};

/// A product kvlab can drive: what it declares ([`Facts`]), how a connection
/// is opened and checked, and where its own request counters are.
pub trait Product: Sync + Send + 'static {
    /// What the product declares: names, URL rules, limits, capabilities.
    fn facts(&self) -> &'static Facts;
    /// Applies URL option `key=value` to `ep` (TLS settings, a socket);
    /// `Ok(false)`: not one of its options.
    fn url_option(&self, key: &str, value: &str, ep: &mut Endpoint) -> Result<bool, UsageError> {
        let _ = (key, value, ep);
        Ok(false)
    }
    /// Whether it is a cache or a database, with that role's operations.
    fn role(&self) -> Role<'_>;
    /// Round trips a new connection's set-up sends in `query_mode` beyond its
    /// login (e.g. preparing statements): a pooler counts them as queries.
    fn set_up_round_trips(&self, query_mode: Option<QueryMode>) -> u64 {
        let _ = query_mode;
        0
    }
    /// Fails unless `prefix` can start this product's keys.
    fn check_prefix(&self, prefix: &str) -> Result<()> {
        let _ = prefix;
        Ok(())
    }
    /// Opens a connection ready for the engine: authenticated and, where the
    /// protocol needs it, with kvlab's statements prepared.
    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(Stream, Session)>;
    /// Connects once, checks the protocol, and reads the server's version.
    /// Fails with a one-line message within about `timeout`.
    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo>;
    /// The server's own request counters, over a fresh connection.
    fn counters(&self, c: &Connector) -> Result<ServerCounters>;
    /// The CPU and memory the server reports of itself now, over a fresh
    /// connection (for servers kvlab did not start); see [`Facts::usage_report`].
    fn reported_usage(&self, c: &Connector) -> Result<ReportedUsage> {
        anyhow::bail!("{} does not report its CPU use", c.display)
    }
    /// The client connections it serves now, the one reading them left out
    /// (`None`: it does not say).
    fn clients(&self, c: &Connector) -> Result<Option<u64>> {
        let _ = c;
        Ok(None)
    }
    /// Sharded products: the node serving each slot, as the servers report it
    /// now (`None`: one server serves every key).
    fn topology(&self, c: &Connector) -> Result<Option<Topology>> {
        let _ = c;
        Ok(None)
    }
    /// How kvlab runs it as a managed server.
    fn server(&self) -> &dyn Server;
    /// How `kvlab observe` watches a running server of it, read-only;
    /// `None`: it cannot be watched.
    fn observe(&self) -> Option<&dyn Observe> {
        None
    }
}

/// A product kvlab can watch, read-only (`kvlab observe`).
pub trait Observe: Sync {
    /// Opens a watch of the server `c` names.
    fn watch(&self, c: &Connector) -> Result<Box<dyn crate::driver::observe::Watch>>;
    /// Every command a watch may send, as the README lists them.
    fn commands(&self) -> &'static [&'static str];
}

/// Writes, inside a product's `impl Product`, the two methods that only
/// declare: [`Product::facts`] as `$facts` (a static, or a field written
/// `self.facts`) and [`Product::role`] as `Role::$role(self)` (`Cache` or
/// `Database`).
macro_rules! declares {
    (self.$field:ident, $role:ident) => {
        fn facts(&self) -> &'static $crate::driver::Facts {
            self.$field
        }
        fn role(&self) -> $crate::driver::Role<'_> {
            $crate::driver::Role::$role(self)
        }
    };
    ($facts:expr, $role:ident) => {
        fn facts(&self) -> &'static $crate::driver::Facts {
            $facts
        }
        fn role(&self) -> $crate::driver::Role<'_> {
            $crate::driver::Role::$role(self)
        }
    };
}
pub(crate) use declares;

impl dyn Product {
    /// The name on the command line and in results ([`Facts::name`]).
    pub fn name(&self) -> &'static str {
        self.facts().name
    }
}

/// A product's data role.
#[derive(Clone, Copy)]
pub enum Role<'a> {
    /// Holds keys in memory with a limit; loaded through the engine with SETs.
    Cache(&'a dyn Cache),
    /// Holds kvlab's table; loaded and checked by the product itself.
    Database(&'a dyn Database),
}

/// A cache's own operations beside GET and SET.
pub trait Cache: Sync {
    /// Items held, memory limit and evictions, from the server's own report.
    fn memory(&self, c: &Connector) -> Result<CacheMemory>;
    /// Drops every key (only ever asked of a server kvlab started).
    fn flush(&self, c: &Connector) -> Result<()>;
    /// Deletes kvlab's own keys `keys`: the keys it found and deleted.
    fn delete_keys(&self, c: &Connector, keys: OwnKeys<'_>) -> Result<u64>;
    /// The settings that say how the cache at `c` evicts, by the server's
    /// own names (Redis's `maxmemory-policy`, `maxmemory-samples`, ...;
    /// memcached's `lru_segmented`), read without changing anything; `None`
    /// where the product has one way or they cannot be read. What they
    /// mean: [`crate::workload::trace::policy::Policy::of_settings`].
    fn eviction_settings(&self, c: &Connector) -> Option<BTreeMap<String, String>> {
        let _ = c;
        None
    }
    /// The eviction settings a server kvlab starts has where none is given,
    /// by the names [`Cache::eviction_settings`] reads (before
    /// [`Cache::evicting`]'s).
    fn eviction_defaults(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Settings a managed cache gets in cache-aside unless given, so that it
    /// evicts when full as a deployed cache does (e.g. Redis's
    /// `maxmemory-policy=allkeys-lru`).
    fn evicting(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// The bytes of SETs a load keeps in flight on one connection (`tls`:
    /// over TLS); 1 MiB unless the server cannot take that many.
    fn load_window(&self, tls: bool) -> usize {
        let _ = tls;
        1 << 20
    }
    /// The hint for a load that could not store (or keep) every key of
    /// `value_size` bytes; `managed`: kvlab started the server, so
    /// `--server-opt` sets its limits (else the server's own settings do).
    fn load_hint(&self, value_size: usize, managed: bool) -> String {
        let _ = value_size;
        match managed {
            true => "raise the server's memory limit (--server-opt memory-mb=…) or load fewer --keys".into(),
            false => "raise the server's memory limit (its own setting, e.g. maxmemory) or load fewer --keys".into(),
        }
    }
}

/// A database's handling of kvlab's table: only its own steps; the policy
/// every database shares (reuse, recreate or load; kvlab's marker) is
/// `table::prepare`.
pub trait Database: Sync {
    /// Opens a set-up session for kvlab's table on the job's database, ready
    /// to hold its data (checks what this database cannot hold first).
    fn table<'a>(&self, job: TableJob<'a>) -> Result<Box<dyn TableSteps + 'a>>;
    /// Sets every value of kvlab's table back to version 0.
    fn reset_versions(&self, c: &Connector) -> Result<()>;
    /// Bytes kvlab's table takes, and what they are (e.g. "table + indexes").
    fn table_size(&self, c: &Connector) -> Result<(u64, &'static str)>;
}

/// What `table::prepare` asks of a database ([`Database::table`]): where it
/// is, the data set kvlab's table must hold, and how to tell the user.
#[derive(Clone, Copy)]
pub struct TableJob<'a> {
    /// The database.
    pub connector: &'a Connector,
    /// The data set.
    pub data: &'a DataSpec,
    /// Progress and notes.
    pub opts: RunOptions,
}

/// kvlab's own keys in a cache ([`Cache::delete_keys`]): the key numbers
/// `numbers` under `prefix`, named as the workload names them.
pub struct OwnKeys<'a> {
    /// kvlab's key prefix.
    pub prefix: &'a [u8],
    /// The keys' numbers.
    pub numbers: &'a mut dyn Iterator<Item = u64>,
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
    /// Database name (or keyspace), if any.
    pub database: Option<String>,
    /// The consistency level requests ask for, where the product has levels.
    pub consistency: Option<Consistency>,
    /// The query mode requests use, where the product has modes (`None`: its
    /// default).
    pub query_mode: Option<QueryMode>,
    /// The socket and TLS its connections use.
    pub transport: Transport,
    /// Client tracking the engine's connections turn on (a near cache's
    /// invalidations; products with `client_tracking` only).
    pub tracking: Option<Tracking>,
}

/// Which changed keys a tracking connection hears of (RESP3 `CLIENT TRACKING`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tracking {
    /// The keys this connection read.
    Read,
    /// Every key under this prefix (`BCAST PREFIX`).
    Prefix(Vec<u8>),
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
        let display = endpoint.display_for(product);
        let addr = match endpoint.socket {
            Some(_) => SocketAddr::from(([127, 0, 0, 1], endpoint.port)),
            None => (endpoint.host.as_str(), endpoint.port)
                .to_socket_addrs()
                .with_context(|| format!("cannot resolve host '{}' of {display}", endpoint.host))?
                .next()
                .with_context(|| format!("host '{}' of {display} has no address", endpoint.host))?,
        };
        let tls = match &endpoint.tls {
            Some(_) if endpoint.socket.is_some() => anyhow::bail!(
                "--tls: servers speak plain on a unix socket; drop --tls (and TLS settings in the URL) or connect to host:port"
            ),
            Some(opts) => {
                if let TlsStart::Unsupported(why) = product.facts().tls_start {
                    anyhow::bail!("--tls: {why}; use a plain connection");
                }
                Some(TlsClient::new(opts, &endpoint.host)?)
            }
            None => None,
        };
        Ok(Connector {
            product,
            addr,
            display,
            user: endpoint.user.clone(),
            password: endpoint.password.as_ref().map(|p| p.expose().to_string()),
            database: endpoint.database.clone(),
            consistency: None,
            query_mode: None,
            tracking: None,
            transport: Transport {
                unix: endpoint.socket.clone(),
                tls,
            },
        })
    }

    /// The same login at another node of the same target (sharded targets).
    pub fn at(&self, addr: SocketAddr) -> Connector {
        let mut c = self.clone();
        c.display = format!("{} node {addr}", self.display);
        c.addr = addr;
        c
    }

    /// The CPU and memory the server reports of itself now.
    pub fn reported_usage(&self) -> Result<ReportedUsage> {
        self.product.reported_usage(self)
    }

    /// The server's slot map, for sharded products (`None` otherwise).
    pub fn topology(&self) -> Result<Option<Topology>> {
        self.product.topology(self)
    }

    /// This connector, asking for consistency level `level` where the product
    /// has levels.
    pub fn with_consistency(mut self, level: Option<Consistency>) -> Connector {
        self.consistency = level;
        self
    }

    /// This connector, sending requests in query mode `mode` where the
    /// product has modes.
    pub fn with_query_mode(mut self, mode: Option<QueryMode>) -> Connector {
        self.query_mode = mode;
        self
    }

    /// This connector, its engine connections hearing of changed keys.
    pub fn with_tracking(mut self, tracking: Option<Tracking>) -> Connector {
        self.tracking = tracking;
        self
    }

    /// A connection with read and write timeouts, for set-up: TCP
    /// (`TCP_NODELAY`) or the unix socket, and TLS already negotiated when the
    /// product's TLS starts with the first byte.
    pub fn open(&self, timeout: Duration) -> io::Result<Stream> {
        let mut s = self.transport.dial(&self.addr, timeout)?;
        if self.product.facts().tls_start == TlsStart::Immediate {
            self.start_tls(&mut s)?;
        }
        Ok(s)
    }

    /// The plain connection before any TLS, for products that negotiate it.
    pub fn dial(&self, timeout: Duration) -> io::Result<Stream> {
        self.transport.dial(&self.addr, timeout)
    }

    /// Turns `s` to TLS when this target uses TLS (else leaves it plain).
    pub fn start_tls(&self, s: &mut Stream) -> io::Result<()> {
        match &self.transport.tls {
            Some(t) => s.start_tls(t),
            None => Ok(()),
        }
    }

    /// Whether connections use TLS.
    pub fn tls(&self) -> bool {
        self.transport.tls.is_some()
    }

    /// Opens one connection and reports how it reached the server (socket,
    /// TLS version and cipher), for results.
    pub fn transport_info(&self, timeout: Duration) -> io::Result<TransportInfo> {
        let tls = match &self.transport.tls {
            Some(t) => Some((self.connect(timeout)?.0.tls_info(), t.verify)),
            None => None,
        };
        Ok(TransportInfo {
            socket: self.transport.kind().into(),
            verify: tls.as_ref().map(|t| t.1),
            tls: tls.and_then(|t| t.0),
        })
    }

    /// Opens a connection ready for the engine: authenticated and, on
    /// databases, with kvlab's statements prepared; all within `timeout`.
    pub fn connect(&self, timeout: Duration) -> io::Result<(Stream, Session)> {
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

    /// Probes a server whose protocol starts with a client request: connects
    /// (authenticated), then lets `ask` identify it on the connection within
    /// `timeout`; failures become one-line errors.
    pub fn probe_with(
        &self,
        timeout: Duration,
        ask: impl FnOnce(&mut Stream) -> Result<ServerInfo>,
    ) -> Result<ServerInfo> {
        let (mut s, _) = self.connect(timeout).map_err(|e| self.connect_error(e))?;
        s.set_timeout(Some(timeout))?;
        let started = Instant::now();
        ask(&mut s).map_err(|e| self.probe_error(e, started.elapsed()))
    }
}
