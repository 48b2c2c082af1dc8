//! The groups of a [`super::RunResult`]'s figures that serde flattens into
//! its one JSON object: the window's counts, latency, what the servers spent,
//! the host, and the histograms.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::Percentiles;
use super::timeline::ScheduleReport;
use super::{host_load, study, usage};

/// What the measured window counted: its length, throughput, requests by
/// kind and outcome, errors, bytes (flattened into a [`super::RunResult`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Totals {
    /// Length of the measured window, seconds.
    pub duration_s: f64,
    /// Successful requests (hits, misses, stored) per second of the window.
    pub throughput_rps: f64,
    /// Measured requests that finished, any outcome.
    pub requests: u64,
    /// GETs among them.
    pub gets: u64,
    /// SETs among them.
    pub sets: u64,
    /// GETs that returned the right value.
    pub hits: u64,
    /// GETs that found nothing.
    pub misses: u64,
    /// Batch reads (`--batch`): keys the GETs asked for (`hits` and `misses`
    /// count keys; `gets`, requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_read: Option<u64>,
    /// Failed requests (all kinds).
    pub errors: u64,
    /// Failed requests by kind.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Bytes of the values read (hits) and written (stored) in the window.
    #[serde(default)]
    pub value_bytes: u64,
    /// With `--ttl`: misses of keys read after their TTL ran out (`None`:
    /// no TTL, or kvlab cannot tell when the keys were written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_misses: Option<u64>,
    /// Keys read whose previous access to their key (by any client, warm-up
    /// included) was a read; `None` when versions were not tracked. A cache
    /// that drops a key on every write hits at most these: see
    /// [`Totals::hit_ratio_ceiling`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads_after_read: Option<u64>,
    /// With `--hot-keys`: the reads its burst sent to the hot keys, and in a
    /// cluster the node serving them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_reads: Option<(u64, Option<String>)>,
}

impl Totals {
    /// The most a cache invalidated on every write could hit of this run's
    /// reads: `reads_after_read` over the keys read.
    pub fn hit_ratio_ceiling(&self) -> Option<f64> {
        let reads = self.keys_read.unwrap_or(self.gets);
        self.reads_after_read
            .filter(|_| reads > 0)
            .map(|n| (n as f64 / reads as f64).min(1.0))
    }
}

/// How long the measured requests took, and how a paced run kept its
/// schedule (flattened into a [`super::RunResult`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Latency {
    /// Start time latency is measured from: `intended` (paced) or `actual`.
    pub latency_start: String,
    /// Latency percentiles of successful requests, µs.
    pub latency_us: Percentiles,
    /// Service time from the actual send, µs (paced runs only).
    pub service_time_us: Option<Percentiles>,
    /// How well a paced run kept its schedule.
    pub schedule: Option<ScheduleReport>,
}

/// What the servers spent: CPU and memory, together and by role (flattened
/// into a [`super::RunResult`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerFigures {
    /// Server CPU seconds during the window: every server of the run
    /// together (database, cache, pooler: each in `servers`); `None` unless
    /// each one's is known.
    pub server_cpu_s: Option<f64>,
    /// Server CPU µs per finished request (`server_cpu_s` per request).
    pub server_cpu_us_per_request: Option<f64>,
    /// Server peak resident memory, KiB: each server's own peak, summed over
    /// every server of the run (each in `servers`); `None` unless each one's
    /// is known.
    pub server_peak_rss_kb: Option<u64>,
    /// What each server spent, by role (database, cache, pooler); the sums
    /// are `server_cpu_s` and `server_peak_rss_kb`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<usage::ServerUse>,
    /// Where `server_cpu_s` comes from: `proc` (a server kvlab started, from
    /// /proc) or the server's own report (e.g. `INFO cpu used_cpu_user + …`); `null` when
    /// neither is available (a server kvlab did not start that reports none).
    #[serde(default)]
    pub server_cpu_source: Option<String>,
    /// The memory a server kvlab did not start reports of itself at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_reported_memory: Option<ReportedMemory>,
}

/// Memory as a server reports it (servers kvlab did not start).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ReportedMemory {
    /// Bytes.
    pub bytes: u64,
    /// What the figure is, e.g. `INFO memory used_memory_rss`.
    pub source: String,
}

/// The machine kvlab ran on and what makes its figures suspect (flattened
/// into a [`super::RunResult`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Host {
    /// The machine kvlab ran on (CPU, governor, huge pages, last-level cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<study::Machine>,
    /// What about the machine makes the figures suspect (a governor other
    /// than `performance`, a data set that fits in the CPU's cache).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspect: Vec<String>,
    /// Whether kvlab and the server shared this machine's cores (a managed
    /// server, or one on loopback); `None`: unknown (a server elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_cores: Option<bool>,
    /// The host's load while it ran: what other processes took, steal, the
    /// load average (`kvlab compare` weighs a host busier on one side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<host_load::HostLoad>,
}

/// The serialized HDR histograms (flattened into a [`super::RunResult`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Histograms {
    /// Latency histogram (HdrHistogram V2 deflate, base64, nanoseconds).
    pub histogram: String,
    /// Service-time histogram, same encoding (paced runs only).
    pub service_histogram: Option<String>,
}
