//! Managed databases: initialising a PostgreSQL or MariaDB data directory in
//! kvlab's temporary directory, running as an unprivileged system user when kvlab
//! runs as root, and creating kvlab's login on MariaDB.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// Looks up a system user by name.
pub fn os_user(name: &str) -> Option<OsUser> {
    let c = CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer to static storage or null; read at once.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: non-null result of getpwnam.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Some(OsUser {
        name: name.to_string(),
        uid,
        gid,
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

/// A PostgreSQL server binary (`initdb`, `postgres`): on PATH or in Debian's
/// versioned directory, newest version first.
pub fn pg_binary(name: &str) -> Option<PathBuf> {
    if let Some(p) = super::find_binary(name) {
        return Some(p);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort_by_key(|d| {
        d.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.into_iter()
        .rev()
        .map(|d| d.join("bin").join(name))
        .find(|p| p.is_file())
}

fn run_tool(mut cmd: Command, what: &str) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        bail!(
            "{what} failed ({}): {}",
            out.status,
            tail[tail.len().saturating_sub(3)..].join(" | ")
        );
    }
    Ok(())
}

/// `initdb` of a trust-authenticated cluster into `data`.
pub fn init_postgres(data: &Path, user: Option<&OsUser>) -> Result<()> {
    let initdb = pg_binary("initdb").context(
        "PostgreSQL's initdb is not installed; run `make deps` (or apt-get install postgresql)",
    )?;
    let mut cmd = Command::new(initdb);
    cmd.arg("-D").arg(data).args([
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-instructions",
        "--no-sync",
    ]);
    as_user(&mut cmd, user);
    run_tool(cmd, "initdb")
}

/// `mariadb-install-db` into `data`.
pub fn init_mariadb(data: &Path, user: Option<&OsUser>) -> Result<()> {
    let tool = super::find_binary("mariadb-install-db")
        .or_else(|| super::find_binary("mysql_install_db"))
        .context("mariadb-install-db is not installed; run `make deps` (or apt-get install mariadb-server)")?;
    let mut cmd = Command::new(tool);
    // Its own tmpdir: concurrent bootstraps collide on temporary table names in /tmp.
    let tmp = data.parent().unwrap_or(data);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--tmpdir={}", tmp.display()))
        .args(["--skip-test-db", "--auth-root-authentication-method=socket"]);
    if let Some(u) = user {
        cmd.arg(format!("--user={}", u.name));
    }
    run_tool(cmd, "mariadb-install-db")
}

/// The login kvlab creates on a managed MariaDB: (user, password, database).
pub const MARIADB_LOGIN: (&str, &str, &str) = ("kvlab", "kvlab", "kvlab");

/// Waits for a managed MariaDB's socket and creates kvlab's database and login
/// through the `mariadb` client as root (socket authentication).
pub fn bootstrap_mariadb(
    socket: &Path,
    deadline: Instant,
    alive: &mut dyn FnMut() -> bool,
) -> Result<()> {
    let client = super::find_binary("mariadb")
        .or_else(|| super::find_binary("mysql"))
        .context("the mariadb client is not installed; run `make deps`")?;
    let (user, pass, db) = MARIADB_LOGIN;
    let sql = format!(
        "CREATE DATABASE IF NOT EXISTS {db}; CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{pass}'; GRANT ALL ON {db}.* TO '{user}'@'%'; GRANT PROCESS ON *.* TO '{user}'@'%';"
    );
    let mut last = String::new();
    while Instant::now() < deadline {
        if !alive() {
            bail!("managed mariadbd exited at start");
        }
        if socket.exists() {
            let out = Command::new(&client)
                .arg("--no-defaults")
                .arg(format!("--socket={}", socket.display()))
                .args(["-u", "root", "-e", &sql])
                .stdin(Stdio::null())
                .output()
                .context("cannot run the mariadb client")?;
            if out.status.success() {
                return Ok(());
            }
            last = String::from_utf8_lossy(&out.stderr).trim().to_string();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("managed mariadbd did not accept kvlab's set-up in time: {last}")
}
