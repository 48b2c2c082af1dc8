//! A managed MariaDB: `mariadb-install-db` in kvlab's temporary directory (as
//! the `mysql` system user when kvlab is root), any server setting as
//! `--server-opt` (`--KEY=VALUE`), defaults sized for the data and
//! connections, and kvlab's own login created through the socket; its read
//! replicas are in `replicas.rs`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{Mariadb, MyConn};
use crate::driver::product::IsAlive;
use crate::driver::settings::{DATABASE_OWN, database_config, mib_for, with_defaults};
use crate::driver::{Config, Connector, Launch, Login, Replication, Server, Sizing};
use crate::products::sql;
use crate::system::find_binary;
use crate::system::osuser::{OsUser, run_tool};

impl Server for Mariadb {
    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config> {
        let conns = (sizing.connections + 20).max(151);
        let given = with_defaults(
            opts,
            [
                ("max_connections", conns.to_string()),
                (
                    "innodb_buffer_pool_size",
                    format!("{}M", mib_for(sizing.data_bytes, 128)),
                ),
                // The MEMORY engine's table must fit too.
                (
                    "max_heap_table_size",
                    format!("{}M", mib_for(sizing.data_bytes * 2, 64)),
                ),
            ],
        );
        database_config(&given, DATABASE_OWN, str::to_string, |k, v| {
            vec![format!("--{k}={v}")]
        })
    }

    fn command(&self, l: &Launch<'_>) -> Result<(Command, Login)> {
        init_mariadb(l.data, l.run_as)?;
        let mut cmd = Command::new(l.binary);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", l.data.display()))
            .arg(format!("--socket={}", l.dir.join("mysqld.sock").display()))
            .arg(format!("--pid-file={}", l.dir.join("mysqld.pid").display()))
            .arg(format!("--port={}", l.port))
            // Its own tmpdir: servers side by side collide on temporary table names in /tmp.
            .arg(format!("--tmpdir={}", l.dir.display()))
            .args(["--bind-address=127.0.0.1", "--skip-name-resolve"]);
        if let Some(f) = l.tls {
            cmd.arg(format!("--ssl-cert={}", f.cert.display()));
            cmd.arg(format!("--ssl-key={}", f.key.display()));
            cmd.arg(format!("--ssl-ca={}", f.ca.display()));
        }
        if let Some(u) = l.run_as {
            cmd.arg(format!("--user={}", u.name));
        }
        let (user, password, database) = MARIADB_LOGIN;
        let login = Login {
            user: Some(user.to_string()),
            password: Some(password.to_string()),
            database: Some(database.to_string()),
        };
        Ok((cmd, login))
    }

    /// It listens on `DIR/mysqld.sock` anyway (the bootstrap uses it).
    fn socket_path(&self, dir: &Path, _port: u16) -> PathBuf {
        dir.join("mysqld.sock")
    }

    fn bootstrap(&self, dir: &Path, deadline: Instant, alive: IsAlive<'_>) -> Result<()> {
        bootstrap_mariadb(&dir.join("mysqld.sock"), deadline, alive)
    }

    fn effective_settings(&self, c: &Connector, keys: &[String]) -> Vec<(String, String)> {
        sql::settings::<MyConn>(c, keys, |key| {
            format!("SELECT @@GLOBAL.{}", key.replace('-', "_"))
        })
    }

    /// Binlog replicas (`replicas.rs`).
    fn replication(&self) -> Option<&dyn Replication> {
        Some(self)
    }
}

/// `mariadb-install-db` into `data`.
fn init_mariadb(data: &Path, user: Option<&OsUser>) -> Result<()> {
    if data.join("mysql").exists() {
        // Started again after a kill (`--event`): the data is there.
        return Ok(());
    }
    let tool = find_binary("mariadb-install-db")
        .or_else(|| find_binary("mysql_install_db"))
        .context("mariadb-install-db is not installed; run `make deps` (or apt-get install mariadb-server)")?;
    // Its own tmpdir: concurrent bootstraps collide on temporary table names in /tmp.
    let tmp = data.parent().unwrap_or(data);
    let install = |data: &Path| {
        let mut cmd = Command::new(&tool);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(["--skip-test-db", "--auth-root-authentication-method=socket"]);
        if let Some(u) = user {
            cmd.arg(format!("--user={}", u.name));
        }
        run_tool(cmd, "mariadb-install-db")
    };
    // Once per installed tool and user; each start copies it. Once more
    // into an empty directory if it fails: a CI run on a busy 2-core
    // machine saw one of several bootstraps side by side fail.
    let who = user.map(|u| u.name.as_str());
    crate::system::template::initialised(("mariadb", &tool, who), data, |data| {
        install(data).or_else(|first| {
            let _ = std::fs::remove_dir_all(data);
            install(data).with_context(|| format!("twice; the first time: {first:#}"))
        })
    })
}

/// The login kvlab creates on a managed MariaDB: (user, password, database).
pub(super) const MARIADB_LOGIN: (&str, &str, &str) = ("kvlab", "kvlab", "kvlab");

/// Waits for a managed MariaDB's socket and creates kvlab's database and login
/// through the `mariadb` client as root (socket authentication).
fn bootstrap_mariadb(socket: &Path, deadline: Instant, alive: IsAlive<'_>) -> Result<()> {
    let (user, pass, db) = MARIADB_LOGIN;
    let sql = format!(
        "CREATE DATABASE IF NOT EXISTS {db}; CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{pass}'; GRANT ALL ON {db}.* TO '{user}'@'%'; GRANT PROCESS ON *.* TO '{user}'@'%';"
    );
    root_sql(socket, &sql, deadline, alive).context("kvlab's set-up")
}

/// Runs `sql` as root through the `mariadb` client on `socket` (socket
/// authentication) once the socket is there and takes it, by `deadline`; the
/// SQL goes on stdin, never on a command line.
pub(super) fn root_sql(
    socket: &Path,
    sql: &str,
    deadline: Instant,
    alive: IsAlive<'_>,
) -> Result<()> {
    let client = find_binary("mariadb")
        .or_else(|| find_binary("mysql"))
        .context("the mariadb client is not installed; run `make deps`")?;
    let mut last = String::new();
    while Instant::now() < deadline {
        if !alive() {
            bail!("managed mariadbd exited at start");
        }
        if socket.exists() {
            let mut child = Command::new(&client)
                .arg("--no-defaults")
                .arg(format!("--socket={}", socket.display()))
                .args(["-u", "root"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .context("cannot run the mariadb client")?;
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(sql.as_bytes());
            }
            let out = child
                .wait_with_output()
                .context("cannot run the mariadb client")?;
            if out.status.success() {
                return Ok(());
            }
            last = String::from_utf8_lossy(&out.stderr).trim().to_string();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("managed mariadbd did not accept it in time: {last}")
}

#[cfg(test)]
mod tests {
    use super::super::MARIADB;
    use super::*;

    #[test]
    fn passes_settings_and_refuses_its_own() {
        let mut o = BTreeMap::new();
        o.insert("query_cache_type".to_string(), "1".to_string());
        let sizing = Sizing::test(0);
        let c = MARIADB.configure(&o, sizing).unwrap();
        assert!(c.args.contains(&"--query_cache_type=1".to_string()));
        assert_eq!(c.settings["max_connections"], "151");
        o.insert("port".into(), "1".into());
        assert!(MARIADB.configure(&o, sizing).is_err());
    }
}
