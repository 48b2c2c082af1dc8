//! Connection poolers kvlab runs in front of a managed database (`--pooler`):
//! the narrow [`Pooler`] interface a pooler's product folder implements, and
//! [`ManagedPooler`], its process: temporary directory, free loopback port,
//! the database's system user, readiness wait, CPU from /proc, and `Drop`
//! stopping exactly the pid it started. Names no pooler.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::endpoint::{Endpoint, Secret};
use super::osuser::{self, OsUser, find_binary};
use super::process::{free_port, log_tail, spawn_owned, stop_child};
use super::procfs::{ProcUsage, proc_usage};
use super::product::{Login, Product};
use crate::error::UsageError;

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

/// A pooler process kvlab started and will stop.
pub struct ManagedPooler {
    pooler: &'static dyn Pooler,
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    login: Login,
    /// Its settings, as recorded in results.
    pub settings: BTreeMap<String, String>,
    /// Its version, as it reports it.
    pub version: String,
}

impl ManagedPooler {
    /// Starts `pooler` with `settings` (from [`Pooler::configure`]) in front of
    /// `backend`, as `run_as` when given; returns once it answers.
    pub fn start(
        pooler: &'static dyn Pooler,
        settings: &BTreeMap<String, String>,
        backend: &Endpoint,
        run_as: Option<&OsUser>,
    ) -> Result<ManagedPooler> {
        let bin = pooler.find().with_context(|| {
            format!(
                "'{}' is not installed; run `make deps` (or apt-get install {})",
                pooler.binary(),
                pooler.package()
            )
        })?;
        let mut last = None;
        // A port found free can be taken before the pooler binds it: retry.
        for _ in 0..3 {
            match Self::try_start(pooler, &bin, settings, backend, run_as) {
                Ok(p) => return Ok(p),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("{} did not start", pooler.name())))
    }

    fn try_start(
        pooler: &'static dyn Pooler,
        bin: &Path,
        settings: &BTreeMap<String, String>,
        backend: &Endpoint,
        run_as: Option<&OsUser>,
    ) -> Result<ManagedPooler> {
        let dir = tempfile::Builder::new()
            .prefix("kvlab-pooler-")
            .tempdir()
            .context("cannot create a temporary directory")?;
        let port = free_port()?;
        let (mut cmd, login) = pooler.command(&PoolerLaunch {
            binary: bin,
            dir: dir.path(),
            port,
            backend,
            settings,
        })?;
        if let Some(u) = run_as {
            osuser::give_dir(dir.path(), u)?;
            for e in std::fs::read_dir(dir.path())?.flatten() {
                osuser::give_dir(&e.path(), u)?;
            }
        }
        osuser::as_user(&mut cmd, run_as);
        let log_path = dir.path().join("pooler.log");
        let child = spawn_owned(&mut cmd, dir.path(), &log_path, bin)?;
        let mut p = ManagedPooler {
            pooler,
            child,
            port,
            dir,
            login,
            settings: settings.clone(),
            version: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = p.child.try_wait()? {
                bail!(
                    "managed {} exited at start ({status}): {}; check the --pooler-opt values",
                    pooler.name(),
                    log_tail(&log_path)
                );
            }
            match pooler.probe(&p.endpoint(), Duration::from_millis(500)) {
                Ok(v) => {
                    p.version = v;
                    return Ok(p);
                }
                Err(e) if Instant::now() >= deadline => {
                    return Err(e.context(format!(
                        "managed {} did not become ready in 10 s",
                        pooler.name()
                    )));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Where clients reach it (the database's login, through the pooler).
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            socket: None,
            tls: None,
            host: "127.0.0.1".into(),
            port: self.port,
            user: self.login.user.clone(),
            password: self.login.password.clone().map(Secret),
            database: self.login.database.clone(),
        }
    }

    /// The pooler it runs.
    pub fn pooler(&self) -> &'static dyn Pooler {
        self.pooler
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// CPU and peak memory used so far.
    pub fn usage(&self) -> Option<ProcUsage> {
        proc_usage(self.pid())
    }

    /// Its own counters now.
    pub fn counters(&self) -> Result<PoolerCounters> {
        self.pooler.counters(&self.endpoint())
    }
}

impl Drop for ManagedPooler {
    fn drop(&mut self) {
        stop_child(&mut self.child);
    }
}
