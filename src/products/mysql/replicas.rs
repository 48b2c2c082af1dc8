//! Read replicas of a managed MariaDB (`--server-opt replicas=N`): the
//! primary writes a row-based binlog (`server_id=1`, `log_bin`,
//! `binlog_format=ROW`) from its first start, so kvlab's login and database
//! replicate too; each replica is a fresh `mariadb-install-db` data directory
//! with its own `server_id`, `read_only`, told through its socket (as root)
//! to follow the primary by GTID from the start (`CHANGE MASTER TO …
//! MASTER_USE_GTID=slave_pos; START SLAVE`). Lag is each replica's own
//! `SHOW SLAVE STATUS`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::server::{MARIADB_LOGIN, root_sql};
use super::{Mariadb, open};
use crate::driver::product::Following;
use crate::driver::{Config, Connector, Launch, ReplicaLag, Replication, Server};

/// The socket a managed MariaDB in `dir` listens on (as `command` sets it).
fn socket_in(dir: &Path) -> std::path::PathBuf {
    dir.join("mysqld.sock")
}

impl Replication for Mariadb {
    fn primary(&self, config: &mut Config, _replicas: usize) {
        for (k, v) in [
            ("server_id", "1"),
            ("log_bin", "kvlab-bin"),
            ("binlog_format", "ROW"),
        ] {
            config.args.push(format!("--{k}={v}"));
            config.settings.insert(k.into(), v.into());
        }
    }

    /// kvlab's login may replicate and read a replica's status (granted on
    /// the primary, so the grant replicates too).
    fn prepare_primary(&self, dir: &Path, _primary: &Connector, deadline: Instant) -> Result<()> {
        let (user, _, _) = MARIADB_LOGIN;
        let sql = format!("GRANT REPLICATION SLAVE, SLAVE MONITOR ON *.* TO '{user}'@'%';");
        root_sql(&socket_in(dir), &sql, deadline, &mut || true)
    }

    fn replica_command(
        &self,
        l: &Launch<'_>,
        _primary: &Connector,
        index: usize,
    ) -> Result<Command> {
        let (mut cmd, _) = self.command(l)?;
        cmd.args(&l.config.args).args([
            format!("--server_id={}", index + 2),
            "--read_only=1".into(),
            "--relay_log=kvlab-relay".into(),
        ]);
        Ok(cmd)
    }

    /// Points the replica at the primary and starts replication, from the
    /// primary's first binlog (the replica's GTID position is empty).
    fn follow(&self, replica: Following<'_>) -> Result<()> {
        let Following {
            dir,
            primary,
            deadline,
            alive,
        } = replica;
        let (user, pass, _) = MARIADB_LOGIN;
        let user = primary.user.as_deref().unwrap_or(user);
        let pass = primary.password.as_deref().unwrap_or(pass);
        let sql = format!(
            "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, MASTER_USER='{user}', MASTER_PASSWORD='{pass}', MASTER_USE_GTID=slave_pos; START SLAVE;",
            primary.addr.port()
        );
        root_sql(&socket_in(dir), &sql, deadline, alive).context("starting replication")
    }

    fn lag(&self, _primary: &Connector, replicas: &[Connector]) -> Result<Vec<ReplicaLag>> {
        replicas.iter().map(replica_lag).collect()
    }
}

/// One replica's `SHOW SLAVE STATUS`.
fn replica_lag(r: &Connector) -> Result<ReplicaLag> {
    let (names, rows) = open(r, Duration::from_secs(5))
        .with_context(|| format!("cannot reach replica {}", r.addr))?
        .query_named("SHOW SLAVE STATUS")?;
    let get = |name: &str| -> Option<String> {
        let i = names.iter().position(|n| n == name)?;
        rows.first()?.get(i).cloned().flatten()
    };
    let (io, sql) = (get("Slave_IO_Running"), get("Slave_SQL_Running"));
    let streaming = io.as_deref() == Some("Yes") && sql.as_deref() == Some("Yes");
    let state = match (streaming, rows.is_empty()) {
        (true, _) => "streaming".to_string(),
        (false, true) => "not a replica".to_string(),
        (false, false) => format!(
            "io={} sql={}",
            io.as_deref().unwrap_or("?"),
            sql.as_deref().unwrap_or("?")
        ),
    };
    Ok(ReplicaLag {
        server: r.addr.to_string(),
        state,
        streaming,
        lag_s: get("Seconds_Behind_Master").and_then(|v| v.parse().ok()),
        bytes_behind: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::MARIADB;
    use super::*;

    #[test]
    fn the_primary_writes_a_row_binlog() {
        let mut c = Config::default();
        MARIADB.primary(&mut c, 1);
        assert_eq!(c.settings["binlog_format"], "ROW");
        assert!(c.args.contains(&"--server_id=1".to_string()));
    }
}
