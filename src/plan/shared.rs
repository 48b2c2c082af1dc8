//! What kvlab may do to a server it did not start (a team's own): leave its
//! data behind, make it evict the team's keys, and how hard it may drive it.
//! A server kvlab started is its own and none of this applies there.

use serde::{Deserialize, Serialize};

use crate::error::{UsageError, positive};

/// The bounds on a server kvlab did not start (`--keep-data`,
/// `--allow-evictions`, `--max-rps`, `--max-connections`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Shared {
    /// Leave kvlab's keys and table in it at the end (default: removed).
    #[serde(default)]
    pub keep_data: bool,
    /// Let kvlab's writes make a full cache evict keys that are not kvlab's
    /// (default: refused before the first write).
    #[serde(default)]
    pub allow_evictions: bool,
    /// The most requests per second kvlab sends it; a capacity found there is
    /// a lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rps: Option<f64>,
    /// The most connections kvlab opens to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<usize>,
}

impl Shared {
    /// Checks the caps: positive where given.
    pub fn check(&self) -> Result<(), UsageError> {
        if let Some(r) = self.max_rps {
            positive(
                "--max-rps",
                r,
                "give requests per second, e.g. --max-rps 2000",
            )?;
        }
        if self.max_connections == Some(0) {
            return Err(UsageError::bad(
                "--max-connections",
                "0 connections",
                "give at least 1, e.g. --max-connections 8",
            ));
        }
        Ok(())
    }

    /// `connections`, held to `--max-connections`.
    pub fn connections(&self, connections: usize) -> usize {
        self.max_connections
            .map_or(connections, |m| connections.min(m))
    }

    /// Whether any cap is given.
    pub fn capped(&self) -> bool {
        self.max_rps.is_some() || self.max_connections.is_some()
    }
}

impl super::RunPlan {
    /// The servers of this plan kvlab did not start, by flag, as their
    /// URLs (no password): the target's and the cache's.
    pub fn foreign(&self) -> Vec<(&'static str, String)> {
        let cache = self.cache.as_ref().map(|c| &c.cache);
        [("--target", Some(&self.target)), ("--cache", cache)]
            .into_iter()
            .filter_map(|(f, t)| {
                let t = t?;
                Some((f, t.external.as_ref()?.display_for(t.kind.product())))
            })
            .collect()
    }

    /// Holds the plan to `--max-connections` and `--max-rps` where it drives
    /// a server kvlab did not start: connections (and threads) at most the
    /// cap, a closed loop paced at the rate cap, a higher `--rate` refused.
    pub fn hold_to_shared(&mut self) -> Result<(), UsageError> {
        if self.foreign().is_empty() {
            return Ok(());
        }
        let s = self.shared;
        self.load.connections = s.connections(self.load.connections);
        self.load.threads = self.load.threads.min(self.load.connections);
        match (self.load.rate, s.max_rps) {
            (Some(r), Some(m)) if r > m => Err(UsageError::bad(
                "--rate",
                format!("{r} req/s is more than --max-rps {m} for a server kvlab did not start"),
                format!("give --rate {m} or less, or raise --max-rps"),
            )),
            (None, Some(m)) => {
                self.load.rate = Some(m);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
