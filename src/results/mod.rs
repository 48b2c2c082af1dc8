//! The result of one run as data: one serde struct (its figures in groups
//! flattened into one JSON object), written as JSON with `--json`, embedding the resolved plan, the target and its version, figures,
//! timeline and the serialized HDR histograms (so reports can merge and re-cut).

pub mod aside;
pub mod capacity;
pub mod check;
pub mod cleanup;
pub mod decide;
pub mod events;
pub mod figures;
pub mod fill;
pub mod host_load;
pub mod merge;
pub mod near;
pub mod observe;
pub mod replay;
pub mod replication;
pub mod stats;
pub mod study;
pub mod thresholds;
pub mod timeline;
pub mod usage;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub use crate::driver::LoadResult;
use crate::driver::{PoolerCounters, ServerCounters};
use crate::plan::RunPlan;
use crate::plan::shard::Shard;
use crate::results::stats::{Counts, Percentiles};
use crate::transport::TransportInfo;
pub use aside::{AsideReport, LegReport, WorkingSet};
pub use events::EventReport;
pub use figures::{Histograms, Host, Latency, ReportedMemory, ServerFigures, Totals};
pub use timeline::{CacheSecond, ScheduleReport, Second};
pub use usage::ClientUse;

/// Version of this JSON layout.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything one run measured.
///
/// Its figures come in groups, each `#[serde(flatten)]`: the JSON is one flat
/// object, its keys in the order of the fields here. A group can only take a
/// run of adjacent keys, and no struct in it may `deny_unknown_fields`
/// (`layout_tests` holds the key order).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Version of kvlab that measured.
    pub kvlab_version: String,
    /// Start of the run, seconds since the Unix epoch.
    pub started_unix_s: u64,
    /// The resolved plan (passwords masked).
    pub config: RunPlan,
    /// What was driven.
    pub target: TargetInfo,
    /// False when errors make the figures meaningless; see `problems`.
    pub valid: bool,
    /// Why the result is not valid, or what to keep in mind.
    pub problems: Vec<String>,
    /// Stopped early by Ctrl-C: figures cover the time until then.
    pub interrupted: bool,
    /// The window's length, throughput and counts.
    #[serde(flatten)]
    pub totals: Totals,
    /// Latency, service time, and how a paced run kept its schedule.
    #[serde(flatten)]
    pub latency: Latency,
    /// What kvlab itself spent (CPU, memory).
    #[serde(flatten)]
    pub client: ClientUse,
    /// What the servers spent (CPU, memory), together and by role.
    #[serde(flatten)]
    pub server: ServerFigures,
    /// The data load before measuring, if any.
    pub load: Option<LoadResult>,
    /// Requests issued during warm-up.
    pub warmup: Counts,
    /// Connection failures and re-connections.
    pub connections: ConnectionReport,
    /// The server's own counters over warm-up plus measured phase, beside kvlab's.
    pub server_counters: Option<CounterCheck>,
    /// The measured phase over time: per second for its first
    /// `config.load.timeline_seconds`, per minute after (see [`Second::span_s`]).
    pub timeline: Vec<Second>,
    /// The background writer beside the measured load, if any.
    #[serde(default)]
    pub background: Option<BackgroundReport>,
    /// What kvlab did to its servers during the window, and what followed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventReport>,
    /// The machine kvlab ran on, and what makes the figures suspect.
    #[serde(flatten)]
    pub host: Host,
    /// `kvlab replay`: the trace, what was sent for it, what was not reproduced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<replay::ReplayReport>,
    /// Stale reads, when the run wrote and values carry versions.
    #[serde(default)]
    pub consistency: Option<ConsistencyReport>,
    /// Cache-aside runs: the cache, hit ratio, database reads saved, each leg.
    #[serde(default)]
    pub cache_aside: Option<AsideReport>,
    /// A database with read replicas: each server's reads, writes, stale
    /// reads, CPU and lag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<replication::ReplicationReport>,
    /// A near cache in the client threads (`--near-cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_cache: Option<near::NearReport>,
    /// The query mode requests used, for products that have modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_mode: Option<String>,
    /// The production profile the workload came from (`--profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileNote>,
    /// The pooler kvlab ran in front of the server: its CPU (also in
    /// `server_cpu_s`) and its own counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooler: Option<PoolerReport>,
    /// The client of a sharded run this result is (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The measured phase on the wall clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// How the run kept its `--start-at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartKept>,
    /// A merged result (`kvlab merge`): each client's part, failed or
    /// missing clients included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientReport>,
    /// The seeds each phase drew its keys and operations from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draws: Option<crate::workload::draws::Draws>,
    /// What kvlab removed from (or left in) the servers it did not start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleanup: Vec<cleanup::Cleaned>,
    /// The HDR histograms, so reports can merge and re-cut.
    #[serde(flatten)]
    pub histograms: Histograms,
}

/// A span of wall-clock time, Unix milliseconds.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Window {
    /// When it began.
    pub start_unix_ms: f64,
    /// When it ended.
    pub end_unix_ms: f64,
}

/// How a client kept its wall-clock start (`--start-at`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct StartKept {
    /// The instant asked for, Unix milliseconds.
    pub at_unix_ms: u64,
    /// How late after it this client saw its measured phase begin, ms.
    pub late_ms: f64,
    /// How long before its warm-up had to begin it was ready (data loaded,
    /// every connection open), ms: the slack the start instant left.
    pub margin_ms: f64,
}

/// One client of a merged sharded run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClientReport {
    /// Which client.
    pub shard: Shard,
    /// `ok`, `invalid` (its result has problems) or `missing` (no result:
    /// the client failed before writing one).
    pub status: String,
    /// Its measured requests.
    pub requests: u64,
    /// Its successful requests per second of its own window.
    pub throughput_rps: f64,
    /// Its measured phase on the wall clock.
    pub window: Option<Window>,
    /// How late it began after `--start-at`, ms.
    pub start_late_ms: Option<f64>,
    /// Fraction of its window its worker threads were busy.
    pub client_busy: Option<f64>,
    /// Its threads had no idle time: its part describes the client host.
    pub client_saturated: bool,
    /// Its CPU seconds during its window.
    pub client_cpu_s: f64,
    /// Its problems, as its own result listed them.
    pub problems: Vec<String>,
}

/// The production profile a run's workload came from, as the summary names
/// it: the profile itself lives with the workload, the result carries its
/// words.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProfileNote {
    /// `twitter-cN`.
    pub name: String,
    /// The published source of its figures.
    pub source: String,
    /// What kvlab does not reproduce of it, one sentence.
    pub not_reproduced: String,
}

/// The pooler in front of the server (`--pooler`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoolerReport {
    /// Its name (`--pooler`).
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its settings, kvlab's defaults included.
    pub settings: BTreeMap<String, String>,
    /// Its process id (stopped when the run ended).
    pub pid: u32,
    /// Its CPU seconds during the window (included in `server_cpu_s`).
    pub pooler_cpu_s: Option<f64>,
    /// Its CPU µs per finished request.
    pub pooler_cpu_us_per_request: Option<f64>,
    /// Its peak resident memory, KiB.
    pub pooler_peak_rss_kb: Option<u64>,
    /// What it counted over warm-up and measured phase, beside kvlab's count.
    pub counters: Option<PoolerCounterCheck>,
}

/// The pooler's own counters beside what kvlab sent through it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoolerCounterCheck {
    /// What the pooler counted (deltas).
    pub pooler: PoolerCounters,
    /// Requests kvlab sent through it (warm-up + measured).
    pub kvlab_requests: u64,
    /// Set-up round trips of the connections kvlab opened meanwhile (e.g.
    /// preparing statements), which the pooler counts as queries too.
    pub set_up_queries: u64,
    /// Whether the pooler counts each request (pipeline 1): it counts a
    /// query per round trip it sees start and end, so requests pipelined on a
    /// connection merge and it counts fewer.
    #[serde(default)]
    pub exact: bool,
}

impl PoolerCounterCheck {
    /// Whether the pooler counted exactly kvlab's requests and set-up (at
    /// most that many when requests were pipelined).
    pub fn agrees(&self) -> bool {
        let sent = self.kvlab_requests + self.set_up_queries;
        if self.exact {
            self.pooler.queries == sent
        } else {
            self.pooler.queries <= sent
        }
    }
}

/// The fixed-rate writer that ran beside the measured load (`--background-writes`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BackgroundReport {
    /// Requested writes per second.
    pub target_rps: f64,
    /// Writes that finished.
    pub writes: u64,
    /// Writes that failed.
    pub errors: u64,
    /// Writes per second achieved.
    pub rps: f64,
    /// Their latency from intended start, µs.
    pub latency_us: Percentiles,
}

/// Stale reads: a read is stale when it returns a version older than the
/// newest version whose write had completed before the read began.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsistencyReport {
    /// Reads whose value was checked (successful measured reads).
    pub checked_reads: u64,
    /// Stale reads among them.
    pub stale_reads: u64,
    /// Stale reads per million checked reads.
    pub stale_per_million_reads: f64,
    /// Mean versions a stale read was behind.
    pub versions_behind_mean: f64,
    /// Most versions a stale read was behind.
    pub versions_behind_max: u64,
    /// How long the returned value had been outdated when the read began, µs.
    pub stale_age_us: Percentiles,
    /// The same as a histogram (ns, HdrHistogram V2 deflate, base64), for merging.
    #[serde(default)]
    pub stale_age_histogram: Option<String>,
}

/// The target as driven.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetInfo {
    /// The kind asked for (a registry name).
    pub kind: String,
    /// Product the server reported.
    pub product: String,
    /// Version the server reported.
    pub version: String,
    /// Whether kvlab started the server.
    pub managed: bool,
    /// Address (password masked).
    pub url: String,
    /// Settings of a managed server (secrets masked).
    pub settings: BTreeMap<String, String>,
    /// Process id of a managed server (stopped when the run ended).
    pub pid: Option<u32>,
    /// How the run's connections reached it: socket, TLS version and cipher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportInfo>,
}

/// Connection trouble during the run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ConnectionReport {
    /// Connections asked for.
    pub requested: usize,
    /// Connections open when the load started.
    pub established: usize,
    /// Failed connection attempts.
    pub failures: u64,
    /// Connections re-established after a failure.
    pub reconnects: u64,
    /// Connections closed and opened again at the end of their life
    /// (`--conn-life`): over the whole run, and in the window.
    #[serde(default, skip_serializing_if = "crate::results::stats::is_zero")]
    pub renewed: u64,
    #[serde(default, skip_serializing_if = "crate::results::stats::is_zero")]
    pub renewed_in_window: u64,
    /// Last connection error, if any.
    pub last_error: Option<String>,
    /// Sharded targets: the nodes and the redirects followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharded: Option<ShardReport>,
}

/// How a sharded target routed the measured requests.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ShardReport {
    /// Nodes serving slots when the run began.
    pub nodes: usize,
    /// Measured requests a node redirected for good (MOVED): the slot map changed.
    pub moved: u64,
    /// Measured requests a node redirected for once (ASK): the slot was migrating.
    pub ask: u64,
}

/// kvlab's counts beside the server's, over warm-up and measured phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CounterCheck {
    /// What the server counted (deltas).
    pub server: ServerCounters,
    /// GETs kvlab sent (warm-up + measured).
    pub kvlab_gets: u64,
    /// SETs kvlab sent (warm-up + measured).
    pub kvlab_sets: u64,
    /// Other clients may add to an external server's counters.
    pub exclusive: bool,
    /// The server's counters before and after (the clients of a sharded
    /// run), so that a merge takes them once over every client's window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<[ServerCounters; 2]>,
    /// Requests that may have been in flight when kvlab killed the server
    /// (`--event`): sent by kvlab, perhaps never counted by the server.
    #[serde(default, skip_serializing_if = "stats::is_zero")]
    pub slack: u64,
}

impl CounterCheck {
    /// Whether the server counted exactly what kvlab sent (within 0.1% when the
    /// server's counters are only approximate).
    pub fn agrees(&self) -> bool {
        if self.slack > 0 {
            // Never more than kvlab sent; less by at most what was in flight.
            let tol = |kvlab: u64| match self.server.exact {
                true => 0,
                false => 1 + kvlab / 1000,
            };
            let within = |server: u64, kvlab: u64| {
                server <= kvlab + tol(kvlab)
                    && kvlab.saturating_sub(server) <= self.slack + tol(kvlab)
            };
            return within(self.server.gets, self.kvlab_gets)
                && within(self.server.sets, self.kvlab_sets);
        }
        if self.server.exact {
            return self.server.gets == self.kvlab_gets && self.server.sets == self.kvlab_sets;
        }
        let near = |a: u64, b: u64| a.abs_diff(b) as f64 <= 1.0 + 0.001 * b as f64;
        near(self.server.gets, self.kvlab_gets) && near(self.server.sets, self.kvlab_sets)
    }
}

/// Writes `value` as pretty JSON to `path` atomically: a temporary file
/// beside it, then a rename over it (a reader never sees half a file).
pub fn write_json_atomic<T: Serialize + ?Sized>(value: &T, path: &Path) -> Result<()> {
    let json = serde_json::to_vec_pretty(value)?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, json).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

impl RunResult {
    /// Writes the result as pretty JSON to `path` (atomically: temp file, rename).
    pub fn write_json(&self, path: &Path) -> Result<()> {
        write_json_atomic(self, path)
    }

    /// The architecture this run measured, named as everywhere kvlab shows it
    /// (see [`architecture_name`]).
    pub fn architecture(&self) -> String {
        architecture_name(
            &self.target.product,
            self.cache_aside.as_ref().map(|a| a.cache.product.as_str()),
            self.pooler.as_ref().map(|p| p.name.as_str()),
        )
    }
}

/// The one name of an architecture: `postgres`, `redis in front of postgres`
/// (cache-aside), `postgres behind pgbouncer` (a pooler), or both. Every
/// place that names what a run measured (summary, verdict, tables, sizing,
/// compare) uses this, so one architecture never has two names.
pub fn architecture_name(target: &str, cache: Option<&str>, pooler: Option<&str>) -> String {
    let db = match pooler {
        Some(p) => format!("{target} behind {p}"),
        None => target.to_string(),
    };
    match cache {
        Some(c) => format!("{c} in front of {db}"),
        None => db,
    }
}

#[cfg(test)]
mod layout_tests;
