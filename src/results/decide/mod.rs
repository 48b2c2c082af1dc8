//! The answer for a stated load (`kvlab decide`) as data: the load as stated,
//! what kvlab measured instead and why, each architecture's cores, memory,
//! machines and monthly cost at the stated load, the cache's miss-ratio
//! curve, what a cache loss does, and the decision with its reason. Pure
//! functions turn measured rates into sizes and sizes into the decision.

use serde::{Deserialize, Serialize};

pub use super::usage::Role;
pub use assumptions::{Assumptions, KVLAB};
pub use kinds::{ArchName, CurveSource, DataCopy, Eviction, Variable};
pub use trace::{TraceSummary, TraceTtl};

pub mod assumptions;
pub mod bill;
mod kinds;
pub mod said;
mod trace;

/// The load a team states, and the machines and prices it sizes with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatedLoad {
    /// Requests per second at peak.
    pub rps: f64,
    /// The p99 latency goal, ms.
    pub p99_ms: f64,
    /// A p50 goal, ms, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    /// A p99.9 goal, ms, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_ms: Option<f64>,
    /// Keys of the real data.
    pub keys: u64,
    /// Mean value size of the real data, bytes.
    pub value_size: usize,
    /// SET:GET ratio.
    pub ratio: String,
    /// How keys are drawn.
    pub distribution: String,
    /// Share of requests that write (from the ratio).
    pub write_share: f64,
    /// What the servers run on and how they are priced (`--deploy`): a
    /// decision saved before deployments were priced read own machines.
    #[serde(default)]
    pub deployment: bill::Deployment,
    /// Cores of one machine (`--deploy own`).
    pub machine_cores: f64,
    /// Memory of one machine, GiB.
    pub machine_gib: f64,
    /// Price of a core for an hour.
    pub price_core_hour: f64,
    /// Price of a GiB of memory for an hour.
    pub price_gib_hour: f64,
    /// The prices' currency, as stated (`USD` for kvlab's example prices).
    pub currency: String,
    /// The prices are kvlab's examples, not the team's.
    #[serde(default)]
    pub example_prices: bool,
    /// Price of one machine for a month (given, or its cores and GiB at the
    /// hourly prices for the policy's hours in a month).
    #[serde(default)]
    pub price_machine_month: f64,
    /// The servers of an architecture share machines (`--shared`); else each
    /// server is on whole machines of its own.
    #[serde(default)]
    pub shared: bool,
    /// Cores of a database given by URL, as stated (`--target-cores`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cores: Option<f64>,
    /// Cores of a cache given by URL, as stated (`--cache-cores`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_cores: Option<f64>,
    /// Application instances, one near cache each (`--app-instances`).
    #[serde(default = "one")]
    pub app_instances: u32,
    /// The round trip to the database the runs emulated, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// The round trip to the cache the runs emulated, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_rtt_ms: Option<f64>,
    /// The round trips were kvlab's assumption (one same-zone hop), not given.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rtt_assumed: bool,
    /// The trace the load was taken from (`--trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSummary>,
    /// How the load moves over a day (`--rate-shape`), `rps` being its peak:
    /// every architecture is sized at the peak and its cache lost there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_shape: Option<crate::workload::RateShape>,
    /// The cache's eviction policy the curves are drawn for (`None`: exact
    /// LRU, a decision saved before kvlab read the policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction: Option<Eviction>,
    /// The figures taken from the servers' own counters (`--observe`), each
    /// `--flag value: its source`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed: Vec<String>,
}

fn one() -> u32 {
    1
}

/// One server of an architecture at the stated load, sized by the one
/// method: its operations per second at the stated load divided by its
/// product's operations per core within the goal.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSize {
    /// Its part: `database`, `replica` or `cache`.
    pub role: Role,
    /// The product.
    pub product: String,
    /// Its operations per second at the stated load (from the run's
    /// measured shares: hits, near-cache hits, reads to replicas, writes,
    /// fills, invalidations).
    pub ops_per_s: f64,
    /// Its product's operations per second per core within the goal (its
    /// capacity search; `None`: its CPU not known and no cores stated).
    pub ops_per_core: Option<f64>,
    /// `ops_per_s / ops_per_core`, unrounded.
    pub cores: Option<f64>,
    /// Its memory at the stated data, bytes (`None`: not known).
    pub memory_bytes: Option<u64>,
    /// Whole machines it takes (`None` with `--shared`, or cores unknown).
    pub machines: Option<u32>,
    /// Its machines' cost a month.
    pub monthly_cost: Option<f64>,
    /// Where it runs on a catalogued deployment: its shape, count and bill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placed: Option<bill::Placed>,
    /// Why it is not priced on the deployment, where it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpriced: Option<String>,
    /// The model's check at the fixed-rate run: the cores its product's
    /// own capacity-search steps give at this server's operations per
    /// second in the run (CPU per operation falls as load rises, so never
    /// its cost per operation at capacity), unrounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_cores_at_run: Option<f64>,
    /// The cores the product's own runs allow at that run, low and high: one
    /// figure within its search's rates; below its lowest run, from that
    /// run's CPU per operation (no fixed cost) to its cores (all fixed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_range_at_run: Option<[f64; 2]>,
    /// The server CPU the fixed-rate run measured, cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_cores_at_run: Option<f64>,
}

/// What kvlab measured instead of the stated load, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scaled {
    /// Keys of the copy measured.
    pub keys: u64,
    /// The copy's share of the stated keys.
    pub factor: f64,
    /// Why this copy.
    pub why: String,
    /// What a key of it takes in a server's memory, bytes (0 in a decision
    /// written before it was).
    #[serde(default)]
    pub bytes_per_key: u64,
    /// The rate of the fixed-rate runs (the cache-aside confirmation and the
    /// cache loss), req/s.
    pub rate: f64,
    /// Why that rate.
    pub rate_why: String,
}

/// One architecture at the stated load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Architecture {
    /// Which architecture.
    pub name: ArchName,
    /// The products, e.g. `postgres` or `redis in front of postgres`.
    pub product: String,
    /// Server cores at the stated load (every server together).
    pub server_cores: Option<f64>,
    /// Server memory at the stated data, bytes (every server together).
    pub memory_bytes: Option<u64>,
    /// Machines of the stated shape.
    pub machines: Option<u32>,
    /// Cost of a month (730 hours) at the stated prices.
    pub monthly_cost: Option<f64>,
    /// p99 latency measured for it, ms (at the run named in `measured_from`).
    pub p99_ms: Option<f64>,
    /// Whether it meets the goal.
    pub within_goal: bool,
    /// The cache's hit ratio of all reads, where a cache is involved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_ratio: Option<f64>,
    /// The cache's memory at the stated data, bytes, where a cache is involved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_memory_bytes: Option<u64>,
    /// Stale reads per million reads measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_reads_per_million: Option<f64>,
    /// What a cache loss does to it, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cache_loss: Option<String>,
    /// The measurements its figures come from, and how they were carried to
    /// the stated load.
    pub measured_from: String,
    /// Why it cannot meet the goal, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    /// Each server, sized by the one method (the row's cores, memory,
    /// machines and cost are their sums).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerSize>,
    /// The rate the row's capacity search found within the goal on the
    /// servers measured, req/s, and its bracket (last pass, first fail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_rps: Option<f64>,
    /// The capacity's bracket: the last rate that passed, the first that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bracket: Option<[f64; 2]>,
    /// The model off by more than 25% somewhere: a server's CPU measured in
    /// the row's run against its product's own search steps at the same
    /// operations per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_warning: Option<String>,
    /// Its cores, memory and cost as a range (see [`Range`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
}

/// One point of the cache's miss-ratio curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The cache's memory at the stated data, bytes.
    pub cache_memory_bytes: u64,
    /// Hit ratio of all reads.
    pub hit_ratio: f64,
    /// Where it comes from.
    pub source: CurveSource,
    /// Database reads per second it leaves at the stated rate.
    pub db_reads_per_s: f64,
    /// With `--trace`: the trace's curve at the items the cache holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_hit_ratio: Option<f64>,
    /// The share of the stated keys the cache holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_keys: Option<f64>,
    /// A point carried to the stated keys: the hit ratio measured on the
    /// copy it comes from, and the popularity model's there (its check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_on_copy: Option<[f64; 2]>,
    /// Its hit ratio as measured (or carried) where the curve was held to
    /// its shape: rising with memory (a dip pooled with its neighbours), and
    /// never above what the cache's TTL allows at the stated load (the runs
    /// were shorter than the TTL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_held: Option<f64>,
}

/// What a cache restarted empty did at the scaled rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheLoss {
    /// The database's reads per second at their peak while the cache refilled.
    pub db_peak_rps: f64,
    /// The database's reads per second before the loss.
    pub db_before_rps: f64,
    /// Requests the database counted itself over the run, beside kvlab's
    /// (`None`: its counters could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_counted: Option<[u64; 2]>,
    /// p99 latency over the seconds after the loss, ms.
    pub p99_ms: f64,
    /// Requests that failed.
    pub errors: u64,
    /// Seconds from the loss until p99 is back within the goal (`None`: not
    /// within the run).
    pub seconds_to_recover: Option<f64>,
    /// Whether the database alone carries the stated load within the goal.
    pub database_alone_carries: bool,
    /// The loss was emulated (kvlab's own keys deleted from a cache it did
    /// not start, which kept running), not a restart.
    #[serde(default)]
    pub emulated: bool,
    /// The rate of the run it was measured at, req/s (the figures above are
    /// at this rate, not the stated one).
    #[serde(default)]
    pub rate_rps: f64,
    /// Why the loss could not be made, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_error: Option<String>,
    /// The second the cache was lost at.
    #[serde(default)]
    pub at_s: i64,
    /// The run second by second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seconds: Vec<LossSecond>,
}

/// The answer itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Keep the cache in front of the database.
    KeepCache,
    /// The database alone does: drop the cache.
    DropCache,
    /// Only the cache alone meets the goal (the data in a cache only).
    CacheOnly,
    /// No architecture meets the goal.
    CannotMeet,
    /// What the answer rests on could not be measured (kvlab's own limit, a
    /// busy host): no answer is made.
    NotMeasured,
}

impl Verdict {
    /// As written in the JSON: `keep-cache`, `drop-cache`, ...
    pub fn name(self) -> &'static str {
        match self {
            Verdict::KeepCache => "keep-cache",
            Verdict::DropCache => "drop-cache",
            Verdict::CacheOnly => "cache-only",
            Verdict::CannotMeet => "cannot-meet",
            Verdict::NotMeasured => "not-measured",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// `keep-cache`, `drop-cache`, `cache-only`, `cannot-meet` or
    /// `not-measured`.
    pub answer: Verdict,
    /// The sentence that justifies it from the numbers.
    pub because: String,
    /// The rows' ranges give another answer at one end: a close call, said
    /// with what would settle it (`None`: the answer holds over the ranges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_call: Option<String>,
}

/// A row's figures as a range: the low end (the capacity search's bracket at
/// its top, the hit ratio's best seconds) and the high end (the bracket's
/// bottom, the hit ratio's worst seconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Range {
    /// Server cores, low and high.
    pub cores: Option<[f64; 2]>,
    /// Memory, bytes, low and high.
    pub memory_bytes: Option<[u64; 2]>,
    /// Monthly cost, low and high.
    pub monthly_cost: Option<[f64; 2]>,
}

/// Where the answer changes as one figure of the stated load moves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Flip {
    /// The figure moved.
    pub variable: Variable,
    /// The value at which the answer changes (the first with the new one).
    pub at: f64,
    /// The answer below it.
    pub from: Verdict,
    /// The answer from it on.
    pub to: Verdict,
    /// In words, e.g. "the cache starts to pay from 61,000 req/s".
    pub said: String,
}

/// The decision at one request rate of the sweep: each row's monthly cost
/// (`None`: not known or outside the goal) and the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatePoint {
    /// Requests per second.
    pub rps: f64,
    /// The answer at this rate.
    pub answer: Verdict,
    /// Each architecture's monthly cost at this rate, by row name, in the
    /// rows' order (`None`: outside the goal or not known).
    pub monthly_cost: Vec<(ArchName, Option<f64>)>,
}

/// One second of the cache-loss run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossSecond {
    /// Seconds since measuring began (the loss at `at_s`).
    pub second: i64,
    /// The database's reads per second.
    pub db_reads_per_s: f64,
    /// p99 latency of all requests, ms.
    pub p99_ms: f64,
}

/// The whole answer for a stated load.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Decision {
    /// Version of kvlab that measured.
    pub kvlab_version: String,
    /// The load as stated.
    pub load: StatedLoad,
    /// What was measured instead.
    pub scaled: Scaled,
    /// Every architecture weighed, one row each (one that cannot meet the
    /// goal says why).
    pub architectures: Vec<Architecture>,
    /// The cache's hit ratio by its memory.
    pub miss_ratio_curve: Vec<CurvePoint>,
    /// What a cache loss does.
    pub cache_loss: Option<CacheLoss>,
    /// Every extrapolation from the measured copy to the stated load.
    pub extrapolations: Vec<String>,
    /// The steps the host was busy in (other processes' CPU, steal, load),
    /// each said: their figures may be low.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_busy: Vec<String>,
    /// Where the answer changes as the rate (a hundredth to a hundred times
    /// the stated), the write share (0 to 90%) or the keys (a tenth to ten
    /// times) move (none: it holds over them).
    #[serde(default)]
    pub flips: Vec<Flip>,
    /// The hit ratio of all reads below which cache-aside costs more a month
    /// than the database alone at the stated load, its cache as chosen
    /// (`None`: a cost not known, or no hit ratio makes the cache cost less).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_even_hit_ratio: Option<f64>,
    /// Each row's monthly cost and the answer over rates from a hundredth to
    /// a hundred times the stated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_rate: Vec<RatePoint>,
    /// What kvlab removed from (or left in) the servers it did not start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleanup: Vec<super::cleanup::Cleaned>,
    /// What the decision assumed: kvlab's policy and method (a decision
    /// saved before it was written assumed [`KVLAB`]'s).
    #[serde(default)]
    pub assumptions: Assumptions,
    /// The answer.
    pub decision: Answer,
}

/// Bytes as said: `1.20 GiB`, `38.4 MiB`.
pub fn bytes(b: u64) -> String {
    let mib = b as f64 / (1u64 << 20) as f64;
    match mib >= 1024.0 {
        true => format!("{:.2} GiB", mib / 1024.0),
        false => format!("{mib:.1} MiB"),
    }
}

/// One production machine as a decision prices it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Its cores.
    pub cores: f64,
    /// Its memory, GiB.
    pub gib: f64,
}

impl Machine {
    /// Whole machines a server of `cores` and `gib` GiB takes: the larger of
    /// its cores and its memory in machines, at least one.
    pub fn machines(&self, cores: f64, gib: f64) -> u32 {
        (cores / self.cores)
            .ceil()
            .max((gib / self.gib).ceil())
            .max(1.0) as u32
    }
}

impl StatedLoad {
    /// Requests per second over the day: the peak's share the shape offers
    /// on average over one day (the peak when it is steady).
    pub fn day_mean_rps(&self) -> f64 {
        self.rps
            * self
                .rate_shape
                .map_or(1.0, |s| s.mean(0.0, crate::workload::DAY_S))
    }

    /// The machine it sizes with.
    pub fn machine(&self) -> Machine {
        Machine {
            cores: self.machine_cores,
            gib: self.machine_gib,
        }
    }
}

/// Database reads per second at `rps` with a cache of hit ratio `hit` in
/// front: the reads it misses and every write.
pub fn db_load(rps: f64, write_share: f64, hit: f64) -> f64 {
    rps * ((1.0 - write_share) * (1.0 - hit) + write_share)
}

#[cfg(test)]
mod tests;
