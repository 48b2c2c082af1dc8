//! Connection poolers kvlab runs in front of a managed database (`--pooler`):
//! the narrow [`Pooler`] interface a pooler's product folder implements, what
//! it counts, and what it is started with. Its process is
//! `servers::pooler::ManagedPooler`. Names no pooler.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use crate::driver::endpoint::Endpoint;
use crate::driver::product::{Login, Product};
use crate::error::UsageError;
use crate::system::osuser::find_binary;

/// What a pooler counted: statements and transactions it passed on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PoolerCounters {
    /// Queries (statements) it passed to the servers.
    pub queries: u64,
    /// Transactions it passed to the servers.
    pub transactions: u64,
}

impl PoolerCounters {
    /// The counts from `before` to `self`.
    pub fn since(&self, before: &PoolerCounters) -> PoolerCounters {
        PoolerCounters {
            queries: self.queries.saturating_sub(before.queries),
            transactions: self.transactions.saturating_sub(before.transactions),
        }
    }
}

/// How a pooler is launched: the paths and port kvlab chose, and the server
/// behind it.
pub struct PoolerLaunch<'a> {
    /// The pooler's binary.
    pub binary: &'a Path,
    /// kvlab's temporary directory for it.
    pub dir: &'a Path,
    /// The loopback port to listen on.
    pub port: u16,
    /// The database server it forwards to (with kvlab's login there).
    pub backend: &'a Endpoint,
    /// The settings [`Pooler::configure`] made.
    pub settings: &'a BTreeMap<String, String>,
}

/// A connection pooler kvlab can start in front of a managed database.
pub trait Pooler: Sync + Send + 'static {
    /// The name on the command line (`--pooler NAME`) and in results.
    fn name(&self) -> &'static str;
    /// The binary kvlab starts.
    fn binary(&self) -> &'static str;
    /// The Debian package that installs it.
    fn package(&self) -> &'static str;
    /// Where the binary is installed, if it is.
    fn find(&self) -> Option<PathBuf> {
        find_binary(self.binary())
    }
    /// Whether it can stand in front of `product`.
    fn fronts(&self, product: &dyn Product) -> bool;
    /// Checks `--pooler-opt` settings (errors name `--pooler-opt`) and adds
    /// kvlab's defaults for `connections` client connections.
    fn configure(
        &self,
        opts: &BTreeMap<String, String>,
        connections: usize,
    ) -> Result<BTreeMap<String, String>, UsageError>;
    /// The most server connections it opens with `settings`, for sizing the
    /// database behind it.
    fn server_connections(&self, settings: &BTreeMap<String, String>) -> usize;
    /// The query mode requests must use behind it with `settings` when the
    /// user chose none (e.g. no named statements behind transaction pooling).
    fn query_mode(&self, settings: &BTreeMap<String, String>) -> Option<&'static str> {
        let _ = settings;
        None
    }
    /// Why requests in query mode `mode` cannot work behind it with
    /// `settings`, if they cannot.
    fn query_mode_problem(
        &self,
        settings: &BTreeMap<String, String>,
        mode: &str,
    ) -> Option<String> {
        let _ = (settings, mode);
        None
    }
    /// Writes its configuration into the launch directory and returns the
    /// command that runs it in the foreground, and the login clients use.
    fn command(&self, launch: &PoolerLaunch<'_>) -> Result<(Command, Login)>;
    /// Connects to it at `at` and returns its version (the readiness probe).
    fn probe(&self, at: &Endpoint, timeout: Duration) -> Result<String>;
    /// Its own counters now.
    fn counters(&self, at: &Endpoint) -> Result<PoolerCounters>;
}
