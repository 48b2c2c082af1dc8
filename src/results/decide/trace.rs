//! What a decision took from a trace (`kvlab decide --trace`): the file, its
//! keys and reads, the skew fitted, the policy and the TTLs its curve was
//! simulated with.

use serde::{Deserialize, Serialize};

/// What a decision took from a trace, and how its curve was computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// The trace file, as given.
    pub file: String,
    /// Its lines.
    pub lines: u64,
    /// Distinct keys of its reads and writes.
    pub distinct_keys: u64,
    /// Reads its curve counts (after the first fifth, which warms it).
    pub reads_counted: u64,
    /// The share of keys the curve followed: 1 exact LRU stack distances,
    /// less with SHARDS sampling.
    pub sample_rate: f64,
    /// The Zipf exponent fitted to its key popularity, and the fit's R².
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf_theta: Option<f64>,
    /// R² of that fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf_r2: Option<f64>,
    /// What the load took from it (`keys`, `ratio`, `value sizes`,
    /// `key distribution`): the rest came from flags given beside it.
    pub taken: Vec<String>,
    /// The eviction policy its curve was simulated for, with its parameters
    /// (`None`: exact LRU, from stack distances).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The TTLs its curve was simulated with: its lines that carry one
    /// (its TTL column: each key lives its last) and the cache's own
    /// (`--cache-ttl`, seconds) for the keys without (`None`: no TTL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<TraceTtl>,
}

/// The TTLs a trace's curve was simulated with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceTtl {
    /// Lines of the trace with a TTL.
    pub lines_with_ttl: u64,
    /// The cache's TTL for the keys without one, seconds (0: none).
    pub cache_ttl_s: u32,
}
