//! Read replicas of a managed PostgreSQL (`--server-opt replicas=N`): the
//! primary streams its WAL (`wal_level=replica`, a walsender and a physical
//! slot per replica, `replication` trusted on loopback as `initdb
//! --auth=trust` writes it); each replica is `pg_basebackup -R -X stream` of
//! the running primary, run as a hot standby. Lag is read on the primary from
//! `pg_stat_replication`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::{PgConn, Postgres, server::pg_binary};
use crate::driver::setup::SetupConn;
use crate::driver::{Config, Connector, Launch, ReplicaLag, Replication, Server};
use crate::system::osuser::{as_user, run_tool};

/// The `application_name` (and slot name) of the replica on `port`, by
/// which the primary's `pg_stat_replication` names it.
fn app_name(port: u16) -> String {
    format!("kvlab_replica_{port}")
}

/// What `pg_hba.conf` needs for replicas to connect (trusted, as the rest).
const HBA_REPLICATION: &str =
    "local replication all trust\nhost replication all 127.0.0.1/32 trust\n";

impl Replication for Postgres {
    fn primary(&self, config: &mut Config, replicas: usize) {
        let senders = (replicas + 2).to_string();
        let slots = (replicas + 2).max(10).to_string();
        for (k, v) in [
            ("wal_level", "replica"),
            ("max_wal_senders", senders.as_str()),
            ("max_replication_slots", slots.as_str()),
            ("hot_standby", "on"),
        ] {
            config.args.extend(["-c".to_string(), format!("{k}={v}")]);
            config.settings.insert(k.into(), v.into());
        }
    }

    /// Trusts replication connections on loopback where `pg_hba.conf` does
    /// not already (`initdb --auth=trust` does).
    fn prepare_primary(&self, dir: &Path, primary: &Connector, _deadline: Instant) -> Result<()> {
        let hba = dir.join("data").join("pg_hba.conf");
        let text = std::fs::read_to_string(&hba)
            .with_context(|| format!("cannot read {}", hba.display()))?;
        let trusted = text.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.get(1) == Some(&"replication") && w.last() == Some(&"trust")
        });
        if !trusted {
            std::fs::write(&hba, text + HBA_REPLICATION)
                .with_context(|| format!("cannot write {}", hba.display()))?;
            PgConn::open(primary, Duration::from_secs(5))?.query("SELECT pg_reload_conf()")?;
        }
        Ok(())
    }

    fn replica_command(
        &self,
        l: &Launch<'_>,
        primary: &Connector,
        _index: usize,
    ) -> Result<Command> {
        let tool = pg_binary("pg_basebackup").context(
            "PostgreSQL's pg_basebackup is not installed; run `make deps` (or apt-get install postgresql)",
        )?;
        let name = app_name(l.port);
        let mut cmd = Command::new(tool);
        cmd.arg("-D")
            .arg(l.data)
            .args(["-R", "-X", "stream", "--checkpoint=fast", "--no-sync"])
            .args(["--create-slot", "--slot", &name])
            .arg("-d")
            .arg(format!(
                "host=127.0.0.1 port={} user={} application_name={name}",
                primary.addr.port(),
                primary.user.as_deref().unwrap_or("postgres"),
            ));
        as_user(&mut cmd, l.run_as);
        run_tool(cmd, "pg_basebackup")?;
        let (mut cmd, _) = self.command(l)?;
        cmd.args(&l.config.args);
        Ok(cmd)
    }

    fn lag(&self, primary: &Connector, replicas: &[Connector]) -> Result<Vec<ReplicaLag>> {
        let rows = PgConn::open(primary, Duration::from_secs(5))?.query(
            "SELECT application_name, state, EXTRACT(EPOCH FROM replay_lag)::float8, \
             pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint FROM pg_stat_replication",
        )?;
        Ok(replicas
            .iter()
            .map(|r| {
                let name = app_name(r.addr.port());
                let row = rows.iter().find(|row| row[0].as_deref() == Some(&name));
                let cell = |i: usize| row.and_then(|row| row.get(i).cloned().flatten());
                let state = cell(1).unwrap_or_else(|| "absent".into());
                let streaming = state == "streaming";
                let lag_s = cell(2)
                    .and_then(|v| v.parse().ok())
                    .or(streaming.then_some(0.0));
                ReplicaLag {
                    server: r.addr.to_string(),
                    state,
                    streaming,
                    lag_s,
                    bytes_behind: cell(3)
                        .and_then(|v| v.parse::<i64>().ok())
                        .map(|b| b.max(0) as u64),
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::POSTGRES;
    use super::*;

    #[test]
    fn the_primary_streams_to_as_many_senders() {
        let mut c = Config::default();
        POSTGRES.primary(&mut c, 3);
        assert_eq!(c.settings["wal_level"], "replica");
        assert_eq!(c.settings["max_wal_senders"], "5");
        assert!(c.args.windows(2).any(|w| w == ["-c", "wal_level=replica"]));
    }
}
