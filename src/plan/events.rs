//! Events during a run (`--event AT:ACTION`): what kvlab does to a server it
//! started, at a second of the measured window — kill it, restart it (after
//! some seconds down), or flush a cache.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// The server an event acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventOn {
    /// The cache of a cache-aside run.
    Cache,
    /// The run's target (the database behind a cache, or the server of a plain run).
    Target,
}

/// What an event does.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum EventAction {
    /// SIGKILL, and the server stays down.
    Kill,
    /// SIGKILL, then the same server started again after `down_s` seconds
    /// (a cache comes back empty, a database with its data).
    Restart {
        /// Seconds the server stays down (0: started again at once).
        down_s: u32,
    },
    /// Every key of the cache dropped (FLUSHALL, flush_all).
    Flush,
    /// kvlab's own keys of the cache deleted (its key prefix only, one by
    /// one): a cache loss emulated on a cache kvlab did not start.
    DropKeys,
    /// SIGKILL to the last primary of a managed cluster with replicas: its
    /// replica takes over once the cluster marks it failed. On a database
    /// with read replicas, to the primary: reads go on, writes fail (no
    /// failover is promised).
    KillPrimary,
    /// SIGKILL to the first read replica of a managed database; it stays
    /// down and reads go on to the others.
    KillReplica,
}

/// One event of a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerEvent {
    /// Seconds into the measured window.
    pub at_s: u32,
    /// The server it acts on.
    pub on: EventOn,
    /// What it does.
    #[serde(flatten)]
    pub action: EventAction,
}

/// The actions `--event` takes, for errors and help.
pub const ACTIONS: &str = "kill-cache, restart-cache[:DOWN], flush-cache, drop-keys-cache (deletes kvlab's own keys: a cache loss emulated on a cache given by URL), kill-target, restart-target[:DOWN] (kill-db, restart-db: the same), kill-primary (a cluster target with replicas, or a database with read replicas), kill-replica (a database with read replicas)";

impl FromStr for ServerEvent {
    type Err = UsageError;

    /// `AT:ACTION[:DOWN]`, e.g. `10:restart-cache:2`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |problem: String| {
            UsageError::bad(
                "--event",
                problem,
                format!(
                    "give SECOND:ACTION[:DOWN_SECONDS], e.g. 10:restart-cache:2; actions: {ACTIONS}"
                ),
            )
        };
        let mut parts = s.trim().splitn(3, ':');
        let at = parts.next().unwrap_or_default();
        let at_s: u32 = at
            .trim_end_matches('s')
            .parse()
            .map_err(|_| bad(format!("'{s}': '{at}' is not a whole second")))?;
        let Some(what) = parts.next() else {
            return Err(bad(format!("'{s}' names no action")));
        };
        let down = parts.next();
        if let Some(action) = match what {
            "kill-primary" => Some(EventAction::KillPrimary),
            "kill-replica" => Some(EventAction::KillReplica),
            _ => None,
        } {
            if down.is_some() {
                return Err(bad(format!("'{s}': a killed {} stays down", &what[5..])));
            }
            return Ok(ServerEvent {
                at_s,
                on: EventOn::Target,
                action,
            });
        }
        let (verb, on) = match what.rsplit_once('-') {
            Some((v, "cache")) => (v, EventOn::Cache),
            Some((v, "target" | "db" | "database" | "server")) => (v, EventOn::Target),
            _ => return Err(bad(format!("'{s}': unknown action '{what}'"))),
        };
        let action = match (verb, down) {
            ("kill", None) => EventAction::Kill,
            ("flush", None) if on == EventOn::Cache => EventAction::Flush,
            ("drop-keys", None) if on == EventOn::Cache => EventAction::DropKeys,
            ("restart", d) => EventAction::Restart {
                down_s: match d {
                    None => 0,
                    Some(d) => d.trim_end_matches('s').parse().map_err(|_| {
                        bad(format!(
                            "'{s}': '{d}' is not a whole number of seconds down"
                        ))
                    })?,
                },
            },
            ("kill" | "flush" | "drop-keys", Some(_)) => {
                return Err(bad(format!("'{s}': only a restart takes seconds down")));
            }
            _ => return Err(bad(format!("'{s}': unknown action '{what}'"))),
        };
        Ok(ServerEvent { at_s, on, action })
    }
}

impl fmt::Display for ServerEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on = match self.on {
            EventOn::Cache => "cache",
            EventOn::Target => "target",
        };
        match self.action {
            EventAction::Kill => write!(f, "{}:kill-{on}", self.at_s),
            EventAction::Flush => write!(f, "{}:flush-{on}", self.at_s),
            EventAction::DropKeys => write!(f, "{}:drop-keys-{on}", self.at_s),
            EventAction::KillPrimary => write!(f, "{}:kill-primary", self.at_s),
            EventAction::KillReplica => write!(f, "{}:kill-replica", self.at_s),
            EventAction::Restart { down_s } => write!(f, "{}:restart-{on}:{down_s}", self.at_s),
        }
    }
}

impl ServerEvent {
    /// Checks the event against the run: a cache event needs a cache, every
    /// event a server kvlab starts, and the event must fall in the window.
    pub fn check(
        &self,
        plan: &crate::plan::RunPlan,
        window_s: Option<f64>,
    ) -> Result<(), UsageError> {
        let bad = |problem: String, fix: &str| UsageError::bad("--event", problem, fix);
        let spec = match (self.on, &plan.cache) {
            (EventOn::Cache, None) => {
                return Err(bad(
                    format!("{self}: this run has no cache"),
                    "add --cache, or act on the target (kill-target, restart-target)",
                ));
            }
            (EventOn::Cache, Some(c)) => &c.cache,
            (EventOn::Target, _) => &plan.target,
        };
        if spec.external.is_some() && self.action != EventAction::DropKeys {
            return Err(bad(
                format!("{self}: kvlab acts only on servers it started, and this one is a URL"),
                &format!(
                    "use a managed server (e.g. --target {}) or drop --event",
                    crate::products::DEFAULT_TARGET
                ),
            ));
        }
        let sharded = spec.kind.product().facts().sharded;
        let replicated = self.on == EventOn::Target && plan.replicas() > 0;
        if self.action == EventAction::KillReplica && !replicated {
            return Err(bad(
                format!("{self}: this target has no read replicas"),
                "use --target postgres --server-opt replicas=N (or mariadb)",
            ));
        }
        if self.action == EventAction::KillPrimary && !sharded && replicated {
            // The primary of a database with read replicas: reads go on.
        } else if self.action == EventAction::KillPrimary {
            let opt = |k: &str| spec.server_opts.get(k).map(String::as_str);
            let shards = opt("shards").map_or(Some(3), |v| v.parse::<u32>().ok());
            if !sharded
                || plan.cache.is_some()
                || shards.is_none_or(|n| n < 3)
                || opt("replicas") != Some("1")
            {
                return Err(bad(
                    format!(
                        "{self}: a primary's replica takes over only in a managed cluster target of 3 or more primaries with replicas"
                    ),
                    &format!(
                        "use e.g. --target {} --server-opt replicas=1 (and a shorter --server-opt cluster-node-timeout=MS for a quick failover)",
                        a_cluster()
                    ),
                ));
            }
        } else if sharded {
            return Err(bad(
                format!(
                    "{self}: on a cluster kvlab only kills a primary so that its replica takes over"
                ),
                "use kill-primary with --server-opt replicas=1, or a single server",
            ));
        }
        if plan.load.shard.is_some() {
            return Err(bad(
                format!("{self}: a sharded run's clients cannot share one event"),
                "drop --event or --shard",
            ));
        }
        if let Some(w) = window_s
            && f64::from(self.at_s) >= w
        {
            return Err(bad(
                format!("{self}: second {} is past the {w} s window", self.at_s),
                "give a second inside --duration",
            ));
        }
        Ok(())
    }
}

/// The registry's first managed cluster, for messages (`redis-cluster`).
fn a_cluster() -> &'static str {
    crate::products::kinds(true)
        .find(|k| k.product().facts().sharded)
        .map_or("a cluster", crate::products::TargetKind::name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_parse_and_print_back() {
        for (text, want) in [
            ("10:kill-cache", "10:kill-cache"),
            ("5s:restart-cache:2", "5:restart-cache:2"),
            ("3:restart-db", "3:restart-target:0"),
            ("0:flush-cache", "0:flush-cache"),
            ("4:drop-keys-cache", "4:drop-keys-cache"),
            ("7:kill-target", "7:kill-target"),
            ("2:kill-primary", "2:kill-primary"),
        ] {
            let e: ServerEvent = text.parse().unwrap();
            assert_eq!(e.to_string(), want);
            assert_eq!(e.to_string().parse::<ServerEvent>().unwrap(), e);
        }
        for bad in [
            "x:kill-cache",
            "3",
            "3:explode-cache",
            "3:flush-db",
            "3:kill-cache:2",
            "3:drop-keys-cache:2",
            "3:drop-keys-target",
            "3:restart-cache:x",
            "3:kill-primary:2",
        ] {
            let e = bad.parse::<ServerEvent>().unwrap_err().to_string();
            assert!(e.contains("--event"), "{bad}: {e}");
        }
    }
}
