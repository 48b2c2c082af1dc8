//! What each server of a run spent, by role (database, cache, pooler), and
//! their sum: the one place a run's server CPU and memory are read from, so
//! the summary, the JSON, the tables and the sizing show the same figures.

use serde::{Deserialize, Serialize};

/// The part a server played in a run.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A database: the target of a cache-aside run, or a database target.
    #[default]
    Database,
    /// A cache: the cache of a cache-aside run, or a cache target.
    Cache,
    /// The pooler kvlab ran in front of the database.
    Pooler,
    /// A read replica of the database.
    Replica,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Role {
    /// How it reads.
    pub fn name(self) -> &'static str {
        match self {
            Role::Database => "database",
            Role::Cache => "cache",
            Role::Pooler => "pooler",
            Role::Replica => "replica",
        }
    }
}

/// What one server spent over the measured window.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ServerUse {
    /// Its part in the run.
    pub role: Role,
    /// The product (`postgres`, `redis`, `pgbouncer`, …).
    pub product: String,
    /// CPU seconds in the window (`None`: not known).
    pub cpu_s: Option<f64>,
    /// CPU µs per finished request of the run (end to end, not its own).
    pub cpu_us_per_request: Option<f64>,
    /// Peak resident memory, KiB (`None`: not known).
    pub peak_rss_kb: Option<u64>,
    /// Where `cpu_s` comes from when not /proc: the server's own report
    /// (e.g. `INFO cpu used_cpu_user + used_cpu_sys`) for a server kvlab
    /// did not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_source: Option<String>,
    /// Where `peak_rss_kb` comes from when not /proc: the largest resident
    /// memory a server kvlab did not start reported (e.g. `INFO memory
    /// used_memory_rss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_source: Option<String>,
}

impl ServerUse {
    /// A server's use, its CPU per request over the run's `requests`.
    pub fn new(
        role: Role,
        product: &str,
        cpu_s: Option<f64>,
        peak_rss_kb: Option<u64>,
        requests: u64,
    ) -> ServerUse {
        ServerUse {
            role,
            product: product.to_string(),
            cpu_s,
            cpu_us_per_request: cpu_s
                .filter(|_| requests > 0)
                .map(|c| c * 1e6 / requests as f64),
            peak_rss_kb,
            cpu_source: None,
            rss_source: None,
        }
    }

    /// The same, its figures from the server's own report where a source
    /// is given (`None`: from /proc, or not known).
    pub fn reported(mut self, cpu: Option<&str>, rss: Option<&str>) -> ServerUse {
        self.cpu_source = cpu.map(str::to_string);
        self.rss_source = rss.map(str::to_string);
        self
    }
}

/// The sum of every server's CPU seconds; `None` unless each one is known
/// (a sum missing a server would be read as the whole).
pub fn total_cpu_s(servers: &[ServerUse]) -> Option<f64> {
    servers.iter().map(|s| s.cpu_s).sum()
}

/// The sum of every server's peak memory, KiB (each server's own peak); `None`
/// unless each one is known.
pub fn total_peak_rss_kb(servers: &[ServerUse]) -> Option<u64> {
    servers.iter().map(|s| s.peak_rss_kb).sum()
}

/// The server in `role`, if the run had one.
pub fn of(servers: &[ServerUse], role: Role) -> Option<&ServerUse> {
    servers.iter().find(|s| s.role == role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sum_is_known_only_when_every_server_is() {
        let db = ServerUse::new(Role::Database, "postgres", Some(1.0), Some(200), 1000);
        let cache = ServerUse::new(Role::Cache, "redis", Some(0.5), Some(300), 1000);
        assert_eq!(db.cpu_us_per_request, Some(1000.0));
        let both = [db.clone(), cache];
        assert_eq!(total_cpu_s(&both), Some(1.5));
        assert_eq!(total_peak_rss_kb(&both), Some(500));
        let unknown = ServerUse::new(Role::Cache, "redis", None, None, 1000);
        assert_eq!(total_cpu_s(&[db.clone(), unknown.clone()]), None);
        assert_eq!(total_peak_rss_kb(&[db, unknown]), None);
        let json = serde_json::to_string(&both[1]).unwrap();
        assert!(json.contains("\"role\":\"cache\""), "{json}");
    }
}
