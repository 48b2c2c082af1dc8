//! `kvlab run`'s flags ([`RunArgs`]), shared by `kvlab capacity` and `kvlab
//! replay`; `plan.rs` checks them into a plan.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::help::{consistency_help, query_mode_help, schema_help};
use super::{TlsArgs, aside, metrics};
use crate::driver::parse_opt;
use crate::products;

/// Flags of `kvlab run`.
#[derive(Clone, Debug, Args, Serialize, Deserialize)]
#[command(allow_negative_numbers = true, args_override_self = true, after_help = products::RUN_EXAMPLES)]
pub struct RunArgs {
    /// The target: a product kvlab starts, or a URL of a running server (the
    /// help lists the registry's names and URL forms).
    #[arg(long, default_value = products::DEFAULT_TARGET, help = products::target_help())]
    pub target: String,
    /// Setting for a managed server, KEY=VALUE (repeatable), e.g. io-threads=4,
    /// threads=2, memory-mb=4096.
    #[arg(long = "server-opt", value_name = "KEY=VALUE", value_parser = parse_opt)]
    pub server_opt: Vec<(String, String)>,
    /// TLS to the target.
    #[command(flatten)]
    #[serde(flatten)]
    pub tls: TlsArgs,
    /// Number of distinct keys [default: 1000000; `kvlab decide --trace`:
    /// the trace's].
    #[arg(long, value_name = "N")]
    pub keys: Option<u64>,
    /// Value size in bytes (default 256), or sizes by key: a weighted list
    /// `100:80,1000:15,10000:5`, a range `64-4096`, `pareto:64-65536[:ALPHA]`.
    #[arg(long, value_name = "B|DIST")]
    pub value_size: Option<String>,
    /// SET:GET ratio, e.g. 0:1 (read-only, the default), 1:10.
    #[arg(long, value_name = "SET:GET")]
    pub ratio: Option<String>,
    /// uniform (the default) | zipf | zipf:THETA | sequential.
    #[arg(long, value_name = "DIST")]
    pub key_distribution: Option<String>,
    /// A production workload: value sizes, SET:GET, key popularity and TTL of
    /// a published cache cluster (twitter-c1, twitter-c4, twitter-c7,
    /// twitter-c19, twitter-c29) or a preset of the figures published across
    /// clusters (twitter-median, twitter-skew-p25, twitter-skew-p90,
    /// twitter-write-heavy, twitter-short-ttl, meta-low-skew, meta-high-skew);
    /// flags given beside it win.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Keys one GET reads, with the protocol's multi-key read (MGET, `get k1
    /// k2 …`, `= ANY($1)`, `IN (…)`): N, or a mix as KEYS:WEIGHT,…
    #[arg(long, value_name = "N|MIX")]
    pub batch: Option<String>,
    /// Prefix of every key kvlab reads or writes.
    #[arg(long, default_value = "kvlab:")]
    pub key_prefix: String,
    /// Total connections.
    #[arg(long, default_value_t = 50, value_name = "C")]
    pub connections: usize,
    /// Client threads [default: number of cores].
    #[arg(long, value_name = "T")]
    pub threads: Option<usize>,
    /// Requests in flight per connection.
    #[arg(long, default_value_t = 1, value_name = "P")]
    pub pipeline: usize,
    /// Seconds to measure [default: 10].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Measure this many requests instead of a duration.
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,
    /// Seconds of load before measuring, excluded from the figures [default: 2;
    /// 0 with --cache-start cold, whose warm-up curve is the result].
    #[arg(long, value_name = "SECS")]
    pub warmup: Option<f64>,
    /// Open loop: total requests per second on a fixed schedule; latency is taken
    /// from each request's intended send time.
    #[arg(long, value_name = "RPS")]
    pub rate: Option<f64>,
    /// How a fixed rate's requests arrive: poisson (independent clients, as
    /// production traffic is) or uniform (evenly spaced). Each leaves at
    /// most --send-slack before its intended time; the run reports how close
    /// it came [default: poisson].
    #[arg(long, value_name = "PROCESS")]
    pub arrivals: Option<String>,
    /// How a fixed rate moves over the measured window, --rate being its
    /// peak: steady, step (the trough, then the peak from the window's
    /// middle), ramp (from the trough up to the peak over the window) or sine
    /// (a day compressed into the window: trough, peak, trough); options
    /// after a colon, e.g. sine:period=60s,ratio=2, step:at=30s, ramp:over=1m
    /// (ratio: peak over trough, default 2) [default: steady].
    #[arg(long, value_name = "SHAPE")]
    pub rate_shape: Option<String>,
    /// How early a fixed rate's request may leave, so that one wake-up sends
    /// every request due within it: auto (16 of a client thread's mean gaps
    /// between arrivals, 20-300 µs), or a time such as 50us or 0 (each
    /// request within 20 µs of its time). A request sent early is timed from
    /// its actual send; the run reports the slack and how far sends were from
    /// their times [default: auto].
    #[arg(long, value_name = "TIME")]
    pub send_slack: Option<String>,
    /// How long each connection lives: N requests, or a time (5s, 500ms),
    /// each life spread within ±20% (`,jitter=0.1` says otherwise). Then it
    /// finishes what it has in flight, closes and opens again, as a pooled
    /// application recycling its connections does; the result counts the
    /// connections opened per second, and the servers' CPU shows their cost
    /// [default: the whole run].
    #[arg(long, value_name = "LIFE")]
    pub conn_life: Option<String>,
    /// A burst of reads on a few keys, as when one item goes viral:
    /// share=F of the reads (or rps=N reads a second, at a fixed rate) on keys=N
    /// keys (default 1, from the middle of the key space), from=T for=T into
    /// the window (default: all of it), e.g. rps=3000,from=10s,for=20s. The
    /// result counts the reads sent there and, in a cluster, names the node
    /// that serves them.
    #[arg(long, value_name = "BURST")]
    pub hot_keys: Option<String>,
    /// How kvlab issues requests: uring (io_uring: every due send, receive
    /// and the next wake-up in one system call per loop pass) or epoll (a
    /// readiness poll, then a call per read and per write) [default: uring
    /// where the kernel allows it and the run has no TLS, else epoll].
    #[arg(long, value_name = "uring|epoll")]
    pub io: Option<String>,
    /// A round trip kvlab emulates to the target, in ms (e.g. 0.3 within a
    /// zone, 1.5 across zones; `0.3,jitter=0.05` adds a random extra of that
    /// mean): half before each request reaches the server, half before its
    /// reply counts. A delay only: no loss, no bandwidth limit. Against a
    /// server elsewhere it adds to the real network.
    #[arg(long, value_name = "MS")]
    pub rtt: Option<String>,
    /// The round trip to a cache-aside run's cache (`--rtt` unless given).
    #[arg(long, value_name = "MS")]
    pub cache_rtt: Option<String>,
    /// Seconds a request may wait for its reply before it counts as a timeout.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub timeout: f64,
    /// Keep per-second figures for the first N seconds of the window, per-minute
    /// ones after (bounds memory and JSON of long runs).
    #[arg(long, default_value_t = crate::plan::TIMELINE_SECONDS, value_name = "N")]
    pub timeline_seconds: u32,
    /// Do not load the keys before measuring.
    #[arg(long)]
    pub no_load: bool,
    /// This process is client I of N of one run (0 <= I < N): connections,
    /// --rate and --requests are the whole run's, split over the N clients;
    /// each loads its slice of the keys; key draws stay over all keys.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Start the measured phase at this wall-clock instant (Unix milliseconds
    /// or RFC 3339); connecting, loading and warm-up happen before it, and a
    /// client not ready in time fails rather than start late.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Storage engine of kvlab's table (databases that have engines).
    #[arg(long, value_name = "ENGINE", help = schema_help("table_engine", "storage engine of kvlab's table"))]
    pub table_engine: Option<String>,
    /// Create kvlab's table UNLOGGED (databases that have such tables).
    #[arg(long, help = schema_help("unlogged", "create kvlab's table UNLOGGED"))]
    pub unlogged: bool,
    /// Consistency level of every request (databases that have levels).
    #[arg(long, value_name = "LEVEL", help = consistency_help())]
    pub consistency: Option<String>,
    /// How requests are sent (databases that have modes).
    #[arg(long, value_name = "MODE", help = query_mode_help())]
    pub query_mode: Option<String>,
    /// A connection pooler kvlab starts in front of the managed database.
    #[arg(long, value_name = "POOLER", help = format!("A connection pooler kvlab starts in front of the managed database: {} (any other pooler: its URL as --target)", products::pooler_names(" | ")))]
    pub pooler: Option<String>,
    /// Setting for the pooler, KEY=VALUE (repeatable), e.g. pool_mode=transaction.
    #[arg(long = "pooler-opt", value_name = "KEY=VALUE", value_parser = parse_opt)]
    pub pooler_opt: Vec<(String, String)>,
    /// A read replica of the --target URL, as a URL of the same product
    /// (repeatable): reads go to the replicas (see --read-from), writes to
    /// the target.
    #[arg(long = "read-replica", value_name = "URL")]
    pub read_replica: Vec<String>,
    /// With read replicas (--server-opt replicas=N or --read-replica): where
    /// reads go: replicas (in turn), primary, or any [default: replicas].
    #[arg(long, value_name = "WHERE")]
    pub read_from: Option<String>,
    /// Databases: drop and reload kvlab's own table even if it looks right.
    #[arg(long)]
    pub recreate: bool,
    /// Write the result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Seed of the key and operation generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A separate writer doing this many SETs per second beside the measured
    /// load, reported on its own (e.g. 65, as in the query-cache study).
    #[arg(long, value_name = "N")]
    pub background_writes: Option<f64>,
    /// Loaded and written keys expire after this many seconds (caches; a
    /// cache-aside run's cache: --cache-ttl). Misses after a key's TTL are
    /// counted as expired.
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<u32>,
    #[command(flatten)]
    #[serde(flatten)]
    pub aside: aside::AsideArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub shared: super::shared::SharedArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub near: super::near::NearArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub metrics: metrics::MetricsArgs,
    /// What kvlab does to a server it started, at a second of the measured
    /// window (repeatable): SECOND:ACTION[:DOWN], e.g. 10:restart-cache:2.
    #[arg(long = "event", value_name = "SECOND:ACTION", help = format!("What kvlab does to a server it started, at a second of the measured window (repeatable): SECOND:ACTION[:DOWN], e.g. 10:restart-cache:2. Actions: {}", crate::plan::events::ACTIONS))]
    pub events: Vec<String>,
}
