//! Where reads go on a database with read replicas: `--read-from` and the
//! replicas of a server kvlab did not start (`--read-replica URL`). Writes
//! always go to the primary.

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// Which servers serve reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadFrom {
    /// The primary alone (as without replicas).
    Primary,
    /// The replicas, in turn (the primary serves only writes).
    #[default]
    Replicas,
    /// The primary and the replicas, in turn.
    Any,
}

impl std::str::FromStr for ReadFrom {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, UsageError> {
        match s.trim() {
            "primary" => Ok(ReadFrom::Primary),
            "replicas" => Ok(ReadFrom::Replicas),
            "any" => Ok(ReadFrom::Any),
            other => Err(UsageError::bad(
                "--read-from",
                format!("{other:?} is no choice"),
                "give primary, replicas or any",
            )),
        }
    }
}

impl ReadFrom {
    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            ReadFrom::Primary => "primary",
            ReadFrom::Replicas => "replicas",
            ReadFrom::Any => "any",
        }
    }

    /// The servers reads go to among the primary (0) and `replicas` replicas
    /// (1..=replicas).
    pub fn servers(self, replicas: usize) -> std::ops::Range<usize> {
        match (self, replicas) {
            (_, 0) | (ReadFrom::Primary, _) => 0..1,
            (ReadFrom::Replicas, n) => 1..n + 1,
            (ReadFrom::Any, n) => 0..n + 1,
        }
    }
}

impl crate::plan::RunPlan {
    /// The read replicas of this run's target: managed ones (`--server-opt
    /// replicas=N`) or given by URL (`--read-replica`).
    pub fn replicas(&self) -> usize {
        let managed = crate::driver::replication::replicas_of(
            self.target.kind.product(),
            &self.target.server_opts,
        )
        .unwrap_or(0);
        managed + self.target.read_replicas.len()
    }

    /// Checks `--read-from` and `--read-replica` against the target.
    pub fn check_reads(&self) -> Result<(), UsageError> {
        let t = &self.target;
        if !t.read_replicas.is_empty() {
            if t.external.is_none() {
                return Err(UsageError::conflict(
                    "--read-replica",
                    "names a replica of a server kvlab did not start",
                    "give --target as a URL too, or drop --read-replica and use --server-opt replicas=N",
                ));
            }
            if t.kind.product().server().replication().is_none() {
                return Err(UsageError::bad(
                    "--read-replica",
                    format!("{} has no read replicas kvlab reads from", t.kind.name()),
                    "use it with a postgres or mariadb target",
                ));
            }
        }
        if self.replicas() > 0 && self.cache.is_some() {
            return Err(UsageError::conflict(
                "--read-from",
                "a cache-aside run's database reads from its primary",
                "drop --cache, or the replicas",
            ));
        }
        let Some(from) = t.read_from else {
            return Ok(());
        };
        if from != ReadFrom::Primary && self.replicas() == 0 {
            return Err(UsageError::bad(
                "--read-from",
                format!("{} needs read replicas", from.name()),
                "add --server-opt replicas=N (a managed server) or --read-replica URL",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_go_to_the_servers_chosen() {
        assert_eq!(ReadFrom::Replicas.servers(2), 1..3);
        assert_eq!(ReadFrom::Any.servers(2), 0..3);
        assert_eq!(ReadFrom::Primary.servers(2), 0..1);
        assert_eq!(ReadFrom::Replicas.servers(0), 0..1);
        assert!("nearest".parse::<ReadFrom>().is_err());
    }
}
