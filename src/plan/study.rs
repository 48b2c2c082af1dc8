//! The study file as written: the TOML sections (`StudyFile`, `Goal`,
//! `WorkloadSection`, `LoadSection`, `TargetSection`, `Sweep`) and their defaults.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::plan::TargetSpec;
use crate::workload::LinkDelay;

/// A study as written in its file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    /// Short name, used in file names; a study file without one is named by
    /// its file's stem (`studies/decide.toml`: `decide`).
    #[serde(default)]
    pub name: String,
    /// What the study asks, for the report.
    #[serde(default)]
    pub description: String,
    /// Where results and reports go (relative to the current directory).
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Seconds measured per point.
    #[serde(default = "d_duration")]
    pub duration: f64,
    /// Seconds of warm-up per point.
    #[serde(default = "d_warmup")]
    pub warmup: f64,
    /// Runs of each point.
    #[serde(default = "d_one")]
    pub repetitions: usize,
    /// `measure` (default): timed load per point. `fill`: memory efficiency —
    /// caches are filled until they evict or refuse, databases loaded and sized.
    #[serde(default)]
    pub mode: Option<String>,
    /// What "good enough" means, for the verdict.
    #[serde(default)]
    pub goal: Goal,
    /// `[sizing]`, removed: a study's `[decide]` sizes and prices a stated
    /// load (kept only to refuse it with a pointer there).
    #[serde(default, skip_serializing)]
    pub sizing: Option<toml::Value>,
    /// `[thresholds]`: limits every point must meet (a CI gate: `kvlab study`
    /// exits 3 when one fails).
    #[serde(default, skip_serializing_if = "Thresholds::is_empty")]
    pub thresholds: Thresholds,
    /// Serve live metrics for Prometheus at this `HOST:PORT` while the study
    /// runs (`--metrics` overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
    /// CPUs for managed servers, e.g. "1" or "2-3" (sched_setaffinity).
    #[serde(default)]
    pub server_cpus: Option<String>,
    /// CPUs for kvlab's own threads.
    #[serde(default)]
    pub client_cpus: Option<String>,
    /// The data and operations.
    #[serde(default)]
    pub workload: WorkloadSection,
    /// The load shape before sweeping.
    #[serde(default)]
    pub load: LoadSection,
    /// The systems to compare (none in a `[decide]` study).
    #[serde(rename = "target", default)]
    pub targets: Vec<TargetSection>,
    /// `[decide]`: the study is a `kvlab decide` run; its keys are that
    /// command's flags without the dashes (`rps = 20000`, `p99_ms = 5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decide: Option<toml::Table>,
    /// Where each `[decide]` key is written, `file:line`, for errors (set
    /// when the file is read).
    #[serde(skip)]
    pub decide_at: BTreeMap<String, String>,
    /// The target (by name) every other one is compared with in the report,
    /// point by point (e.g. a single server against clusters of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Axes to sweep: each a list of values.
    #[serde(default)]
    pub sweep: Sweep,
    /// The published study's own parameters, laid over the rest by
    /// `--scale original` (tables such as `[original.workload]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<toml::Table>,
    /// `original` when the study ran at the published scale (set by kvlab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
}

/// The scale a study runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scale {
    /// As written: scaled for a small machine.
    Quick,
    /// The published study's parameters (its `[original]` tables).
    Original,
}

fn d_duration() -> f64 {
    5.0
}
fn d_warmup() -> f64 {
    1.0
}
fn d_one() -> usize {
    1
}

/// Optional targets for the verdict.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Goal {
    /// Requests per second the system must sustain.
    pub rps: Option<f64>,
    /// Largest acceptable p99 latency in milliseconds.
    pub p99_ms: Option<f64>,
    /// Also search each target's highest open-loop rate within `p99_ms`
    /// (at the first point's load shape, on the same server).
    #[serde(default)]
    pub capacity: bool,
}

/// `[thresholds]`: limits every point of a study must meet. Each is
/// optional; a point without a result fails them all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Largest p50 latency, ms.
    pub p50_ms: Option<f64>,
    /// Largest p99 latency, ms.
    pub p99_ms: Option<f64>,
    /// Largest p99.9 latency, ms.
    pub p999_ms: Option<f64>,
    /// Most failed requests.
    pub errors: Option<u64>,
    /// Most stale reads.
    pub stale_reads: Option<u64>,
    /// Least throughput, requests per second.
    pub min_rps: Option<f64>,
}

impl Thresholds {
    /// Whether it sets no limit.
    pub fn is_empty(&self) -> bool {
        *self == Thresholds::default()
    }
}

/// `[workload]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadSection {
    /// Distinct keys.
    pub keys: u64,
    /// Value bytes.
    pub value_size: usize,
    /// Sizes by key instead (`"100:80,1000:15,10000:5"`, `"64-4096"`,
    /// `"pareto:64-65536"`), as `--value-size` takes them.
    pub value_sizes: Option<String>,
    /// SET:GET.
    pub ratio: String,
    /// uniform | zipf | zipf:THETA | sequential.
    pub distribution: String,
    /// Key prefix.
    pub key_prefix: String,
    /// A separate writer at this many SETs per second beside the load.
    pub background_writes: Option<f64>,
    /// Loaded and written keys expire after this many seconds (caches).
    pub ttl: Option<u32>,
    /// A workload profile (`--profile`): its value sizes, SET:GET, key
    /// popularity and TTL replace the study's own.
    pub profile: Option<String>,
    /// Keys one GET reads (`--batch`): `"10"` or `"1:50,10:40,100:10"`.
    pub batch: Option<String>,
    /// Load the keys before measuring (false: the points write them).
    pub load: bool,
    /// Measure this many requests per point instead of `duration`: a number,
    /// or "keys" for one request per key.
    pub requests: Option<toml::Value>,
}

impl Default for WorkloadSection {
    fn default() -> Self {
        WorkloadSection {
            keys: 100_000,
            value_size: 256,
            value_sizes: None,
            ratio: "0:1".into(),
            distribution: "uniform".into(),
            key_prefix: "kvlab:".into(),
            background_writes: None,
            ttl: None,
            profile: None,
            batch: None,
            load: true,
            requests: None,
        }
    }
}

/// `[load]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadSection {
    /// Total connections.
    pub connections: usize,
    /// Client threads (default: cores).
    pub threads: Option<usize>,
    /// In-flight requests per connection.
    pub pipeline: usize,
    /// Open-loop rate, requests per second.
    pub rate: Option<f64>,
    /// How the open loop's requests arrive (`--arrivals`).
    pub arrivals: crate::workload::Arrivals,
    /// How the open loop's rate moves over each point's window
    /// (`--rate-shape`: `sine`, `step:at=30s`, …; the rate is its peak).
    pub rate_shape: Option<String>,
    /// How early the open loop may send a request (`--send-slack`: `auto`,
    /// `50us`, `0`).
    pub send_slack: crate::workload::SendSlack,
    /// How long each connection lives (`--conn-life`: `1000`, `5s`, …).
    pub conn_life: Option<String>,
    /// A burst of reads on a few keys (`--hot-keys`: `share=0.3`, …).
    pub hot_keys: Option<String>,
    /// Per-request timeout, seconds.
    pub timeout: f64,
    /// How kvlab issues requests (`--io`).
    pub io: crate::plan::io::IoChoice,
    /// Seconds of each point's window its timeline keeps per second; per
    /// minute after them (`--timeline-seconds`).
    pub timeline_seconds: u32,
}

impl Default for LoadSection {
    fn default() -> Self {
        LoadSection {
            connections: 50,
            threads: None,
            pipeline: 1,
            rate: None,
            arrivals: crate::workload::Arrivals::Poisson,
            rate_shape: None,
            send_slack: crate::workload::SendSlack::Auto,
            conn_life: None,
            hot_keys: None,
            timeout: 5.0,
            io: crate::plan::io::IoChoice::Auto,
            timeline_seconds: crate::plan::TIMELINE_SECONDS,
        }
    }
}

/// One `[[target]]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    /// Label in the report (default: the kind).
    pub name: Option<String>,
    /// What the report should say about this target (e.g. what it stands in
    /// for).
    #[serde(default)]
    pub note: Option<String>,
    /// `redis`, `valkey`, `memcached`, `postgres`, `mariadb` (managed) or a URL.
    pub target: String,
    /// The target (by name) this one is compared with in the report, point
    /// by point (e.g. the same server without TLS); the study's `baseline`
    /// when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Settings of a managed server.
    #[serde(default)]
    pub server_opts: BTreeMap<String, String>,
    /// Storage engine of kvlab's table (databases that have engines).
    #[serde(default)]
    pub table_engine: Option<String>,
    /// UNLOGGED table (databases that have them).
    #[serde(default)]
    pub unlogged: bool,
    /// Consistency level of requests (databases that have levels).
    #[serde(default)]
    pub consistency: Option<String>,
    /// How requests are sent (databases that have query modes).
    #[serde(default)]
    pub query_mode: Option<String>,
    /// A pooler kvlab starts in front of this managed database.
    #[serde(default)]
    pub pooler: Option<String>,
    /// The pooler's settings (e.g. `{ pool_mode = "transaction" }`).
    #[serde(default)]
    pub pooler_opts: BTreeMap<String, String>,
    /// Cache-aside: a cache in front of this database (`redis`, `valkey`,
    /// `memcached` or a URL); each point starts a fresh managed cache.
    #[serde(default)]
    pub cache: Option<String>,
    /// Cache-aside: `invalidate` (default) or `update`.
    #[serde(default)]
    pub write_policy: Option<String>,
    /// Cache-aside: expiry of cache entries, seconds (default 0: never, or
    /// the TTL of the point's profile).
    #[serde(default)]
    pub cache_ttl: Option<u32>,
    /// Cache-aside: settings of the managed cache.
    #[serde(default)]
    pub cache_opts: BTreeMap<String, String>,
    /// Cache-aside: `warm` (default), `cold` or `settle` (see `--cache-start`).
    #[serde(default)]
    pub cache_start: Option<String>,
    /// Cache-aside: the protocol the cache speaks (memcached: text or meta).
    #[serde(default)]
    pub cache_query_mode: Option<String>,
    /// What kvlab does to its servers during each point, e.g.
    /// `["10:restart-cache:2"]` (see `--event`).
    #[serde(default)]
    pub events: Vec<String>,
    /// The round trip kvlab emulates to this target, ms (`0.3`, or
    /// `"0.3,jitter=0.05"`; see `--rtt`).
    #[serde(default)]
    pub rtt: Option<toml::Value>,
    /// The round trip to its cache (`rtt` unless given; see `--cache-rtt`).
    #[serde(default)]
    pub cache_rtt: Option<toml::Value>,
    /// A near cache in each client thread: items or a size (`10000`,
    /// `"64MiB"`; see `--near-cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_cache: Option<toml::Value>,
    /// How it hears of writes: `tracking`, `bcast` or `ttl=SECONDS` (see
    /// `--near-invalidation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_invalidation: Option<String>,
}

impl TargetSection {
    /// Its near cache, if it names one.
    pub fn near(&self) -> Result<Option<super::near::NearCache>, crate::error::UsageError> {
        let Some(bound) = &self.near_cache else {
            return Ok(None);
        };
        let bound = match bound {
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        Ok(Some(super::near::NearCache {
            bound: bound.parse()?,
            invalidation: match &self.near_invalidation {
                Some(i) => i.parse()?,
                None => super::near::Invalidation::Tracking,
            },
        }))
    }
}

impl StudyFile {
    /// Each target compared with a baseline, and that baseline, by name.
    pub fn comparisons(&self) -> Vec<(String, String)> {
        self.targets
            .iter()
            .filter_map(|t| {
                let base = t.baseline.as_ref().or(self.baseline.as_ref())?;
                let name = label(t);
                (name != *base).then(|| (name, base.clone()))
            })
            .collect()
    }
}

impl TargetSection {
    /// `rtt` and `cache_rtt` read (`cache_rtt` is `rtt` unless given; none
    /// without a cache).
    pub(crate) fn round_trips(&self) -> Result<(Option<LinkDelay>, Option<LinkDelay>)> {
        let read = |v: &Option<toml::Value>, key: &'static str| -> Result<Option<LinkDelay>> {
            match v {
                None => Ok(None),
                Some(toml::Value::Float(x)) => Ok(Some(LinkDelay::parse(&x.to_string(), key)?)),
                Some(toml::Value::Integer(n)) => Ok(Some(LinkDelay::parse(&n.to_string(), key)?)),
                Some(toml::Value::String(t)) => Ok(Some(LinkDelay::parse(t, key)?)),
                Some(other) => {
                    bail!("{key} = {other}: give milliseconds, e.g. 0.3 or \"0.3,jitter=0.05\"")
                }
            }
        };
        let rtt = read(&self.rtt, "rtt")?;
        let cache_rtt = match self.cache.is_some() {
            true => read(&self.cache_rtt, "cache_rtt")?.or(rtt),
            false if self.cache_rtt.is_some() => bail!("cache_rtt needs cache = …"),
            false => None,
        };
        Ok((rtt, cache_rtt))
    }

    /// Sets `spec`'s consistency level, query mode and pooler from this
    /// target; refuses a level or mode its product does not have.
    pub(crate) fn apply_request_options(
        &self,
        spec: &mut TargetSpec,
    ) -> Result<(), crate::error::UsageError> {
        spec.consistency = match &self.consistency {
            Some(c) => Some(crate::plan::consistency_of(spec.kind, c, "--consistency")?),
            None => None,
        };
        spec.query_mode = match &self.query_mode {
            Some(m) => Some(crate::plan::query_mode_of(spec.kind, m, "--query-mode")?),
            None => None,
        };
        spec.pooler.clone_from(&self.pooler);
        spec.pooler_opts.clone_from(&self.pooler_opts);
        Ok(())
    }

    /// The cache-aside part of this target's plans, if it has a cache.
    pub(crate) fn cache_aside(&self) -> Result<Option<crate::plan::CacheAside>> {
        let Some(c) = &self.cache else {
            if self.write_policy.is_some()
                || self.cache_ttl.is_some()
                || self.cache_start.is_some()
                || self.cache_query_mode.is_some()
                || !self.cache_opts.is_empty()
            {
                let caches: Vec<String> = crate::products::kinds(true)
                    .map(|k| format!("\"{}\"", k.name()))
                    .collect();
                bail!(
                    "write_policy, cache_ttl, cache_opts, cache_start and cache_query_mode need cache = {} (or a URL)",
                    crate::products::or_list(&caches)
                );
            }
            return Ok(None);
        };
        let mut cache: TargetSpec = c.parse().map_err(|e| anyhow!("cache: {e}"))?;
        if cache.external.is_some() && !self.cache_opts.is_empty() {
            bail!("cache_opts apply only to a cache kvlab starts; drop them or use a bare kind");
        }
        let start = match &self.cache_start {
            Some(s) => s.parse().map_err(|e| anyhow!("cache_start: {e}"))?,
            None => crate::plan::CacheStart::Warm,
        };
        cache.server_opts = self.cache_opts.clone();
        if let Some(m) = &self.cache_query_mode {
            cache.query_mode = Some(crate::plan::query_mode_of(
                cache.kind,
                m,
                "cache_query_mode",
            )?);
        }
        Ok(Some(
            crate::plan::CacheAside {
                cache,
                policy: self
                    .write_policy
                    .as_deref()
                    .unwrap_or("invalidate")
                    .parse()?,
                ttl_s: self.cache_ttl.unwrap_or(0),
                start,
            }
            .evict_by_default(),
        ))
    }

    /// The target's `events`, parsed.
    pub(crate) fn events(&self) -> Result<Vec<crate::plan::events::ServerEvent>> {
        self.events
            .iter()
            .map(|e| e.parse().map_err(|e| anyhow!("events: {e}")))
            .collect()
    }
}

/// `[sweep]`: every listed axis is crossed with every other.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Total connections.
    #[serde(default)]
    pub connections: Vec<usize>,
    /// Client threads.
    #[serde(default)]
    pub threads: Vec<usize>,
    /// Pipeline depth.
    #[serde(default)]
    pub pipeline: Vec<usize>,
    /// Value size in bytes.
    #[serde(default)]
    pub value_size: Vec<usize>,
    /// Open-loop rates.
    #[serde(default)]
    pub rate: Vec<f64>,
    /// Key counts.
    #[serde(default)]
    pub keys: Vec<u64>,
    /// SET:GET ratios, e.g. ["1:0", "0:1"] (write, then read).
    #[serde(default)]
    pub ratio: Vec<String>,
    /// Server settings: name -> values (applied to every managed target that
    /// accepts them, e.g. `io-threads`, `threads`, `query_cache_type`).
    #[serde(default)]
    pub server: BTreeMap<String, Vec<toml::Value>>,
    /// Settings of the managed cache of cache-aside targets: name -> values
    /// (e.g. `memory-mb = [4, 16, 64]`).
    #[serde(default)]
    pub cache: BTreeMap<String, Vec<toml::Value>>,
    /// Key distributions, e.g. `["uniform", "zipf:0.99"]`.
    #[serde(default)]
    pub distribution: Vec<String>,
    /// Workload profiles, e.g. `["none", "twitter-c29"]` (`none`: the
    /// study's own `[workload]`).
    #[serde(default)]
    pub profile: Vec<String>,
    /// Round trips kvlab emulates, ms: to each target and to its cache
    /// (unless the target gives `cache_rtt`), e.g. `[0.05, 0.2, 0.5, 1]`.
    #[serde(default)]
    pub rtt: Vec<f64>,
}

/// The label of a target section.
pub fn label(t: &TargetSection) -> String {
    t.name.clone().unwrap_or_else(|| {
        t.target
            .split("://")
            .next()
            .unwrap_or(&t.target)
            .to_string()
    })
}
