//! The plan of one run: what to drive (target), with what data (workload) and how
//! hard (load). Plain serde structs, built by `cli` and later by study files.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::driver::{Consistency, QueryMode};
pub use crate::driver::{Endpoint, SchemaOptions, Secret, is_secret_key};
use crate::driver::{Pooler, Role};
use crate::error::UsageError;
use crate::products;
pub use crate::products::TargetKind;
pub use crate::workload::params::{KeyDistribution, Ratio, Stop, WritePolicy};
pub use aside::{CacheAside, CacheStart};
pub use choice::{consistency_of, query_mode_of};

mod aside;
mod choice;
pub mod events;
pub mod io;
pub mod near;
pub mod reads;
pub mod replay;
pub mod shard;
pub mod shared;
pub mod study;
mod url;

/// Everything one measured run needs, grouped by concern.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunPlan {
    /// The server to drive.
    pub target: TargetSpec,
    /// Keys, values and the operation mix.
    pub workload: Workload,
    /// Connections, threads, pipeline, pacing and duration.
    pub load: LoadShape,
    /// A cache in front of the target (cache-aside); `None`: the target alone.
    #[serde(default)]
    pub cache: Option<CacheAside>,
    /// A near cache in each client thread (`--near-cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near: Option<near::NearCache>,
    /// What kvlab may do to a server it did not start.
    #[serde(default)]
    pub shared: shared::Shared,
}

impl RunPlan {
    /// A copy safe to print and store: server settings that hold secrets are masked.
    pub fn redacted(&self) -> RunPlan {
        let mut p = self.clone();
        let cache = p.cache.as_mut().map(|c| &mut c.cache.server_opts);
        for opts in std::iter::once(&mut p.target.server_opts).chain(cache) {
            for (k, v) in opts.iter_mut() {
                if is_secret_key(k) {
                    *v = "***".into();
                }
            }
        }
        p
    }

    /// The same plan over `keys` keys.
    pub fn with_keys(&self, keys: u64) -> RunPlan {
        let mut p = self.clone();
        p.workload.keys = keys;
        p
    }
}

impl RunPlan {
    /// Checks `--ttl`: only a target that expires keys (a cache) takes it,
    /// and a cache-aside run gives its cache's TTL with `--cache-ttl`.
    pub fn check_ttl(&self) -> Result<(), UsageError> {
        let ttl = self.workload.ttl_s;
        if ttl == 0 {
            return Ok(());
        }
        if self.cache.is_some() {
            return Err(UsageError::bad(
                "--ttl",
                "a cache-aside run's database keeps its rows",
                "give the cache's expiry with --cache-ttl",
            ));
        }
        if !self.target.kind.expires() {
            return Err(UsageError::bad(
                "--ttl",
                format!("{} does not expire keys", self.target.kind.name()),
                format!(
                    "use a cache target ({}), or drop --ttl",
                    crate::products::names(true)
                ),
            ));
        }
        if ttl > 30 * 24 * 3600 {
            return Err(UsageError::bad(
                "--ttl",
                format!("{ttl} s is more than 30 days"),
                "give at most 2592000 seconds (memcached reads more as a date)",
            ));
        }
        Ok(())
    }

    /// Checks `--batch`: a target with a multi-key read, no cache
    /// in front, and no more keys per GET than there are keys.
    pub fn check_batch(&self) -> Result<(), UsageError> {
        let Some(b) = &self.workload.batch else {
            return Ok(());
        };
        let kind = self.target.kind;
        let takers: Vec<&str> = crate::products::TargetKind::ALL
            .into_iter()
            .filter(|k| k.product().facts().batch_reads.is_some())
            .map(|k| k.name())
            .collect();
        if kind.product().facts().batch_reads.is_none() {
            return Err(UsageError::bad(
                "--batch",
                format!("kvlab has no batch read for {}", kind.name()),
                format!("use one of {}, or drop --batch", takers.join(", ")),
            ));
        }
        if self.cache.is_some() {
            return Err(UsageError::bad(
                "--batch",
                "a cache-aside run reads one key per request",
                "drop --batch, or run the cache and the database on their own",
            ));
        }
        if b.max() as u64 > self.workload.keys {
            return Err(UsageError::bad(
                "--batch",
                format!(
                    "{} keys per GET but only {} keys",
                    b.max(),
                    self.workload.keys
                ),
                "raise --keys or give a smaller batch",
            ));
        }
        Ok(())
    }

    /// Checks that a cache-aside plan makes sense: a cache in front of a
    /// database, one request at a time per client, the data loaded.
    pub fn check_cache(&self) -> Result<(), UsageError> {
        let Some(c) = &self.cache else { return Ok(()) };
        if c.cache.kind.is_sql() {
            return Err(UsageError::bad(
                "--cache",
                format!("{} is a database, not a cache", c.cache.kind.name()),
                format!("use {}", products::or_list(&products::aside_caches())),
            ));
        }
        if c.cache.kind.product().facts().sharded {
            return Err(UsageError::bad(
                "--cache",
                format!(
                    "{}: a cache-aside run needs a single cache server (a sharded cache is not supported there yet)",
                    c.cache.kind.name()
                ),
                format!("use {}", products::or_list(&products::aside_caches())),
            ));
        }
        if !self.target.kind.is_sql() {
            return Err(UsageError::bad(
                "--cache",
                "cache-aside puts a cache in front of a database",
                format!(
                    "use --target {} (or a {} URL)",
                    products::choices(false),
                    products::or_list(
                        &products::kinds(false)
                            .map(|k| format!("{}://", k.scheme()))
                            .collect::<Vec<_>>()
                    )
                ),
            ));
        }
        if self.load.pipeline > 1 {
            return Err(UsageError::bad(
                "--pipeline",
                "a cache-aside client waits for each step before the next",
                "use pipeline 1 (add connections for more load)",
            ));
        }
        if !self.workload.load {
            return Err(UsageError::bad(
                "--no-load",
                "cache-aside reads need every key in the database",
                "load the data",
            ));
        }
        if self.workload.background_writes.is_some() {
            return Err(UsageError::bad(
                "--background-writes",
                "is not supported with a cache",
                "put writes in the measured load with a SET:GET ratio, e.g. 1:19",
            ));
        }
        if c.ttl_s > 30 * 24 * 3600 {
            return Err(UsageError::bad(
                "--cache-ttl",
                format!("{} s is more than 30 days", c.ttl_s),
                "give at most 2592000 seconds, or 0 for no expiry",
            ));
        }
        Ok(())
    }
}

/// A pooler and its checked settings.
pub type PoolerSettings = (&'static dyn Pooler, BTreeMap<String, String>);

/// Which server a run drives.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetSpec {
    /// Product and protocol.
    pub kind: TargetKind,
    /// Where the server is; `None` means kvlab starts (and stops) its own.
    pub external: Option<Endpoint>,
    /// Settings for a managed server (`--server-opt KEY=VALUE`), in order given.
    #[serde(default)]
    pub server_opts: BTreeMap<String, String>,
    /// How kvlab's table is made (databases only).
    #[serde(default)]
    pub schema: SchemaOptions,
    /// The consistency level requests ask for (`--consistency`), for products
    /// that have levels; `None`: the product's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
    /// How requests are sent (`--query-mode`), for products that have modes;
    /// `None`: the default (or what the pooler in front needs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_mode: Option<QueryMode>,
    /// A pooler kvlab starts in front of the managed server (`--pooler`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooler: Option<String>,
    /// The pooler's settings (`--pooler-opt KEY=VALUE`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pooler_opts: BTreeMap<String, String>,
    /// Read replicas of a server kvlab did not start (`--read-replica URL`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_replicas: Vec<Endpoint>,
    /// Where reads go when there are replicas (`--read-from`; `None`: the
    /// replicas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_from: Option<reads::ReadFrom>,
}

impl TargetSpec {
    /// Whether `--server-opt KEY=on` is given (a managed server's switch).
    pub fn switched_on(&self, key: &str) -> bool {
        self.server_opts.get(key).is_some_and(|v| v == "on")
    }

    /// Whether connections to it use TLS: its URL's, or a managed server's
    /// `tls=on`.
    pub fn uses_tls(&self) -> bool {
        self.external.as_ref().is_some_and(|e| e.tls.is_some()) || self.switched_on("tls")
    }

    /// The pooler in front and its settings with kvlab's defaults for
    /// `connections` clients, checked; `None` without `--pooler`.
    pub fn pooler_settings(
        &self,
        connections: usize,
    ) -> Result<Option<PoolerSettings>, UsageError> {
        let Some(name) = &self.pooler else {
            if !self.pooler_opts.is_empty() {
                return Err(UsageError::bad(
                    "--pooler-opt",
                    "applies only to a pooler kvlab starts",
                    format!("add --pooler {}", products::pooler_names("|")),
                ));
            }
            return Ok(None);
        };
        let pooler = products::pooler(name).ok_or_else(|| {
            UsageError::bad(
                "--pooler",
                format!("unknown pooler '{name}'"),
                format!(
                    "use {} (any other pooler: give its URL as --target, e.g. {})",
                    products::pooler_names("|"),
                    self.kind.product().facts().example_url
                ),
            )
        })?;
        if self.external.is_some() {
            return Err(UsageError::bad(
                "--pooler",
                "kvlab starts a pooler only in front of a server it starts",
                "with a URL target run your own pooler and give its URL as --target",
            ));
        }
        if let Some(k) = ["tls", "socket"].into_iter().find(|k| self.switched_on(k)) {
            return Err(UsageError::bad(
                "--pooler",
                format!(
                    "clients reach kvlab's pooler over plain TCP, so --server-opt {k}=on would not be what they use"
                ),
                format!("drop --server-opt {k}=on, or run without --pooler"),
            ));
        }
        let product = self.kind.product();
        if !pooler.fronts(product) {
            return Err(UsageError::bad(
                "--pooler",
                format!(
                    "{} does not stand in front of {}",
                    pooler.name(),
                    product.facts().title
                ),
                "drop it",
            ));
        }
        let settings = pooler.configure(&self.pooler_opts, connections)?;
        if let Some(why) = self
            .query_mode
            .and_then(|m| pooler.query_mode_problem(&settings, m.name()))
        {
            return Err(UsageError::bad(
                "--query-mode",
                why,
                "use --query-mode extended or simple, or leave it out",
            ));
        }
        Ok(Some((pooler, settings)))
    }

    /// The query mode requests use: the one asked for, else the one the
    /// pooler in front needs, else the product's default; `None` for products
    /// without modes.
    pub fn query_mode_used(&self) -> Option<QueryMode> {
        let modes = self.kind.product().facts().query_modes;
        if modes.is_empty() {
            return None;
        }
        if self.query_mode.is_some() {
            return self.query_mode;
        }
        let needed = self
            .pooler_settings(0)
            .ok()
            .flatten()
            .and_then(|(p, s)| p.query_mode(&s))
            .and_then(|m| QueryMode::among(modes, m));
        needed.or(QueryMode::among(modes, modes[0]))
    }

    /// Checks the table options and the pooler against what the product
    /// takes (its query mode and consistency level are the product's by
    /// type: [`query_mode_of`], [`consistency_of`]).
    pub fn check_schema(&self) -> Result<(), UsageError> {
        self.pooler_settings(0)?;
        let s = &self.schema;
        let given = [
            ("table_engine", "--table-engine", s.table_engine.is_some()),
            ("unlogged", "--unlogged", s.unlogged),
        ];
        for (option, flag, set) in given {
            if set && !self.kind.takes(option) {
                let takers: Vec<TargetKind> =
                    products::kinds(false).filter(|k| k.takes(option)).collect();
                let titles: Vec<&str> = takers.iter().map(|k| k.product().facts().title).collect();
                let names: Vec<&str> = takers.iter().map(|k| k.name()).collect();
                return Err(UsageError::bad(
                    flag,
                    format!("applies to {} targets only", products::or_list(&titles)),
                    format!("drop it or use --target {}", names.join("|")),
                ));
            }
        }
        if s.recreate && !self.kind.is_sql() {
            return Err(UsageError::bad(
                "--recreate",
                "applies to database targets only",
                "drop it",
            ));
        }
        match self.kind.product().role() {
            Role::Database(_) => self.kind.product().facts().table.check(s),
            Role::Cache(_) => Ok(()),
        }
    }
}

/// The data and the operations.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Workload {
    /// Number of distinct keys (ids `0..keys`).
    pub keys: u64,
    /// Value size in bytes; with `value_sizes`, their mean (rounded).
    pub value_size: usize,
    /// Sizes that differ by key (`--value-size 100:80,1000:20`); `None`:
    /// every value is `value_size` bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_sizes: Option<crate::workload::SizeDist>,
    /// SET:GET ratio.
    pub ratio: Ratio,
    /// How keys are picked.
    pub distribution: KeyDistribution,
    /// Prefix of every key kvlab reads or writes.
    pub key_prefix: String,
    /// Load all keys before measuring.
    pub load: bool,
    /// Seed of the key and operation generators.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// A separate writer at this many SETs per second beside the measured load.
    #[serde(default)]
    pub background_writes: Option<f64>,
    /// Loaded and written keys expire after this many seconds (0: never).
    #[serde(default)]
    pub ttl_s: u32,
    /// The workload profile the sizes, mix, keys and TTL came from
    /// (`--profile`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Keys one GET reads (`--batch`), with the protocol's multi-key read;
    /// `None`: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<crate::workload::BatchSizes>,
    /// `kvlab replay`: requests come from this trace, at its times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<replay::TracePlan>,
}

/// `--batch` as given (`None`: one key per GET).
pub fn parse_batch(text: Option<&str>) -> Result<Option<crate::workload::BatchSizes>, UsageError> {
    let Some(t) = text else { return Ok(None) };
    let b: crate::workload::BatchSizes = t.parse().map_err(|e: String| {
        UsageError::bad(
            "--batch",
            e,
            "give keys per GET, e.g. --batch 10 or --batch 1:50,10:40,100:10",
        )
    })?;
    Ok((!b.single()).then_some(b))
}

fn default_seed() -> u64 {
    1
}

impl Workload {
    /// Sets the value sizes to `d` (see [`crate::workload::sizes_of`]).
    pub fn set_sizes(&mut self, d: crate::workload::SizeDist) {
        (self.value_size, self.value_sizes) = crate::workload::sizes_of(d);
    }

    /// The values of this workload (their size by key, their bytes).
    pub fn values(&self) -> crate::workload::Values {
        match &self.value_sizes {
            Some(d) => crate::workload::Values::with(d),
            None => crate::workload::Values::new(self.value_size),
        }
    }

    /// How the value sizes are written: `256` or the distribution.
    pub fn value_sizes_text(&self) -> String {
        match &self.value_sizes {
            Some(d) => d.to_string(),
            None => self.value_size.to_string(),
        }
    }
}

/// How hard, how long, and how the load is shaped.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadShape {
    /// Total connections, spread over the threads.
    pub connections: usize,
    /// Client threads.
    pub threads: usize,
    /// Requests kept in flight per connection.
    pub pipeline: usize,
    /// When the measured phase ends.
    pub stop: Stop,
    /// Seconds of load before measuring, excluded from the figures.
    pub warmup_s: f64,
    /// Open loop: total requests per second on a fixed schedule. `None`: closed loop.
    pub rate: Option<f64>,
    /// How the open loop's requests arrive (results from before the choice:
    /// uniform).
    #[serde(default = "crate::workload::Arrivals::before_choice")]
    pub arrivals: crate::workload::Arrivals,
    /// How the open loop's rate moves over the window (`--rate-shape`;
    /// `rate` is then its peak).
    #[serde(default, skip_serializing_if = "crate::workload::RateShape::is_steady")]
    pub rate_shape: crate::workload::RateShape,
    /// How early the open loop may send a request so that one wake-up
    /// sends several (`--send-slack`; results from before it: auto).
    #[serde(default, skip_serializing_if = "crate::workload::SendSlack::is_auto")]
    pub send_slack: crate::workload::SendSlack,
    /// How long each connection lives before it reconnects (`--conn-life`;
    /// `None`: the whole run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conn_life: Option<crate::workload::ConnLife>,
    /// A share of reads on a few keys for a period (`--hot-keys`), its share
    /// settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_keys: Option<crate::workload::HotKeys>,
    /// The round trip kvlab emulates to the target (`--rtt`); `None`: none
    /// beyond the real network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt: Option<crate::workload::LinkDelay>,
    /// The round trip kvlab emulates to a cache-aside run's cache
    /// (`--cache-rtt`; `--rtt` unless given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_rtt: Option<crate::workload::LinkDelay>,
    /// Seconds a request may wait for its reply before it counts as a timeout.
    pub timeout_s: f64,
    /// How kvlab's engine issues requests (`--io`).
    #[serde(default, skip_serializing_if = "io::IoChoice::is_auto")]
    pub io: io::IoChoice,
    /// This process is one client of a run split over several (`--shard I/N`):
    /// the figures above are the whole run's; this client makes its part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::plan::shard::Shard>,
    /// Wall-clock start of the measured phase, Unix milliseconds (`--start-at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_ms: Option<u64>,
    /// What kvlab does to its servers during the window (`--event`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<events::ServerEvent>,
    /// Seconds at the start of the window the timeline keeps per second;
    /// after them it keeps one entry per minute (`--timeline-seconds`), so a
    /// run of hours has a bounded timeline in memory and in its results.
    #[serde(default = "default_timeline_seconds")]
    pub timeline_seconds: u32,
}

/// The seconds a timeline keeps per second unless told otherwise.
pub const TIMELINE_SECONDS: u32 = 600;

fn default_timeline_seconds() -> u32 {
    TIMELINE_SECONDS
}

/// Checks `--timeline-seconds` (`load.timeline_seconds`): at least 1.
pub fn check_timeline_seconds(n: u32) -> Result<u32, UsageError> {
    match n {
        0 => Err(UsageError::bad(
            "--timeline-seconds",
            "0 would keep no per-second figures",
            "give at least 1, e.g. --timeline-seconds 600",
        )),
        n => Ok(n),
    }
}
