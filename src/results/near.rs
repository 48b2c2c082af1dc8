//! A near cache's report (`--near-cache`): what the client threads' caches
//! answered, held and heard, and what they left the server.

use serde::{Deserialize, Serialize};

use crate::plan::near::NearCache;

/// What the near caches of a run did, every client thread's added.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NearReport {
    /// The near cache as asked (`--near-cache`, `--near-invalidation`).
    pub setting: Option<NearCache>,
    /// The setting in words.
    pub described: String,
    /// Client threads, each with its own near cache.
    pub threads: usize,
    /// Measured reads the near caches answered (never sent).
    pub hits: u64,
    /// Measured reads they did not hold (sent to the server).
    pub misses: u64,
    /// Hits over the measured reads.
    pub hit_ratio: f64,
    /// Of the misses, entries found past their TTL.
    pub expired: u64,
    /// Entries dropped for room.
    pub evictions: u64,
    /// Invalidation messages the server sent.
    pub invalidation_messages: u64,
    /// Keys those messages named.
    pub keys_invalidated: u64,
    /// Of those, entries a near cache held and dropped.
    pub entries_invalidated: u64,
    /// Messages that dropped everything (the server flushed).
    pub flushes: u64,
    /// Invalidations of a held entry that came before the write's
    /// acknowledgement reached its writer.
    pub before_ack: u64,
    /// Invalidations whose delay was measured: from the acknowledgement of
    /// the write that outdated a held entry to the entry's invalidation.
    pub delays_measured: u64,
    /// Their median, µs.
    pub delay_p50_us: Option<f64>,
    /// Their 99th percentile, µs.
    pub delay_p99_us: Option<f64>,
    /// The longest, µs.
    pub delay_max_us: Option<f64>,
    /// The most bytes the near caches held at once, summed over threads
    /// (values, keys and kvlab's per-entry overhead).
    pub peak_bytes: u64,
    /// The most entries they held at once, summed over threads.
    pub peak_items: u64,
    /// Reads sent to the server over warm-up and window (for its counters).
    pub hits_all: u64,
}
