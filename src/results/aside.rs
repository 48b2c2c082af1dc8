//! What a cache-aside run measured beyond the end-to-end figures: the cache's
//! hits and misses, each step, and the cache's memory against the data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::Percentiles;
use super::{CounterCheck, TargetInfo};
use crate::plan::CacheStart;

/// What a cache-aside run measured beyond the end-to-end figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AsideReport {
    /// The cache in front of the database.
    pub cache: TargetInfo,
    /// `invalidate` or `update`.
    pub write_policy: String,
    /// The protocol the cache spoke, where it has several (memcached: `text`
    /// or `meta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_query_mode: Option<String>,
    /// Expiry of cache entries, seconds (0: never).
    pub ttl_s: u32,
    /// Reads the cache answered (with a near cache in front, its hits too:
    /// `near_cache.hits` of them never reached this cache).
    pub cache_hits: u64,
    /// Reads the cache did not have (each read the database).
    pub cache_misses: u64,
    /// Reads that went around the cache while it was unreachable (each read
    /// the database).
    #[serde(default)]
    pub cache_bypassed: u64,
    /// The hit ratio of all reads ([`hit_ratio`]): cache_hits / (cache_hits +
    /// cache_misses + cache_bypassed).
    pub hit_ratio: f64,
    /// With the `invalidate` policy, the most the cache could hit with this
    /// run's writes: the share of reads whose previous access to their key
    /// was a read ([`super::Totals::hit_ratio_ceiling`]; `None`: versions not
    /// tracked, or writes update the cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_ratio_ceiling: Option<f64>,
    /// Database reads the cache saved (its hits), per second of the window.
    pub db_reads_saved_per_s: f64,
    /// Database reads made (misses, and reads around an unreachable cache),
    /// per second.
    pub db_reads_per_s: f64,
    /// Each step: replies, errors and latency from send to reply.
    pub legs: BTreeMap<String, LegReport>,
    /// The cache server's CPU seconds in the window: from /proc for a cache
    /// kvlab started, else as the cache reports it (`INFO cpu`, memcached's
    /// `stats` rusage); `None`: not known.
    pub cache_cpu_s: Option<f64>,
    /// The database server's CPU seconds in the window, the same way.
    pub db_cpu_s: Option<f64>,
    /// The cache's own counters beside kvlab's cache steps.
    pub cache_counters: Option<CounterCheck>,
    /// What the set-up, rather than the cache, decided about these figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the cache held when the load started: `warm`, `cold` or `settle`.
    #[serde(default)]
    pub start: CacheStart,
    /// The cache's memory against the data, from its own counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set: Option<WorkingSet>,
}

/// The one hit ratio kvlab shows for cache-aside, wherever it shows it (the
/// progress line, the summary, the JSON, the timeline, the verdict and
/// tables, events): hits over *all* reads — hits, misses, and reads that went
/// around an unreachable cache — so it is the share of reads the cache spared
/// the database. `None` when nothing was read.
pub fn hit_ratio(hits: u64, misses: u64, bypassed: u64) -> Option<f64> {
    let reads = hits + misses + bypassed;
    (reads > 0).then(|| hits as f64 / reads as f64)
}

/// How [`hit_ratio`] is named where it is shown.
pub const HIT_RATIO_NAME: &str = "hit ratio of all reads";

/// How much of the data the cache held, and what it evicted, by its own counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkingSet {
    /// The data: keys × value size, bytes.
    pub data_bytes: u64,
    /// The cache's memory limit, bytes (0: none).
    pub memory_limit_bytes: u64,
    /// The cache's memory in use at the end of the window, bytes.
    pub memory_used_bytes: u64,
    /// Items it held at the end of the window.
    pub items: u64,
    /// Keys it evicted in the window.
    pub evictions: u64,
    /// `settle`: seconds the workload warmed the cache before the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_after_s: Option<f64>,
    /// `settle`: the hit ratio of each second of that warming.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settle_curve: Vec<f64>,
    /// `settle`: the seconds of each mean compared, the last against the
    /// ones before, to say its hit ratio held still (as long as the measured
    /// run, 1 to 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_window_s: Option<usize>,
    /// `settle`: how the cache reached its steady state before the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<Steady>,
    /// `settle`: keys kvlab wrote into the cache, coldest first, before the
    /// workload settled it (a cache smaller than the data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filled_keys: Option<u64>,
    /// `settle`: keys the cache evicted while the workload settled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_evictions: Option<u64>,
}

/// How a settling cache reached its steady state before the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Steady {
    /// It holds every key: loaded before the window, as a warm start.
    HoldsTheData,
    /// Full and evicting: kvlab filled it in rising popularity until it
    /// evicted, then the workload turned it over (as many evictions as it
    /// holds items) and its hit ratio held still.
    FilledByKvlab,
    /// Full and evicting by the workload's own misses, its hit ratio still.
    FilledByWorkload,
    /// Not full and evicting, or its hit ratio still moving, when the
    /// settling's time ran out: measured anyway, and said.
    NotReached,
}

impl Steady {
    /// How it is said.
    pub fn said(self) -> &'static str {
        match self {
            Steady::HoldsTheData => "the cache holds the data: loaded first (a warm start)",
            Steady::FilledByKvlab => {
                "filled by kvlab coldest key first until it evicted, then turned over by the workload"
            }
            Steady::FilledByWorkload => "filled by the workload's misses until it evicted",
            Steady::NotReached => "steady state not reached",
        }
    }
}

/// One step of cache-aside requests.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LegReport {
    /// Replies received.
    pub replies: u64,
    /// Failed steps: error replies, and steps that got no reply (timeout,
    /// disconnect).
    pub errors: u64,
    /// Latency from the step's send to its reply, µs.
    pub latency_us: Percentiles,
    /// The same as a histogram (ns, HdrHistogram V2 deflate, base64), for merging.
    #[serde(default)]
    pub histogram: Option<String>,
}
