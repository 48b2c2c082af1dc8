//! What each server of a run spent, by role (database, cache, pooler), and
//! their sum: the one place a run's server CPU and memory are read from, so
//! the summary, the JSON, the tables and the sizing show the same figures;
//! and what kvlab itself spent ([`ClientUse`]).

use serde::{Deserialize, Serialize};

/// What kvlab spent measuring: CPU, busy time, memory (flattened into a
/// [`super::RunResult`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ClientUse {
    /// kvlab's CPU seconds (all threads) during the window.
    pub client_cpu_s: f64,
    /// kvlab's CPU µs per finished request.
    pub client_cpu_us_per_request: f64,
    /// Fraction of the window kvlab's worker threads were running or waiting to run.
    pub client_busy: Option<f64>,
    /// kvlab's threads had no idle time: the figures describe the client.
    pub client_saturated: bool,
    /// kvlab's peak resident memory, KiB.
    pub client_peak_rss_kb: u64,
    /// How kvlab issued requests: `io_uring` or `epoll` (`--io`; `None`:
    /// results from before the choice, all epoll).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_io: Option<String>,
    /// Why `--io auto` came to epoll: TLS, or the kernel refused io_uring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_io_why: Option<String>,
    /// Returns from the workers' waits in the window (the timer, replies or
    /// both): what a request costs beyond its own work is mostly these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_wakes: Option<u64>,
    /// `client_wakes` per finished request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_wakes_per_request: Option<f64>,
    /// The workers' context switches in the window, voluntary and not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_context_switches: Option<u64>,
    /// `client_context_switches` per finished request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_context_switches_per_request: Option<f64>,
}

impl ClientUse {
    /// Sets the wake-ups and context switches from their counts over
    /// `requests` finished requests.
    pub fn set_wakes(&mut self, wakes: Option<u64>, switches: Option<u64>, requests: u64) {
        let per = |n: u64| n as f64 / requests.max(1) as f64;
        self.client_wakes = wakes;
        self.client_wakes_per_request = wakes.map(per);
        self.client_context_switches = switches;
        self.client_context_switches_per_request = switches.map(per);
    }
}

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
