//! How kvlab runs a product as a managed server: the [`Server`] trait, the
//! [`Launch`] it is started with and the [`Login`] kvlab then uses, and
//! [`Replication`], a managed primary's read replicas.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Result;

use super::Connector;
use crate::driver::settings::{Config, Sizing};
use crate::system::osuser::{OsUser, find_binary};
use crate::system::procfs::{ProcUsage, proc_usage};
use crate::transport::certs::TlsFiles;

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
    /// A second free loopback port, for servers that listen on two (e.g. a
    /// cluster bus).
    pub aux_port: u16,
    /// The system user to run as, if not kvlab's own.
    pub run_as: Option<&'a OsUser>,
    /// The settings [`Server::configure`] made.
    pub config: &'a Config,
    /// Certificates to serve TLS with (`--server-opt tls=on`): TLS only,
    /// no plain port, where the server can.
    pub tls: Option<&'a TlsFiles>,
    /// The unix socket to listen on (`--server-opt socket=on`), from
    /// [`Server::socket_path`].
    pub socket: Option<&'a Path>,
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

/// How kvlab runs a product: where its binary is, settings (`--server-opt`),
/// command line, readiness and resource use (what it only declares, binary and
/// package included, is [`Facts::server`](crate::driver::Facts::server)).
pub trait Server: Sync {
    /// Where the binary ([`ServerFacts::binary`](crate::driver::facts::ServerFacts::binary))
    /// is installed, if it is.
    fn find(&self, binary: &str) -> Option<PathBuf> {
        find_binary(binary)
    }
    /// Checks `--server-opt` settings and turns them into arguments, with
    /// kvlab's defaults sized for `sizing`.
    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config>;
    /// The command that starts the server (data directory initialised, port,
    /// directories), and the login kvlab will use.
    fn command(&self, launch: &Launch<'_>) -> Result<(Command, Login)>;
    /// Work after the process started and before it is probed (e.g. creating
    /// kvlab's login); `alive` says whether the process still runs.
    fn bootstrap(&self, dir: &Path, deadline: Instant, alive: IsAlive<'_>) -> Result<()> {
        let _ = (dir, deadline, alive);
        Ok(())
    }
    /// The unix socket a managed server in `dir` on `port` listens on.
    fn socket_path(&self, dir: &Path, port: u16) -> PathBuf {
        let _ = port;
        dir.join("server.sock")
    }
    /// Whether a managed server can serve TLS (`--server-opt tls=on`);
    /// `Err(why)` where kvlab cannot set it up.
    fn serves_tls(&self) -> Result<(), &'static str> {
        Ok(())
    }
    /// The nodes a client opens a connection to each of, on a managed target
    /// with `opts` (a cluster's primaries).
    fn nodes(&self, opts: &BTreeMap<String, String>) -> usize {
        let _ = opts;
        1
    }
    /// How many server processes one managed target runs (e.g. the nodes of
    /// a cluster); each gets its own directory and port.
    fn processes(&self, config: &Config) -> usize {
        let _ = config;
        1
    }
    /// Work after every process answers, before the target is used: e.g.
    /// joins the `nodes` into one cluster and assigns its slots, by `deadline`.
    fn join(&self, nodes: &[Connector], config: &Config, deadline: Instant) -> Result<()> {
        let _ = (nodes, config, deadline);
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
    /// How it runs read replicas of a managed primary (`--server-opt
    /// replicas=N`); `None`: it has none.
    fn replication(&self) -> Option<&dyn Replication> {
        None
    }
}

/// One replica's state and lag as the servers report it now.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReplicaLag {
    /// The replica, `host:port`.
    pub server: String,
    /// Its state as the server names it (PostgreSQL's `pg_stat_replication.state`,
    /// e.g. `streaming`; MariaDB: `streaming` when both replication threads run,
    /// else `io=… sql=…`); `absent` when the primary does not list it.
    pub state: String,
    /// Whether it receives and applies the primary's changes now.
    pub streaming: bool,
    /// Seconds it is behind (PostgreSQL's `replay_lag`, 0 when idle and
    /// streaming; MariaDB's `Seconds_Behind_Master`); `None`: unknown.
    pub lag_s: Option<f64>,
    /// Bytes of the primary's log it has not replayed (PostgreSQL); `None`
    /// where the server does not say.
    pub bytes_behind: Option<u64>,
}

/// How a managed product runs read replicas of its primary. Every replica
/// gets its own directory, data directory and free loopback port; kvlab
/// stops each one by its pid.
pub trait Replication: Sync {
    /// Adds to `config` what a primary with `replicas` replicas needs (its
    /// arguments also start the replicas, where the replica's own come after).
    fn primary(&self, config: &mut Config, replicas: usize);
    /// Work on the running `primary` (in `dir`) before its first replica is
    /// made (e.g. a replication login).
    fn prepare_primary(&self, dir: &Path, primary: &Connector, deadline: Instant) -> Result<()> {
        let _ = (dir, primary, deadline);
        Ok(())
    }
    /// The whole command line of replica `index` in `launch` (its data made
    /// from or following `primary`), with `launch.config`'s arguments.
    fn replica_command(
        &self,
        launch: &Launch<'_>,
        primary: &Connector,
        index: usize,
    ) -> Result<Command>;
    /// Work after a replica's process started and before it is probed
    /// (e.g. pointing it at its primary and starting replication).
    fn follow(&self, replica: Following<'_>) -> Result<()> {
        let _ = replica;
        Ok(())
    }
    /// Each of `replicas`' state and lag, in their order, as `primary` or
    /// the replicas themselves report it now.
    fn lag(&self, primary: &Connector, replicas: &[Connector]) -> Result<Vec<ReplicaLag>>;
}

/// Asked while a managed server starts: whether its process still runs.
pub type IsAlive<'a> = &'a mut dyn FnMut() -> bool;

/// A replica started, to follow its primary ([`Replication::follow`]).
pub struct Following<'a> {
    /// The replica's directory.
    pub dir: &'a Path,
    /// The primary it follows.
    pub primary: &'a Connector,
    /// When it must follow by.
    pub deadline: Instant,
    /// Whether its process still runs.
    pub alive: IsAlive<'a>,
}
