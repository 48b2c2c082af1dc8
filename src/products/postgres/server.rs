//! A managed PostgreSQL: `initdb` of a trust-authenticated cluster in kvlab's
//! temporary directory (as the `postgres` system user when kvlab is root), any
//! server setting as `--server-opt` (`-c KEY=VALUE`), defaults sized for the
//! data and connections, `pg_stat_statements` loaded for exact counters;
//! its read replicas are in `replicas.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use super::{PgConn, Postgres};
use crate::driver::settings::{DATABASE_OWN, database_config, mib_for, with_defaults};
use crate::driver::{Config, Connector, Launch, Login, Replication, Server, Sizing};
use crate::products::sql;
use crate::system::osuser::{OsUser, as_user, run_tool};
use crate::system::{ProcUsage, find_binary, proc_tree_usage};

impl Server for Postgres {
    fn find(&self, binary: &str) -> Option<PathBuf> {
        pg_binary(binary)
    }

    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config> {
        let conns = (sizing.connections + 20).max(100);
        let given = with_defaults(
            opts,
            [
                ("max_connections", conns.to_string()),
                (
                    "shared_buffers",
                    format!("{}MB", mib_for(sizing.data_bytes, 128)),
                ),
                // Exact per-statement counters to cross-check kvlab's counts (the
                // usual production setting; `shared_preload_libraries=` turns it off).
                ("shared_preload_libraries", "pg_stat_statements".into()),
            ],
        );
        database_config(
            &given,
            DATABASE_OWN,
            |k| k.replace('-', "_"),
            |k, v| vec!["-c".to_string(), format!("{k}={v}")],
        )
    }

    fn command(&self, l: &Launch<'_>) -> Result<(Command, Login)> {
        init_postgres(l.data, l.run_as)?;
        let mut cmd = Command::new(l.binary);
        cmd.arg("-D")
            .arg(l.data)
            .arg("-p")
            .arg(l.port.to_string())
            .arg("-k")
            .arg(l.dir)
            .args(["-c", "listen_addresses=127.0.0.1"]);
        if let Some(f) = l.tls {
            cmd.args(["-c", "ssl=on"]);
            cmd.arg("-c")
                .arg(format!("ssl_cert_file={}", f.cert.display()));
            cmd.arg("-c")
                .arg(format!("ssl_key_file={}", f.key.display()));
        }
        as_user(&mut cmd, l.run_as);
        let login = Login {
            user: Some("postgres".to_string()),
            password: None,
            database: Some("postgres".to_string()),
        };
        Ok((cmd, login))
    }

    /// `-k DIR` makes it listen on `DIR/.s.PGSQL.PORT` anyway.
    fn socket_path(&self, dir: &Path, port: u16) -> PathBuf {
        dir.join(format!(".s.PGSQL.{port}"))
    }

    fn effective_settings(&self, c: &Connector, keys: &[String]) -> Vec<(String, String)> {
        sql::settings::<PgConn>(c, keys, |key| format!("SELECT current_setting('{key}')"))
    }

    /// The whole process tree: the postmaster, live backends, and backends that
    /// exited (the postmaster's reaped children).
    fn usage(&self, pid: u32) -> Option<ProcUsage> {
        proc_tree_usage(pid)
    }

    /// Streaming replicas (`replicas.rs`).
    fn replication(&self) -> Option<&dyn Replication> {
        Some(self)
    }
}

/// A PostgreSQL server binary (`initdb`, `postgres`): on PATH or in Debian's
/// versioned directory, newest version first.
pub(super) fn pg_binary(name: &str) -> Option<PathBuf> {
    if let Some(p) = find_binary(name) {
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

/// `initdb` of a trust-authenticated cluster into `data`.
fn init_postgres(data: &Path, user: Option<&OsUser>) -> Result<()> {
    if data.join("PG_VERSION").exists() {
        // Started again after a kill (`--event`): the data is there.
        return Ok(());
    }
    let initdb = pg_binary("initdb").context(
        "PostgreSQL's initdb is not installed; run `make deps` (or apt-get install postgresql)",
    )?;
    // Once per installed initdb and user; each start copies it.
    let who = user.map(|u| u.name.as_str());
    crate::system::template::initialised(("postgres", &initdb, who), data, |data| {
        let mut cmd = Command::new(&initdb);
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
    })
}

#[cfg(test)]
mod tests {
    use super::super::POSTGRES;
    use super::*;

    #[test]
    fn sizes_for_the_data() {
        let sizing = Sizing {
            data_bytes: 1 << 30,
            connections: 1000,
        };
        let c = POSTGRES.configure(&BTreeMap::new(), sizing).unwrap();
        assert_eq!(c.settings["max_connections"], "1020");
        assert_eq!(c.settings["shared_buffers"], "1536MB");
        assert!(
            c.args
                .windows(2)
                .any(|w| w == ["-c", "max_connections=1020"])
        );
    }
}
