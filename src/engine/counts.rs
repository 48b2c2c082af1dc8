//! What a worker counts beside its requests, as plain data it hands over:
//! a near cache's hits, invalidations and their delay ([`NearCounts`]), and
//! what each server of a replicated target was sent ([`NodeCounts`]).

use hdrhistogram::Histogram;

/// What one worker's near cache counted (warm-up and window apart where a
/// report needs it).
#[derive(Clone, Debug)]
pub struct NearCounts {
    /// Reads it answered, measured window.
    pub hits: u64,
    /// Reads it did not hold (sent on), measured window.
    pub misses: u64,
    /// Reads it answered over warm-up and window (never sent).
    pub hits_all: u64,
    /// Of the misses, entries found expired (TTL).
    pub expired: u64,
    /// Entries dropped for room.
    pub evictions: u64,
    /// Invalidation messages the server sent.
    pub messages: u64,
    /// Keys those messages named.
    pub keys_invalidated: u64,
    /// Of those, entries held and dropped.
    pub entries_invalidated: u64,
    /// Messages that dropped everything (the server flushed).
    pub flushes: u64,
    /// Invalidations that came before the write's acknowledgement reached
    /// its writer (no delay to measure: under 0).
    pub before_ack: u64,
    /// Delay from a write's acknowledgement to the invalidation of an entry
    /// it outdated, µs.
    pub delay_us: Histogram<u64>,
    /// The most bytes and entries held at once.
    pub peak_bytes: u64,
    /// The most entries held at once.
    pub peak_items: u64,
    /// The near cache as asked, and the workers whose counts these are.
    pub setting: Option<crate::plan::near::NearCache>,
    pub threads: usize,
}

impl Default for NearCounts {
    fn default() -> Self {
        NearCounts {
            hits: 0,
            misses: 0,
            hits_all: 0,
            expired: 0,
            evictions: 0,
            messages: 0,
            keys_invalidated: 0,
            entries_invalidated: 0,
            flushes: 0,
            before_ack: 0,
            delay_us: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
            peak_bytes: 0,
            peak_items: 0,
            setting: None,
            threads: 0,
        }
    }
}

impl NearCounts {
    /// Adds another worker's counts (peaks add: each thread holds its own).
    pub fn add(&mut self, o: &NearCounts) {
        self.hits += o.hits;
        self.misses += o.misses;
        self.hits_all += o.hits_all;
        self.expired += o.expired;
        self.evictions += o.evictions;
        self.messages += o.messages;
        self.keys_invalidated += o.keys_invalidated;
        self.entries_invalidated += o.entries_invalidated;
        self.flushes += o.flushes;
        self.before_ack += o.before_ack;
        let _ = self.delay_us.add(&o.delay_us);
        self.peak_bytes += o.peak_bytes;
        self.peak_items += o.peak_items;
        self.setting = self.setting.or(o.setting);
        self.threads += o.threads;
    }
}

/// What one server of a target with read replicas was sent (measured).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCounts {
    /// Reads it answered.
    pub reads: u64,
    /// Writes it answered.
    pub writes: u64,
    /// Of the reads, stale ones.
    pub stale: u64,
    /// How far behind the most outdated of them was, ns.
    pub stale_age_max_ns: u64,
}

impl NodeCounts {
    /// Adds another worker's counts.
    pub fn add(&mut self, o: &NodeCounts) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.stale += o.stale;
        self.stale_age_max_ns = self.stale_age_max_ns.max(o.stale_age_max_ns);
    }
}
