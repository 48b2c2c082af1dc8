//! Child processes kvlab starts (servers, poolers): a free loopback port,
//! the open-file limit they inherit, spawning one that kvlab owns, the tail of
//! a process's log for errors, and stopping exactly one child.

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// A loopback port that is free now (a server may still take it first).
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot find a free loopback port")?;
    Ok(l.local_addr()?.port())
}

/// Spawns `cmd` in `dir` with its output in the file `log`, in its own process
/// group (a terminal's Ctrl-C reaches kvlab only, which stops it in order),
/// and killed if kvlab dies. `bin` names it in the error.
pub fn spawn_owned(cmd: &mut Command, dir: &Path, log: &Path, bin: &Path) -> Result<Child> {
    let log = File::create(log)?;
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; the child dies if kvlab is killed.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn()
        .with_context(|| format!("cannot start {}", bin.display()))
}

/// Stops `child` if it still runs (SIGTERM, then SIGKILL after 5 s) and reaps it.
pub fn stop_child(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        // SAFETY: the pid is our unreaped child, so it cannot have been reused.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The last lines of a server's log, on one line.
pub fn log_tail(log: &Path) -> String {
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

/// This process's open-file limit, soft and hard; the servers it starts inherit it.
pub fn open_files() -> (u64, u64) {
    // SAFETY: getrlimit writes the struct we pass.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            (lim.rlim_cur, lim.rlim_max)
        } else {
            (u64::MAX, u64::MAX)
        }
    }
}

/// Raises the soft open-file limit to `want`, at most to the hard limit.
pub fn raise_open_files(want: u64) {
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            let want = want.min(lim.rlim_max);
            if lim.rlim_cur < want {
                lim.rlim_cur = want;
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
        }
    }
}
