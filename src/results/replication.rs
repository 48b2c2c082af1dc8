//! A run against a database with read replicas: what each server (the
//! primary first) was sent and counted, what it cost, how far behind each
//! replica was by its own view, and the stale reads each served.

use serde::{Deserialize, Serialize};

/// Every server of a replicated target.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicationReport {
    /// Where reads went (`--read-from`): `replicas`, `primary` or `any`.
    pub read_from: String,
    /// The primary, then each replica.
    pub servers: Vec<ServerReads>,
}

/// A server's part in a replicated target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// The primary: every write, and reads unless they go to the replicas.
    #[default]
    Primary,
    /// A read replica.
    Replica,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Part::Primary => "primary",
            Part::Replica => "replica",
        })
    }
}

/// One server of a replicated target.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerReads {
    /// Its address.
    pub server: String,
    /// `primary` or `replica`.
    pub role: Part,
    /// Measured reads kvlab sent it.
    pub reads: u64,
    /// Measured writes kvlab sent it.
    pub writes: u64,
    /// GETs its own counters show over warm-up and window (`None`: unread).
    pub counted_gets: Option<u64>,
    /// SETs its own counters show (a replica applies the primary's writes
    /// without counting them as statements).
    pub counted_sets: Option<u64>,
    /// Of the reads it answered, stale ones.
    pub stale_reads: u64,
    /// Stale reads per million of its reads.
    pub stale_per_million: f64,
    /// How far behind its most outdated stale read was, µs.
    pub stale_age_max_us: Option<f64>,
    /// CPU seconds its process spent in the window (managed servers).
    pub cpu_s: Option<f64>,
    /// Its peak resident memory, KiB (managed servers).
    pub peak_rss_kb: Option<u64>,
    /// A replica: its state at the last sample (`streaming`, ...).
    pub state: Option<String>,
    /// A replica: the most it was behind at a sample (every 100 ms) of the
    /// servers' own view (PostgreSQL `replay_lag`, MariaDB
    /// `Seconds_Behind_Master`), seconds.
    pub lag_s_max: Option<f64>,
    /// A replica: the most bytes of the primary's log it had not replayed
    /// at a sample (PostgreSQL).
    pub bytes_behind_max: Option<u64>,
}
