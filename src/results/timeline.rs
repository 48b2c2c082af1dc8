//! How a run went over time: one [`Second`] of the timeline and how well an
//! open-loop schedule was kept ([`ScheduleReport`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One second of the timeline.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Second {
    /// Seconds since measuring began.
    pub second: i64,
    /// Requests that finished in this second.
    pub requests: u64,
    /// Errors among them.
    pub errors: u64,
    /// Timeouts among the errors.
    pub timeouts: u64,
    /// Misses.
    pub misses: u64,
    /// 50th percentile latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// 99.9th percentile latency, µs (0 in results from before it was kept).
    #[serde(default)]
    pub p999_us: f64,
    /// The second's latency histogram (HdrHistogram V2 deflate, base64, ns),
    /// kept in the results of a sharded run so their timelines merge exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    /// Errors by kind (only the kinds that occurred).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_kinds: BTreeMap<String, u64>,
    /// Cache-aside: what the cache did in this second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSecond>,
    /// What kvlab did to a server during this second (`--event`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
}

/// One second of a cache-aside run, from kvlab's side and the cache's own.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CacheSecond {
    /// Reads the cache answered with a value.
    pub hits: u64,
    /// Reads the cache did not have.
    pub misses: u64,
    /// Reads that went around an unreachable cache (to the database).
    pub bypassed: u64,
    /// Reads the database answered (the misses and the bypassed reads).
    pub db_reads: u64,
    /// Keys the cache evicted in this second (its own counter; none when it
    /// could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evictions: Option<u64>,
    /// The cache's memory in use at the end of the second, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Items the cache held at the end of the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
}

impl CacheSecond {
    /// Hits over lookups (bypassed reads count as lookups that missed);
    /// `None` when nothing was looked up.
    pub fn hit_ratio(&self) -> Option<f64> {
        let n = self.hits + self.misses + self.bypassed;
        (n > 0).then(|| self.hits as f64 / n as f64)
    }
}

/// How well an open-loop run kept its schedule.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ScheduleReport {
    /// Requested total rate (requests per second).
    pub target_rps: f64,
    /// Requests sent more than 1 ms after their intended time.
    pub late_requests: u64,
    /// Largest gap between a request's intended and actual send, in ms.
    pub max_lag_ms: f64,
    /// Requests the schedule called for before the end that were never sent.
    pub unsent: u64,
    /// The most a request was sent before its intended time, in µs, to leave
    /// with a batch (it is then timed from its actual send).
    #[serde(default)]
    pub batch_window_us: f64,
    /// Trace replay: writes not sent because their key had a write in flight
    /// (kvlab keeps one write per key in flight to judge stale reads).
    #[serde(default, skip_serializing_if = "crate::results::stats::is_zero")]
    pub overlapping_writes: u64,
    /// Set when the run did not carry the offered rate: the one line that says
    /// so (the run is then not valid: its throughput is not the target's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_sustained: Option<String>,
}

impl ScheduleReport {
    /// Adds another worker's or client's report (rates are equal; counts add;
    /// lags take the max; the first shortfall stands).
    pub fn merge(&mut self, o: &ScheduleReport) {
        self.target_rps = self.target_rps.max(o.target_rps);
        self.late_requests += o.late_requests;
        self.max_lag_ms = self.max_lag_ms.max(o.max_lag_ms);
        self.unsent += o.unsent;
        self.overlapping_writes += o.overlapping_writes;
        self.batch_window_us = self.batch_window_us.max(o.batch_window_us);
        if self.not_sustained.is_none() {
            self.not_sustained.clone_from(&o.not_sustained);
        }
    }
}
