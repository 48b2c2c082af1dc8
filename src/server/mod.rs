//! Managed servers: kvlab starts a real server from the installed binary in a
//! temporary directory on a free loopback port, waits until it answers, measures
//! its CPU and memory from /proc, and stops exactly the process it started when
//! dropped (also on error and Ctrl-C). Never kills anything by name.

pub mod config;
pub mod counters;
pub mod sql;

use std::collections::BTreeMap;
use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::driver::{Connector, ServerInfo};
use crate::plan::{Endpoint, TargetKind};

/// A running server that kvlab started and will stop.
pub struct ManagedServer {
    kind: TargetKind,
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    /// Effective settings (secrets masked), as recorded in results.
    pub settings: BTreeMap<String, String>,
    /// Product and version, read from the running server.
    pub info: ServerInfo,
    password: Option<String>,
    user: Option<String>,
    database: Option<String>,
}

/// CPU and memory a process used, from /proc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcUsage {
    /// User plus system CPU seconds so far.
    pub cpu_s: f64,
    /// Peak resident set size so far, in KiB.
    pub peak_rss_kb: u64,
}

/// The binary kvlab runs for a managed `kind`.
pub fn binary_name(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Redis => "redis-server",
        TargetKind::Valkey => "valkey-server",
        TargetKind::Memcached => "memcached",
        TargetKind::Postgres => "postgres",
        TargetKind::Mariadb => "mariadbd",
    }
}

/// Finds an installed program on PATH or in the usual system directories.
pub fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain([
            PathBuf::from("/usr/sbin"),
            PathBuf::from("/usr/bin"),
            PathBuf::from("/usr/local/bin"),
        ])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot find a free loopback port")?;
    Ok(l.local_addr()?.port())
}

impl ManagedServer {
    /// Starts `kind` with `opts` (see [`config::server_args`]), sized for
    /// `sizing`. Returns once the server answers its protocol.
    pub fn start(
        kind: TargetKind,
        opts: &BTreeMap<String, String>,
        sizing: config::Sizing,
    ) -> Result<ManagedServer> {
        let name = binary_name(kind);
        let bin = match kind {
            TargetKind::Postgres => sql::pg_binary(name),
            _ => find_binary(name),
        };
        let bin = bin.with_context(|| {
            format!("'{name}' is not installed; run `make deps` (or apt-get install {}), or give --target a URL of a running server", package_of(kind))
        })?;
        let mut opts = opts.clone();
        let os_user = opts.remove("os-user");
        if os_user.is_some() && !kind.is_sql() {
            bail!(
                "--server-opt os-user: only PostgreSQL and MariaDB run as another user; remove it"
            );
        }
        let (extra, settings) = config::server_args(kind, &opts, sizing)?;
        let password = opts.get("requirepass").cloned();
        let run_as = match kind {
            TargetKind::Postgres => sql::run_as(os_user.as_deref(), "postgres")?,
            TargetKind::Mariadb => sql::run_as(os_user.as_deref(), "mysql")?,
            _ => None,
        };
        let mut last_err = None;
        // A port found free can be taken before the server binds it: retry.
        for _ in 0..3 {
            match Self::try_start(
                kind,
                &bin,
                &extra,
                settings.clone(),
                password.clone(),
                run_as.as_ref(),
            ) {
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

    /// The system user a managed database runs as, if not kvlab's own.
    pub fn os_user(kind: TargetKind, opts: &BTreeMap<String, String>) -> Option<String> {
        let default = match kind {
            TargetKind::Postgres => "postgres",
            TargetKind::Mariadb => "mysql",
            _ => return None,
        };
        sql::is_root().then(|| {
            opts.get("os-user")
                .cloned()
                .unwrap_or_else(|| default.to_string())
        })
    }

    fn try_start(
        kind: TargetKind,
        bin: &Path,
        extra: &[String],
        settings: BTreeMap<String, String>,
        password: Option<String>,
        run_as: Option<&sql::OsUser>,
    ) -> Result<ManagedServer> {
        let dir = tempfile::Builder::new()
            .prefix("kvlab-")
            .tempdir()
            .context("cannot create a temporary directory")?;
        if let Some(u) = run_as {
            sql::give_dir(dir.path(), u)?;
        }
        let port = free_port()?;
        let log_path = dir.path().join("server.log");
        let log = File::create(&log_path)?;
        let data = dir.path().join("data");
        let mut cmd = Command::new(bin);
        let (mut user, mut database) = (None, None);
        let mut password = password;
        match kind {
            TargetKind::Redis | TargetKind::Valkey => {
                cmd.arg("--port")
                    .arg(port.to_string())
                    .args([
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--daemonize",
                        "no",
                    ])
                    .args(["--protected-mode", "no", "--logfile", ""])
                    .arg("--dir")
                    .arg(dir.path());
            }
            TargetKind::Memcached => {
                cmd.arg("-p")
                    .arg(port.to_string())
                    .args(["-l", "127.0.0.1", "-U", "0"]);
                if sql::is_root() {
                    cmd.args(["-u", "root"]);
                }
            }
            TargetKind::Postgres => {
                sql::init_postgres(&data, run_as)?;
                cmd.arg("-D")
                    .arg(&data)
                    .arg("-p")
                    .arg(port.to_string())
                    .arg("-k")
                    .arg(dir.path())
                    .args(["-c", "listen_addresses=127.0.0.1"]);
                sql::as_user(&mut cmd, run_as);
                user = Some("postgres".to_string());
                database = Some("postgres".to_string());
            }
            TargetKind::Mariadb => {
                sql::init_mariadb(&data, run_as)?;
                cmd.arg("--no-defaults")
                    .arg(format!("--datadir={}", data.display()))
                    .arg(format!(
                        "--socket={}",
                        dir.path().join("mysqld.sock").display()
                    ))
                    .arg(format!(
                        "--pid-file={}",
                        dir.path().join("mysqld.pid").display()
                    ))
                    .arg(format!("--port={port}"))
                    // Its own tmpdir: servers side by side collide on temporary table names in /tmp.
                    .arg(format!("--tmpdir={}", dir.path().display()))
                    .args(["--bind-address=127.0.0.1", "--skip-name-resolve"]);
                if let Some(u) = run_as {
                    cmd.arg(format!("--user={}", u.name));
                }
                let (u, p, d) = sql::MARIADB_LOGIN;
                user = Some(u.to_string());
                password = Some(p.to_string());
                database = Some(d.to_string());
            }
        }
        cmd.args(extra)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group, so a terminal's Ctrl-C reaches kvlab only and
            // kvlab stops the server in order.
            .process_group(0);
        // SAFETY: prctl is async-signal-safe; the server dies if kvlab is killed.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let mut server = ManagedServer {
            kind,
            child,
            port,
            dir,
            settings,
            info: ServerInfo {
                product: kind.name().into(),
                version: String::new(),
            },
            password,
            user,
            database,
        };
        if let Some(u) = run_as {
            server.settings.insert("os-user".into(), u.name.clone());
        }
        server.info = server.wait_ready(&log_path)?;
        server.read_effective_settings();
        Ok(server)
    }

    fn wait_ready(&mut self, log: &Path) -> Result<ServerInfo> {
        let connector = Connector::new(self.kind, &self.endpoint())?;
        let deadline = Instant::now() + Duration::from_secs(30);
        if self.kind == TargetKind::Mariadb {
            let socket = self.dir.path().join("mysqld.sock");
            let child = &mut self.child;
            let mut alive = || matches!(child.try_wait(), Ok(None));
            if let Err(e) = sql::bootstrap_mariadb(&socket, deadline, &mut alive) {
                return Err(e.context(log_tail(log)));
            }
        }
        loop {
            if let Some(status) = self.child.try_wait()? {
                let tail = log_tail(log);
                bail!(
                    "managed {} exited at start ({status}): {tail}; check the --server-opt values",
                    binary_name(self.kind)
                );
            }
            match connector.probe(Duration::from_millis(500)) {
                Ok(info) => return Ok(info),
                Err(e) if Instant::now() >= deadline => {
                    return Err(e.context(format!(
                        "managed {} did not become ready in 30 s",
                        binary_name(self.kind)
                    )));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Replaces the recorded database settings with the values the running
    /// server reports (e.g. `shared_buffers` as PostgreSQL shows it).
    fn read_effective_settings(&mut self) {
        let Ok(connector) = Connector::new(self.kind, &self.endpoint()) else {
            return;
        };
        let t = Duration::from_secs(5);
        let keys: Vec<String> = self
            .settings
            .keys()
            .filter(|k| *k != "os-user" && !crate::plan::is_secret_key(k))
            .filter(|k| {
                k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            })
            .cloned()
            .collect();
        match self.kind {
            TargetKind::Postgres => {
                let Ok(mut c) = connector.open_pg(t) else {
                    return;
                };
                for key in keys {
                    if let Ok(Some(v)) = c.query_one(&format!("SELECT current_setting('{key}')")) {
                        self.settings.insert(key, v);
                    }
                }
            }
            TargetKind::Mariadb => {
                let Ok(mut c) = connector.open_my(t) else {
                    return;
                };
                for key in keys {
                    if let Ok(Some(v)) =
                        c.query_one(&format!("SELECT @@GLOBAL.{}", key.replace('-', "_")))
                    {
                        self.settings.insert(key, v);
                    }
                }
            }
            _ => {}
        }
    }

    /// Pins the server's processes and threads (and, through inheritance, the
    /// ones it starts later) to `cpus`.
    pub fn pin(&self, cpus: &[usize]) -> Result<()> {
        let pid = self.pid();
        let mut ids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        ids.extend(
            children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
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

    /// Where to reach it.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            host: "127.0.0.1".into(),
            port: self.port,
            user: self.user.clone(),
            password: self.password.clone().map(crate::plan::Secret),
            database: self.database.clone(),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// CPU and peak memory used so far; for PostgreSQL the whole process tree
    /// (postmaster, live backends, and backends that exited: the postmaster's
    /// reaped children).
    pub fn usage(&self) -> Option<ProcUsage> {
        match self.kind {
            TargetKind::Postgres => proc_tree_usage(self.pid()),
            _ => proc_usage(self.pid()),
        }
    }

    /// Whether the process still runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops the server now (SIGTERM, then SIGKILL after 5 s) and reaps it.
    pub fn stop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: the pid is our unreaped child, so it cannot have been reused.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn package_of(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Redis => "redis-server",
        TargetKind::Valkey => "valkey-server from bookworm-backports",
        TargetKind::Memcached => "memcached",
        TargetKind::Postgres => "postgresql",
        TargetKind::Mariadb => "mariadb-server",
    }
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.is_empty() {
        "no output".into()
    } else {
        tail
    }
}

struct Stat {
    ticks: u64,
    child_ticks: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name: utime, stime, cutime, cstime
    // are fields 14 to 17 of the whole line.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|x| x.parse().ok())
        .collect();
    (f.len() == 4).then(|| Stat {
        ticks: f[0] + f[1],
        child_ticks: f[2] + f[3],
    })
}

fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn clock_hz() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

/// CPU seconds (user + system) and peak RSS of process `pid`, from /proc.
pub fn proc_usage(pid: u32) -> Option<ProcUsage> {
    let st = read_stat(pid)?;
    Some(ProcUsage {
        cpu_s: st.ticks as f64 / clock_hz(),
        peak_rss_kb: status_kb(pid, "VmHWM:"),
    })
}

/// CPU seconds of `pid`, its reaped children and its live children, and the
/// memory of the tree now: private memory of every process plus the largest
/// shared segment once (shared buffers are mapped by every backend).
pub fn proc_tree_usage(pid: u32) -> Option<ProcUsage> {
    proc_tree_usage_inner(pid)
}

/// On-CPU nanoseconds of a single-threaded process (its main thread), exact.
fn schedstat_ns(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    s.split_whitespace().next()?.parse::<f64>().ok()
}

/// Process ids whose parent is `pid` (a scan of /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s[s.rfind(')')? + 2..]
                        .split_whitespace()
                        .nth(1)?
                        .parse::<u32>()
                        .ok()
                })
                == Some(pid)
        })
        .collect()
}

fn proc_tree_usage_inner(pid: u32) -> Option<ProcUsage> {
    // Live processes by their exact on-CPU time (schedstat, ns): /proc's clock
    // ticks truncate each process to 10 ms, and a thousand backends each doing a
    // millisecond of work would add up to nothing. Exited children arrive in the
    // parent's reaped-children time, rounded once.
    let root = read_stat(pid)?;
    let own_ns = schedstat_ns(pid).unwrap_or(root.ticks as f64 / clock_hz() * 1e9);
    let mut cpu_s = own_ns / 1e9 + root.child_ticks as f64 / clock_hz();
    let mut private = status_kb(pid, "RssAnon:") + status_kb(pid, "RssFile:");
    let mut shared = status_kb(pid, "RssShmem:");
    // Every process whose parent is `pid`, from /proc itself: the kernel's
    // `children` file can miss entries while a thousand backends come and go.
    for child in children_of(pid) {
        if let Some(st) = read_stat(child) {
            cpu_s += schedstat_ns(child).map_or(st.ticks as f64 / clock_hz(), |ns| ns / 1e9)
                + st.child_ticks as f64 / clock_hz();
            // Program text (RssFile) is shared by every backend: counted once, above.
            private += status_kb(child, "RssAnon:");
            shared = shared.max(status_kb(child, "RssShmem:"));
        }
    }
    Some(ProcUsage {
        cpu_s,
        peak_rss_kb: private + shared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_usage() {
        let u = proc_usage(std::process::id()).unwrap();
        assert!(u.peak_rss_kb > 0);
    }
}
