//! `kvlab decide --check` as data (`check.json`, beside `decision.json`):
//! what was run to check a decision (the architecture it sized, at the keys
//! and rate checked), each figure the decision predicts beside what that run
//! measured, their difference and its tolerance, and the verdict. The run
//! itself is embedded, so the check can be read again offline.

use serde::{Deserialize, Serialize};

use super::RunResult;
use super::usage::Role;
use crate::plan::CacheStart;

/// How far a measured figure may stand from its prediction, kvlab's own
/// values, written into every `check.json` beside what they judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerances {
    /// The hit ratio of all reads, as a share (0.03: 3 points); the
    /// database's reads per 1,000 requests are held to the same points of
    /// their reads.
    pub hit_points: f64,
    /// A server's CPU per request, a share of the measured (as the
    /// decision's own check of its sizing model).
    pub cpu_share: f64,
}

/// What a figure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    /// The cache's hit ratio of all reads (a share).
    HitRatio,
    /// The database's reads per 1,000 requests (its reads per second at
    /// 1,000 requests per second): the reads the cache missed.
    DatabaseReads,
    /// One server's CPU per request of the workload, µs.
    CpuPerRequest,
    /// p99 latency of all requests, ms.
    P99,
}

impl Figure {
    /// How it is said.
    pub fn name(self) -> &'static str {
        match self {
            Figure::HitRatio => "hit ratio of all reads",
            Figure::DatabaseReads => "database reads per 1,000 requests",
            Figure::CpuPerRequest => "CPU per request",
            Figure::P99 => "p99",
        }
    }
}

/// The bound a figure's difference is held to.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Tolerance {
    /// |measured − predicted| at most `within`, in the figure's own unit.
    Absolute {
        /// The most the two may differ by.
        within: f64,
    },
    /// |measured − predicted| at most `share` of the measured.
    Relative {
        /// The share of the measured figure.
        share: f64,
    },
    /// The measured figure at most `limit` (the stated goal), whatever the
    /// prediction.
    AtMost {
        /// The limit.
        limit: f64,
    },
}

/// How one figure came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Within its tolerance.
    Within,
    /// Past its tolerance.
    Past,
    /// Not known (the prediction or the measurement is missing): not held
    /// against the check.
    NotKnown,
}

/// The check as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every figure known is within its tolerance.
    Pass,
    /// At least one figure is past its tolerance.
    Fail,
}

impl Verdict {
    /// As written in the JSON: `pass` or `fail`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
        }
    }
}

/// The server a figure is of (CPU per request).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Server {
    /// Its part: the database or the cache.
    pub role: Role,
    /// The product.
    pub product: String,
}

/// One figure predicted and measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compared {
    /// What it is.
    pub figure: Figure,
    /// The server it is of, for CPU per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Server>,
    /// What the decision predicts at the keys and rate checked (`None`: not
    /// known).
    pub predicted: Option<f64>,
    /// Below its product's lowest search step, the range of CPU per request
    /// its runs allow (low, high), held to the tolerance as the prediction
    /// is: its product's runs do not say how much of its CPU is fixed there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_range: Option<[f64; 2]>,
    /// What the check's run measured (`None`: not known).
    pub measured: Option<f64>,
    /// `measured − predicted`, unrounded.
    pub difference: Option<f64>,
    /// The bound it is held to.
    pub tolerance: Tolerance,
    /// How it came out.
    pub outcome: Outcome,
}

/// What the check ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    /// The architecture, e.g. `redis in front of postgres` (cache-aside).
    pub architecture: String,
    /// Keys of the run.
    pub keys: u64,
    /// Why those keys: the stated ones, or the most whose data fits this
    /// machine's memory.
    pub keys_why: String,
    /// The cache's memory limit, bytes (`None`: no limit), the decision's
    /// chosen size per key times the keys checked.
    pub cache_memory_bytes: Option<u64>,
    /// What the cache held when measuring began (settled to its steady
    /// state, or warm with every key where it has no limit).
    pub cache_start: CacheStart,
    /// The rate of the run, req/s: the rate the decision's copy was
    /// measured at.
    pub rate_rps: f64,
}

/// A decision checked: `check.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Check {
    /// Version of kvlab that checked.
    pub kvlab_version: String,
    /// The decision's answer.
    pub decision: super::decide::Verdict,
    /// The stated keys of the decision.
    pub stated_keys: u64,
    /// The stated p99 goal, ms.
    pub p99_goal_ms: f64,
    /// What was run.
    pub checked: Checked,
    /// The tolerances each difference was held to.
    pub tolerances: Tolerances,
    /// Each figure, predicted and measured.
    pub figures: Vec<Compared>,
    /// `fail` when a figure is past its tolerance.
    pub verdict: Verdict,
    /// The host was busy during the run (other processes' CPU, steal, the
    /// load average), said: a figure past its tolerance there may be the
    /// host's, not the decision's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_busy: Vec<String>,
    /// The run itself.
    pub run: RunResult,
}

impl Check {
    /// The figures past their tolerance.
    pub fn past(&self) -> impl Iterator<Item = &Compared> {
        self.figures.iter().filter(|c| c.outcome == Outcome::Past)
    }
}
