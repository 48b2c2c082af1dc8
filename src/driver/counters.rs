//! The server's own request counters, as each product reports them (read by the
//! product), taken before and after a run so kvlab's counts can be checked; and
//! the CPU and memory a server reports of itself, for servers kvlab did not
//! start (whose processes it cannot see); what a cache tells about its
//! memory.

use serde::{Deserialize, Serialize};

/// Request counters as the server reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// GET commands executed.
    pub gets: u64,
    /// SET commands executed.
    pub sets: u64,
    /// GETs that found the key.
    pub hits: u64,
    /// GETs that did not.
    pub misses: u64,
    /// Whether these are exact per-command counts (false: derived from table
    /// statistics, e.g. PostgreSQL without pg_stat_statements).
    #[serde(default = "yes")]
    pub exact: bool,
    /// Whether `gets` counts keys read rather than requests (memcached's
    /// `cmd_get` counts each key of a multi-key get).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_key: bool,
}

fn yes() -> bool {
    true
}

impl ServerCounters {
    /// Exact counts of `gets` and `sets` requests, from a server that does
    /// not count hits and misses (a database).
    pub fn requests(gets: u64, sets: u64) -> ServerCounters {
        ServerCounters {
            gets,
            sets,
            hits: 0,
            misses: 0,
            exact: true,
            per_key: false,
        }
    }

    /// `self + other`, field by field.
    pub fn plus(&self, o: &ServerCounters) -> ServerCounters {
        ServerCounters {
            gets: self.gets + o.gets,
            sets: self.sets + o.sets,
            hits: self.hits + o.hits,
            misses: self.misses + o.misses,
            exact: self.exact && o.exact,
            per_key: self.per_key,
        }
    }

    /// `self - before`, field by field.
    pub fn since(&self, before: &ServerCounters) -> ServerCounters {
        ServerCounters {
            gets: self.gets.saturating_sub(before.gets),
            sets: self.sets.saturating_sub(before.sets),
            hits: self.hits.saturating_sub(before.hits),
            misses: self.misses.saturating_sub(before.misses),
            exact: self.exact && before.exact,
            per_key: self.per_key,
        }
    }
}

/// The CPU and memory a server reports of itself (e.g. `INFO cpu`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportedUsage {
    /// User plus system CPU seconds since it started.
    pub cpu_s: f64,
    /// The memory it reports, bytes, if any.
    pub memory_bytes: Option<u64>,
}

/// Where a product's [`ReportedUsage`] comes from, for results and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsageReport {
    /// Where the CPU figure comes from, e.g. `INFO cpu used_cpu_user + used_cpu_sys`.
    pub cpu: &'static str,
    /// What the memory figure is, e.g. `INFO memory used_memory_rss`.
    pub memory: Option<&'static str>,
    /// The memory figure is the process's resident memory (RESP's
    /// `used_memory_rss`): its largest sample stands for the server's peak RSS.
    pub resident: bool,
}

/// What a cache tells about its memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct CacheMemory {
    /// Items held now.
    pub items: u64,
    /// The memory limit, bytes (0: none).
    pub limit: u64,
    /// Items evicted so far.
    pub evictions: u64,
    /// Memory in use, bytes, as the server counts it (Redis `used_memory`,
    /// memcached `bytes`).
    pub used: u64,
}

impl CacheMemory {
    /// `self + other`, field by field (the nodes of a cluster).
    pub fn plus(&self, o: &CacheMemory) -> CacheMemory {
        CacheMemory {
            items: self.items + o.items,
            limit: self.limit + o.limit,
            evictions: self.evictions + o.evictions,
            used: self.used + o.used,
        }
    }
}
