//! Managed servers: kvlab starts a real server from the installed binary in a
//! temporary directory on a free loopback port, waits until it answers, measures
//! its CPU and memory from /proc, and stops exactly the process it started when
//! dropped (also on error and Ctrl-C). Never kills anything by name. What differs
//! per product (binary, settings, command line, bootstrap) comes from its
//! [`Server`](crate::driver::Server) implementation. A target of several processes (a
//! cluster's nodes) runs each in its own subdirectory on its own port; they are
//! joined by [`Server::join`](crate::driver::Server::join), measured together and
//! stopped together. Read replicas of a primary (`--server-opt replicas=N`)
//! run beside it, each in its own subdirectory on its own port
//! (`managed/replicas.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::pooler::ManagedPooler;
use crate::driver::endpoint::{Endpoint, Secret, is_secret_key};
use crate::driver::product::{Connector, Launch, Login, Product, ServerInfo};
use crate::driver::replication::{REPLICAS_KEY, replicas_of};
use crate::driver::settings::{Config, Sizing};
use crate::system::osuser::{self, OsUser};
pub use crate::system::process::free_port;
use crate::system::process::{log_tail, spawn_owned};

mod replicas;
mod restart;
use crate::system::procfs::ProcUsage;
use crate::transport::certs::TlsFiles;
use crate::transport::{TlsOptions, TlsStart};
use replicas::Replica;

/// A running server that kvlab started and will stop.
pub struct ManagedServer {
    product: &'static dyn Product,
    /// Its processes (one, or a cluster's nodes) and their ports; behind a
    /// lock so that an event can restart one while the run reads the rest.
    nodes: Mutex<Vec<(Child, u16)>>,
    /// How it was started, to start it again (`restart`).
    binary: PathBuf,
    config: Config,
    /// CPU seconds of its processes that were killed and replaced.
    retired_cpu_s: Mutex<f64>,
    dir: tempfile::TempDir,
    /// Effective settings (secrets masked), as recorded in results.
    pub settings: BTreeMap<String, String>,
    /// Product and version, read from the running server.
    pub info: ServerInfo,
    login: Login,
    run_as: Option<OsUser>,
    pooler: Option<ManagedPooler>,
    /// How clients reach it: TLS certificates, unix sockets.
    access: Access,
    /// Its read replicas (`--server-opt replicas=N`), in order.
    replicas: Vec<Replica>,
}

/// The managed server's own transport settings (`--server-opt tls=on`,
/// `socket=on`), taken out before the product sees the settings.
#[derive(Clone, Debug, Default)]
struct Access {
    tls: Option<TlsFiles>,
    socket: bool,
    /// Each process's socket path (when `socket`).
    sockets: Vec<PathBuf>,
}

/// Takes `key` (`on`/`off`) out of `opts`.
fn switch(opts: &mut BTreeMap<String, String>, key: &str) -> Result<bool> {
    match opts.remove(key).as_deref() {
        None | Some("off") => Ok(false),
        Some("on") => Ok(true),
        Some(v) => bail!("--server-opt {key}={v}: give {key}=on or {key}=off"),
    }
}

impl ManagedServer {
    /// Starts `product` with `opts` (checked by its [`Server::configure`](crate::driver::Server::configure)),
    /// sized for `sizing`. Returns once the server answers its protocol.
    pub fn start(
        product: impl Into<&'static dyn Product>,
        opts: &BTreeMap<String, String>,
        sizing: Sizing,
    ) -> Result<ManagedServer> {
        let product: &'static dyn Product = product.into();
        let server = product.server();
        let facts = &product.facts().server;
        let name = facts.binary;
        let bin = server.find(name).with_context(|| {
            format!(
                "{}, or give --target a URL of a running server",
                facts.missing()
            )
        })?;
        let mut opts = opts.clone();
        let os_user = opts.remove("os-user");
        if os_user.is_some() && facts.system_user.is_none() {
            bail!(
                "--server-opt os-user: a managed {} runs as kvlab's own user; remove it",
                product.name()
            );
        }
        let tls = switch(&mut opts, "tls")?;
        let socket = switch(&mut opts, "socket")?;
        if tls {
            if let TlsStart::Unsupported(why) = product.facts().tls_start {
                bail!("--server-opt tls=on: {why}; remove it");
            }
            if let Err(why) = server.serves_tls() {
                bail!("--server-opt tls=on: {why}; remove it");
            }
        }
        if tls && socket {
            bail!(
                "--server-opt tls=on and socket=on: servers speak plain on a unix socket; choose one"
            );
        }
        if socket && !product.facts().unix_sockets {
            bail!(
                "--server-opt socket=on: a managed {} listens on TCP only; remove it",
                product.name()
            );
        }
        let replicas = replicas_of(product, &opts)?;
        if !product.facts().sharded {
            opts.remove(REPLICAS_KEY);
        }
        let mut config = server.configure(&opts, sizing)?;
        if let Some(r) = server.replication().filter(|_| replicas > 0) {
            r.primary(&mut config, replicas);
            config
                .settings
                .insert(REPLICAS_KEY.into(), replicas.to_string());
        }
        for (key, on) in [("tls", tls), ("socket", socket)] {
            if on {
                config.settings.insert(key.into(), "on".into());
            }
        }
        let config = config;
        let run_as = match facts.system_user {
            Some(default) => osuser::run_as(os_user.as_deref(), default)?,
            None => None,
        };
        let mut last_err = None;
        // A port found free can be taken before the server binds it: retry.
        for _ in 0..3 {
            let access = (tls, socket, replicas);
            match Self::try_start(product, &bin, &config, run_as.as_ref(), access) {
                Ok(s) => return Ok(s),
                Err(e) => {
                    let text = format!("{e:#}");
                    let retry = text.contains("ddress already in use")
                        || text.contains("Do you already have another");
                    last_err = Some(e);
                    if !retry {
                        break;
                    }
                }
            }
        }
        Err(last_err.unwrap_or_else(|| anyhow::anyhow!("{name} did not start")))
    }

    /// The system user a managed server of `product` runs as, if not kvlab's own.
    pub fn os_user(
        product: impl Into<&'static dyn Product>,
        opts: &BTreeMap<String, String>,
    ) -> Option<String> {
        let product: &'static dyn Product = product.into();
        let default = product.facts().server.system_user?;
        osuser::is_root().then(|| {
            opts.get("os-user")
                .cloned()
                .unwrap_or_else(|| default.to_string())
        })
    }

    fn try_start(
        product: &'static dyn Product,
        bin: &Path,
        config: &Config,
        run_as: Option<&OsUser>,
        (tls, socket, replicas): (bool, bool, usize),
    ) -> Result<ManagedServer> {
        let dir = tempfile::Builder::new()
            .prefix("kvlab-")
            .tempdir()
            .context("cannot create a temporary directory")?;
        if let Some(u) = run_as {
            osuser::give_dir(dir.path(), u)?;
        }
        let mut access = Access {
            socket,
            ..Access::default()
        };
        if tls {
            let files = TlsFiles::generate(dir.path(), "kvlab throwaway CA")?;
            if let Some(u) = run_as {
                for f in files.all() {
                    osuser::give_dir(f, u)?;
                }
            }
            access.tls = Some(files);
        }
        let count = product.server().processes(config);
        let mut server = ManagedServer {
            product,
            nodes: Mutex::new(Vec::with_capacity(count)),
            binary: bin.to_path_buf(),
            config: config.clone(),
            retired_cpu_s: Mutex::new(0.0),
            dir,
            settings: config.settings.clone(),
            info: ServerInfo {
                product: product.name().into(),
                version: String::new(),
            },
            login: Login::default(),
            run_as: run_as.cloned(),
            pooler: None,
            access,
            replicas: Vec::new(),
        };
        let mut logs = Vec::with_capacity(count);
        for i in 0..count {
            let dir = match count {
                1 => server.dir.path().to_path_buf(),
                _ => {
                    let d = server.dir.path().join(format!("node{i}"));
                    std::fs::create_dir(&d).context("cannot create a node directory")?;
                    if let Some(u) = run_as {
                        osuser::give_dir(&d, u)?;
                    }
                    d
                }
            };
            let (port, aux_port) = (free_port()?, free_port()?);
            let log_path = dir.join("server.log");
            let data = dir.join("data");
            let sock = product.server().socket_path(&dir, port);
            let (mut cmd, login) = product.server().command(&Launch {
                binary: bin,
                dir: &dir,
                data: &data,
                port,
                aux_port,
                run_as,
                config,
                tls: server.access.tls.as_ref(),
                socket: server.access.socket.then_some(sock.as_path()),
            })?;
            server.access.sockets.push(sock);
            if i == 0 {
                server.login = login;
                if server.login.password.is_none() {
                    server.login.password.clone_from(&config.password);
                }
            }
            cmd.args(&config.args);
            let child = spawn_owned(&mut cmd, &dir, &log_path, bin)?;
            server.nodes().push((child, port));
            logs.push(log_path);
        }
        if let Some(u) = run_as {
            server.settings.insert("os-user".into(), u.name.clone());
        }
        server.info = server.wait_ready(&logs, config)?;
        server.read_effective_settings();
        server.start_replicas(replicas)?;
        Ok(server)
    }

    fn wait_ready(&mut self, logs: &[PathBuf], config: &Config) -> Result<ServerInfo> {
        let wait = self.product.facts().server.start_timeout;
        let deadline = Instant::now() + wait;
        let name = self.product.facts().server.binary;
        {
            let nodes = self.nodes.get_mut().unwrap_or_else(|e| e.into_inner());
            let mut alive = || {
                nodes
                    .iter_mut()
                    .all(|(c, _)| matches!(c.try_wait(), Ok(None)))
            };
            if let Err(e) = self
                .product
                .server()
                .bootstrap(self.dir.path(), deadline, &mut alive)
            {
                return Err(e.context(log_tail(&logs[0])));
            }
        }
        let mut connectors = Vec::with_capacity(logs.len());
        let mut info = None;
        for (i, log) in logs.iter().enumerate() {
            let c = Connector::new(self.product, &self.endpoint_of(i))?;
            info = Some(self.wait_node(i, &c, log, deadline)?);
            connectors.push(c);
        }
        self.product
            .server()
            .join(&connectors, config, deadline)
            .with_context(|| format!("managed {name} did not form one target"))?;
        Ok(info.expect("at least one process"))
    }

    /// Waits until process `i` answers its protocol on `c`.
    fn wait_node(
        &mut self,
        i: usize,
        c: &Connector,
        log: &Path,
        deadline: Instant,
    ) -> Result<ServerInfo> {
        let name = self.product.facts().server.binary;
        loop {
            if let Some(status) = self.nodes()[i].0.try_wait()? {
                let tail = log_tail(log);
                bail!(
                    "managed {name} exited at start ({status}): {tail}; check the --server-opt values"
                );
            }
            match c.probe(Duration::from_millis(500)) {
                Ok(info) => return Ok(info),
                Err(e) if Instant::now() >= deadline => {
                    return Err(e.context(format!(
                        "managed {name} did not become ready in {} s",
                        self.product.facts().server.start_timeout.as_secs()
                    )));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Replaces the recorded settings with the values the running server
    /// reports (e.g. `shared_buffers` as a database shows it).
    fn read_effective_settings(&mut self) {
        let Ok(connector) = Connector::new(self.product, &self.endpoint()) else {
            return;
        };
        let keys: Vec<String> = self
            .settings
            .keys()
            .filter(|k| *k != "os-user" && !is_secret_key(k))
            .filter(|k| {
                k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            })
            .cloned()
            .collect();
        for (k, v) in self.product.server().effective_settings(&connector, &keys) {
            self.settings.insert(k, v);
        }
    }

    /// Pins the server's processes and threads (and, through inheritance, the
    /// ones it starts later) to `cpus`.
    pub fn pin(&self, cpus: &[usize]) -> Result<()> {
        let mut ids: Vec<u32> = Vec::new();
        for pid in self.pids().into_iter().chain(self.replica_pids()) {
            ids.extend(
                std::fs::read_dir(format!("/proc/{pid}/task"))
                    .map(|d| {
                        d.flatten()
                            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default(),
            );
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            ids.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
        // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus {
                libc::CPU_SET(c, &mut set);
            }
            for id in ids {
                libc::sched_setaffinity(
                    id as libc::pid_t,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    &set,
                );
            }
        }
        Ok(())
    }

    /// Where to reach it (its first process, a cluster's seed node).
    pub fn endpoint(&self) -> Endpoint {
        self.endpoint_of(0)
    }

    /// Where to reach its process `i`.
    pub fn endpoint_of(&self, i: usize) -> Endpoint {
        let port = self.nodes()[i].1;
        let socket = self.access.socket.then(|| self.access.sockets[i].clone());
        self.endpoint_at(port, socket)
    }

    /// Where to reach a process of it on `port` (or `socket`), with its login
    /// and TLS settings.
    fn endpoint_at(&self, port: u16, socket: Option<PathBuf>) -> Endpoint {
        Endpoint {
            host: "127.0.0.1".into(),
            port,
            user: self.login.user.clone(),
            password: self.login.password.clone().map(Secret),
            database: self.login.database.clone(),
            socket,
            // kvlab's own client certificate too, for servers told to ask for
            // one (e.g. tls-auth-clients=yes).
            tls: self.access.tls.as_ref().map(|f| TlsOptions {
                ca: Some(f.ca.clone()),
                cert: Some(f.client_cert.clone()),
                key: Some(f.client_key.clone()),
                ..TlsOptions::default()
            }),
        }
    }

    /// The certificates it serves TLS with (`--server-opt tls=on`).
    pub fn tls_files(&self) -> Option<&TlsFiles> {
        self.access.tls.as_ref()
    }

    /// The product it is.
    pub fn product(&self) -> &'static dyn Product {
        self.product
    }

    /// The binary it runs (e.g. for messages).
    pub fn binary(&self) -> &'static str {
        self.product.facts().server.binary
    }

    /// The server's process id (its first process).
    pub fn pid(&self) -> u32 {
        self.nodes()[0].0.id()
    }

    /// The process ids of all its processes (not its read replicas:
    /// [`ManagedServer::replica_pids`]).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes().iter().map(|(c, _)| c.id()).collect()
    }

    /// Its temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// CPU and peak memory used so far (the whole process tree where the
    /// product runs one process per connection).
    /// Summed over its processes (a cluster's nodes) and its read replicas.
    pub fn usage(&self) -> Option<ProcUsage> {
        let mut sum = ProcUsage {
            cpu_s: *self.retired_cpu_s.lock().unwrap_or_else(|e| e.into_inner()),
            ..ProcUsage::default()
        };
        for pid in self.pids().into_iter().chain(self.replica_pids()) {
            let u = self.product.server().usage(pid)?;
            sum.cpu_s += u.cpu_s;
            sum.peak_rss_kb += u.peak_rss_kb;
        }
        Some(sum)
    }

    /// Whether every process (and read replica) still runs.
    pub fn running(&mut self) -> bool {
        let replicas = self
            .replicas
            .iter_mut()
            .map(|r| r.child.get_mut().unwrap_or_else(|e| e.into_inner()));
        self.nodes
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .iter_mut()
            .map(|(c, _)| c)
            .chain(replicas)
            .all(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The system user it runs as, if not kvlab's own.
    pub fn run_as(&self) -> Option<&OsUser> {
        self.run_as.as_ref()
    }

    /// Puts `pooler` in front of it: clients of the run connect through it;
    /// it stops before the server does.
    pub fn attach_pooler(&mut self, pooler: ManagedPooler) {
        self.pooler = Some(pooler);
    }

    /// The pooler in front of it, if any.
    pub fn pooler(&self) -> Option<&ManagedPooler> {
        self.pooler.as_ref()
    }

    /// Stops the server now (its pooler first; then SIGTERM to each process
    /// and read replica, SIGKILL after 5 s) and reaps it.
    pub fn stop(&mut self) {
        self.pooler = None;
        let replicas = self
            .replicas
            .iter_mut()
            .map(|r| r.child.get_mut().unwrap_or_else(|e| e.into_inner()));
        let nodes = self.nodes.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut children: Vec<&mut Child> =
            replicas.chain(nodes.iter_mut().map(|(c, _)| c)).collect();
        for child in children.iter_mut() {
            if let Ok(None) = child.try_wait() {
                // SAFETY: the pid is our unreaped child, so it cannot have been reused.
                unsafe {
                    libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
                }
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for child in children.iter_mut() {
            while Instant::now() < deadline {
                if !matches!(child.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl ManagedServer {
    /// Its processes, locked.
    fn nodes(&self) -> MutexGuard<'_, Vec<(Child, u16)>> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        self.stop();
    }
}
