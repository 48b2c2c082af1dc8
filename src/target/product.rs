//! The narrow interfaces a product implements so that generic code can drive it
//! without naming it: [`Product`] (identity, URLs, connections, counters),
//! [`Server`] (how kvlab runs it), and one data role, [`Cache`] or [`Database`].
//! The registry in `products/` lists the implementations; codecs, the only part
//! on the hot path, are dispatched statically there, never through these traits.

use std::collections::BTreeMap;
use std::io;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::connector::{Connector, ServerInfo};
use super::counters::ServerCounters;
use super::endpoint::SchemaOptions;
use super::osuser::OsUser;
use super::procfs::{ProcUsage, proc_usage};
use super::settings::Sizing;
use super::table::{DataSpec, LoadResult};
use crate::error::UsageError;
use crate::progress::RunOptions;
use crate::wire::Session;

/// A product kvlab can drive: what it is called, how its URLs look, how a
/// connection is opened and checked, and where its own request counters are.
pub trait Product: Sync + Send + 'static {
    /// The name on the command line and in results (`--target NAME`).
    fn name(&self) -> &'static str;
    /// How the product is called in messages (e.g. "PostgreSQL").
    fn title(&self) -> &'static str;
    /// Other names accepted for a managed target.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// URL schemes naming a server of this product; the first is shown in URLs.
    fn schemes(&self) -> &'static [&'static str];
    /// Schemes refused with a reason: (scheme, problem, fix).
    fn refused_schemes(&self) -> &'static [(&'static str, &'static str, &'static str)] {
        &[]
    }
    /// The port a URL without one means.
    fn default_port(&self) -> u16;
    /// `Some(why)` when URLs may not carry a user or password.
    fn refuses_login(&self) -> Option<&'static str> {
        None
    }
    /// A URL of a running server, for help texts.
    fn example_url(&self) -> &'static str;
    /// Whether it is a cache or a database, with that role's operations.
    fn role(&self) -> Role<'_>;
    /// Whether more than one request may be in flight on a connection.
    fn pipelines(&self) -> bool {
        true
    }
    /// Fails unless `prefix` can start this product's keys.
    fn check_prefix(&self, prefix: &str) -> Result<()> {
        let _ = prefix;
        Ok(())
    }
    /// Opens a connection ready for the engine: authenticated and, where the
    /// protocol needs it, with kvlab's statements prepared.
    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(TcpStream, Session)>;
    /// Connects once, checks the protocol, and reads the server's version.
    /// Fails with a one-line message within about `timeout`.
    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo>;
    /// The server's own request counters, over a fresh connection.
    fn counters(&self, c: &Connector) -> Result<ServerCounters>;
    /// How kvlab runs it as a managed server.
    fn server(&self) -> &dyn Server;
}

/// A product's data role.
#[derive(Clone, Copy)]
pub enum Role<'a> {
    /// Holds keys in memory with a limit; loaded through the engine with SETs.
    Cache(&'a dyn Cache),
    /// Holds kvlab's table; loaded and checked by the product itself.
    Database(&'a dyn Database),
}

/// What a cache tells about its memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct CacheMemory {
    /// Items held now.
    pub items: u64,
    /// The memory limit, bytes (0: none).
    pub limit: u64,
    /// Items evicted so far.
    pub evictions: u64,
}

/// A cache's own operations beside GET and SET.
pub trait Cache: Sync {
    /// Items held, memory limit and evictions, from the server's own report.
    fn memory(&self, c: &Connector) -> Result<CacheMemory>;
    /// The hint for a load that could not store every key of `value_size` bytes.
    fn load_hint(&self, value_size: usize) -> &'static str {
        let _ = value_size;
        "is the server's memory limit large enough (--server-opt memory-mb=…)?"
    }
}

/// A database's handling of kvlab's table.
pub trait Database: Sync {
    /// Which `SchemaOptions` fields apply (by field name, e.g. `unlogged`).
    fn schema_options(&self) -> &'static [&'static str] {
        &[]
    }
    /// Checks the table options against what this database supports.
    fn check_schema(&self, schema: &SchemaOptions) -> Result<(), UsageError> {
        let _ = schema;
        Ok(())
    }
    /// Makes sure kvlab's table holds the data (checked, reused, created or
    /// reloaded); returns the load's figures when it loaded.
    fn prepare(
        &self,
        c: &Connector,
        data: &DataSpec,
        opts: RunOptions,
        shutdown: &AtomicBool,
    ) -> Result<Option<LoadResult>>;
    /// Sets every value of kvlab's table back to version 0.
    fn reset_versions(&self, c: &Connector) -> Result<()>;
    /// Bytes of kvlab's table with its indexes.
    fn table_bytes(&self, c: &Connector) -> Result<u64>;
}

/// How a managed server is launched: the paths and port kvlab chose.
pub struct Launch<'a> {
    /// The server binary.
    pub binary: &'a Path,
    /// kvlab's temporary directory for this server.
    pub dir: &'a Path,
    /// The data directory (inside `dir`), for servers that keep data on disk.
    pub data: &'a Path,
    /// The loopback port to listen on.
    pub port: u16,
    /// The system user to run as, if not kvlab's own.
    pub run_as: Option<&'a OsUser>,
}

/// The login kvlab uses on a managed server.
#[derive(Clone, Debug, Default)]
pub struct Login {
    /// User name.
    pub user: Option<String>,
    /// Password.
    pub password: Option<String>,
    /// Database name.
    pub database: Option<String>,
}

/// A managed server's settings, as command-line arguments and as recorded.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Arguments after the binary.
    pub args: Vec<String>,
    /// Settings as recorded in results (secrets masked).
    pub settings: BTreeMap<String, String>,
    /// A password the settings set for clients (e.g. `requirepass`).
    pub password: Option<String>,
}

/// How kvlab runs a product: binary, settings (`--server-opt`), command line,
/// readiness and resource use.
pub trait Server: Sync {
    /// The binary kvlab starts.
    fn binary(&self) -> &'static str;
    /// The Debian package that installs it.
    fn package(&self) -> &'static str;
    /// Where the binary is installed, if it is.
    fn find(&self) -> Option<PathBuf> {
        super::managed::find_binary(self.binary())
    }
    /// The system user the server runs as when kvlab runs as root (`None`:
    /// kvlab's own user; such servers refuse `--server-opt os-user`).
    fn system_user(&self) -> Option<&'static str> {
        None
    }
    /// Checks `--server-opt` settings and turns them into arguments, with
    /// kvlab's defaults sized for `sizing`.
    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config>;
    /// The command that starts the server (data directory initialised, port,
    /// directories), and the login kvlab will use.
    fn command(&self, launch: &Launch<'_>) -> Result<(Command, Login)>;
    /// Work after the process started and before it is probed (e.g. creating
    /// kvlab's login); `alive` says whether the process still runs.
    fn bootstrap(
        &self,
        dir: &Path,
        deadline: Instant,
        alive: &mut dyn FnMut() -> bool,
    ) -> Result<()> {
        let _ = (dir, deadline, alive);
        Ok(())
    }
    /// The values the running server reports for `keys` (effective settings).
    fn effective_settings(&self, c: &Connector, keys: &[String]) -> Vec<(String, String)> {
        let _ = (c, keys);
        Vec::new()
    }
    /// CPU and memory of the server process `pid` (and its children, where the
    /// product runs one process per connection).
    fn usage(&self, pid: u32) -> Option<ProcUsage> {
        proc_usage(pid)
    }
}
