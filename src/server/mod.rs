//! Managed servers: kvlab starts a real server from the installed binary in a
//! temporary directory on a free loopback port, waits until it answers, measures
//! its CPU and memory from /proc, and stops exactly the process it started when
//! dropped (also on error and Ctrl-C). Never kills anything by name.

pub mod config;
pub mod counters;

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
    }
}

fn find_binary(name: &str) -> Option<PathBuf> {
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
    /// Starts `kind` with `opts` (see [`config::server_args`]); `data_bytes` sizes
    /// memory defaults. Returns once the server answers its protocol.
    pub fn start(
        kind: TargetKind,
        opts: &BTreeMap<String, String>,
        data_bytes: u64,
    ) -> Result<ManagedServer> {
        let name = binary_name(kind);
        let bin = find_binary(name).with_context(|| {
            format!("'{name}' is not installed; run `make deps` (or apt-get install {}), or give --target a URL of a running server", package_of(kind))
        })?;
        let (extra, settings) = config::server_args(kind, opts, data_bytes)?;
        let password = opts.get("requirepass").cloned();
        let mut last_err = None;
        // A port found free can be taken before the server binds it: retry.
        for _ in 0..3 {
            match Self::try_start(kind, &bin, &extra, settings.clone(), password.clone()) {
                Ok(s) => return Ok(s),
                Err(e) => {
                    let retry = format!("{e:#}").contains("ddress already in use");
                    last_err = Some(e);
                    if !retry {
                        break;
                    }
                }
            }
        }
        Err(last_err.unwrap_or_else(|| anyhow::anyhow!("{name} did not start")))
    }

    fn try_start(
        kind: TargetKind,
        bin: &Path,
        extra: &[String],
        settings: BTreeMap<String, String>,
        password: Option<String>,
    ) -> Result<ManagedServer> {
        let dir = tempfile::Builder::new()
            .prefix("kvlab-")
            .tempdir()
            .context("cannot create a temporary directory")?;
        let port = free_port()?;
        let log_path = dir.path().join("server.log");
        let log = File::create(&log_path)?;
        let mut cmd = Command::new(bin);
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
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } == 0 {
                    cmd.args(["-u", "root"]);
                }
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
        };
        server.info = server.wait_ready(&log_path)?;
        Ok(server)
    }

    fn wait_ready(&mut self, log: &Path) -> Result<ServerInfo> {
        let connector = Connector::new(self.kind, &self.endpoint())?;
        let deadline = Instant::now() + Duration::from_secs(15);
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
                        "managed {} did not become ready in 15 s",
                        binary_name(self.kind)
                    )));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Where to reach it.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            host: "127.0.0.1".into(),
            port: self.port,
            user: None,
            password: self.password.clone().map(crate::plan::Secret),
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

    /// CPU and peak memory used so far.
    pub fn usage(&self) -> Option<ProcUsage> {
        proc_usage(self.pid())
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

/// CPU seconds (user + system) and peak RSS of process `pid`, from /proc.
pub fn proc_usage(pid: u32) -> Option<ProcUsage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let peak_rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    Some(ProcUsage {
        cpu_s: ticks as f64 / hz,
        peak_rss_kb,
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
