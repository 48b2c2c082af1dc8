//! The system a managed server runs on: its installed programs, and its users
//! (a database must not run as root, so when kvlab runs as root it runs the
//! server and its set-up tools as the product's unprivileged system user,
//! owning kvlab's temporary directory).

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// A system user to run a database server as.
#[derive(Clone, Debug)]
pub struct OsUser {
    /// Login name.
    pub name: String,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
}

/// Looks up a system user by name, with `getpwnam_r`: `getpwnam`'s static
/// storage is shared between threads, and two servers started side by side
/// (one as `mysql`, one as `postgres`) could read each other's ids.
pub fn os_user(name: &str) -> Option<OsUser> {
    let c = CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: passwd is plain data; getpwnam_r fills it (its strings in buf).
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, buf's length is given.
    let rc =
        unsafe { libc::getpwnam_r(c.as_ptr(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() {
        return None;
    }
    Some(OsUser {
        name: name.to_string(),
        uid: pw.pw_uid,
        gid: pw.pw_gid,
    })
}

/// Whether kvlab runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The user a managed database runs as: `None` when kvlab is not root (it runs
/// as kvlab's own user), else `wanted` or the product's Debian system user.
pub fn run_as(wanted: Option<&str>, default: &str) -> Result<Option<OsUser>> {
    if !is_root() {
        return Ok(None);
    }
    let name = wanted.unwrap_or(default);
    match os_user(name) {
        Some(u) => Ok(Some(u)),
        None => bail!(
            "kvlab runs as root and the database must not: system user '{name}' does not exist; create it or name another with --server-opt os-user=NAME"
        ),
    }
}

/// Hands `dir` (and everything below it) to `user`.
pub fn give_dir(dir: &Path, user: &OsUser) -> Result<()> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).context("bad directory name")?;
    // SAFETY: valid NUL-terminated path.
    if unsafe { libc::chown(c.as_ptr(), user.uid, user.gid) } != 0 {
        bail!(
            "cannot hand {} to user {}: {}",
            dir.display(),
            user.name,
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Makes `cmd` run as `user`, if given.
pub fn as_user(cmd: &mut Command, user: Option<&OsUser>) {
    if let Some(u) = user {
        cmd.uid(u.uid)
            .gid(u.gid)
            .env("HOME", "/tmp")
            .env("USER", &u.name);
    }
}

/// Runs a set-up tool (e.g. a data-directory initialiser); fails with the
/// last lines of its output.
pub fn run_tool(mut cmd: Command, what: &str) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        bail!("{what} failed ({}): {}", out.status, gist(&text));
    }
    Ok(())
}

/// The lines of a tool's output that say what went wrong: its first lines
/// naming an error, or else its last three lines.
fn gist(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains("ERROR") || l.contains("FATAL"))
        .take(3)
        .collect();
    if errors.is_empty() {
        lines[lines.len().saturating_sub(3)..].join(" | ")
    } else {
        errors.join(" | ")
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
