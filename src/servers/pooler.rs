//! A pooler process kvlab started in front of a managed database: temporary
//! directory, free loopback port, the database's system user, readiness
//! wait, CPU from /proc, and `Drop` stopping exactly the pid it started.
//! Names no pooler.

use crate::driver::endpoint::{Endpoint, Secret};
use crate::driver::pooler::{Pooler, PoolerCounters, PoolerLaunch};
use crate::driver::product::Login;
use crate::system::osuser::{self, OsUser};
use crate::system::process::{free_port, log_tail, spawn_owned, stop_child};
use crate::system::procfs::{ProcUsage, proc_usage};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

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
