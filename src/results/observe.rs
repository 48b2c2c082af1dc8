//! What `kvlab observe` saw (observation.json): each watched server's own
//! counters, second by second and over the window, what it holds, what the
//! watch itself sent, and the stated load derived from them, each figure with
//! its source — the flags `kvlab decide` takes.

use serde::{Deserialize, Serialize};

use crate::driver::observe::{Holding, Reading};

/// One watched server over the window.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Watched {
    /// `cache` or `database`.
    pub role: super::usage::Role,
    /// The product, e.g. `redis`.
    pub product: String,
    /// The server as shown (never its password).
    pub server: String,
    /// Its counters' change over the window (`None`: not known).
    pub window: Reading,
    /// Seconds the window's readings span.
    pub window_s: f64,
    /// Per second: reads and writes a second (`None`: not known that second).
    pub per_second: Vec<Second>,
    /// What it holds at the end.
    pub holding: Holding,
    /// Commands (or statements) the watch sent it.
    pub sent: u64,
    /// The watch's share of the commands the server counted in the window.
    pub own_share: Option<f64>,
    /// Figures not known and why (a command refused), and how some were found.
    pub notes: Vec<String>,
    /// How a cache evicts, read from its settings (`None`: a database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction: Option<super::decide::Eviction>,
}

/// One second of a server's counters, as rates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// Reads a second.
    pub reads: Option<f64>,
    /// Writes a second.
    pub writes: Option<f64>,
    /// Hits a second.
    pub hits: Option<f64>,
    /// Misses a second.
    pub misses: Option<f64>,
}

/// A value size summary of a sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValueSizes {
    /// Keys sampled.
    pub sampled: usize,
    /// Mean, bytes.
    pub mean: f64,
    /// Median, bytes.
    pub p50: u64,
    /// 90th percentile, bytes.
    pub p90: u64,
    /// 99th percentile, bytes.
    pub p99: u64,
    /// Largest, bytes.
    pub max: u64,
    /// As `--value-size` takes it: one size, or the sample's deciles weighted.
    pub flag: String,
}

/// The load observed, as a decision needs it (the partial load `kvlab decide
/// --observe` takes for each figure not given), each figure with where it
/// came from; `None`:
/// not known (its source says why).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObservedLoad {
    /// Requests a second at the peak (the application's: reads and writes):
    /// the 90th percentile of the window's per-second rates, so that one
    /// burst second does not set it (a watch of 5 s or more never takes its
    /// busiest second).
    pub rps: Option<f64>,
    /// Requests a second over the window.
    pub rps_mean: Option<f64>,
    /// Requests a second in the busiest second (said beside the peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps_busiest: Option<f64>,
    /// Where the rate comes from.
    pub rps_from: String,
    /// Writes' share of the requests.
    pub write_share: Option<f64>,
    /// The mix as `--ratio` takes it, SET:GET.
    pub ratio: Option<String>,
    /// Where the mix comes from.
    pub mix_from: String,
    /// Keys.
    pub keys: Option<u64>,
    /// Where the keys come from.
    pub keys_from: String,
    /// Value sizes.
    pub value_size: Option<ValueSizes>,
    /// Where the sizes come from.
    pub value_size_from: String,
    /// The Zipf exponent of the keys' popularity.
    pub zipf: Option<f64>,
    /// How it was found (fitted, and to what).
    pub skew_from: String,
    /// The cache's hit ratio of reads in the window, by its own counters.
    pub cache_hit_ratio: Option<f64>,
    /// The cache's items at the end.
    pub cache_items: Option<u64>,
    /// The cache's memory in use at the end, bytes, as its limit counts it.
    pub cache_memory_bytes: Option<u64>,
    /// The cache's resident memory at the end, bytes, where it says it (what
    /// kvlab measures of a cache it starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_resident_bytes: Option<u64>,
    /// The cache's memory limit, bytes (`None` or 0: none).
    pub cache_memory_limit: Option<u64>,
    /// The TTL the cache's fills live, seconds (`None`: most sampled keys
    /// carry none, or none was sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl_s: Option<u32>,
    /// How it was found.
    #[serde(default)]
    pub ttl_from: String,
}

/// One observed figure as `kvlab decide` takes it.
#[derive(Clone, Debug, PartialEq)]
pub enum Figure {
    /// A count: requests a second, keys.
    Count(u64),
    /// A figure written as its flag takes it: a ratio, sizes, a distribution.
    Text(String),
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Figure::Count(n) => write!(f, "{n}"),
            Figure::Text(t) => f.write_str(t),
        }
    }
}

impl ObservedLoad {
    /// The figures observed, by `kvlab decide`'s flag without dashes (`rps`,
    /// `ratio`, `keys`, `value_size`, `key_distribution`, `cache_ttl`); one
    /// not observed is left out.
    pub fn figures(&self) -> Vec<(&'static str, Figure)> {
        [
            ("rps", self.rps.map(|r| Figure::Count(r.round() as u64))),
            ("ratio", self.ratio.clone().map(Figure::Text)),
            ("keys", self.keys.map(Figure::Count)),
            (
                "value_size",
                self.value_size
                    .as_ref()
                    .map(|v| Figure::Text(v.flag.clone())),
            ),
            (
                "key_distribution",
                self.zipf.map(|z| Figure::Text(format!("zipf:{z}"))),
            ),
            (
                "cache_ttl",
                self.cache_ttl_s.map(|t| Figure::Count(u64::from(t))),
            ),
        ]
        .into_iter()
        .filter_map(|(id, f)| Some((id, f?)))
        .collect()
    }
}

/// An observation: the servers watched and the load they show.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Observation {
    /// kvlab's version.
    pub kvlab_version: String,
    /// The window asked for, seconds.
    pub seconds: f64,
    /// The window watched (shorter when Ctrl-C cut it).
    pub watched_s: f64,
    /// Each server watched.
    pub servers: Vec<Watched>,
    /// The stated load derived.
    pub load: ObservedLoad,
    /// The flags of `kvlab decide` the load gives (the goal left to the
    /// user): [`Observation::flags`], written for a reader; kvlab itself
    /// reads the typed servers and load, never these words.
    pub decide_flags: Vec<String>,
}

impl Observation {
    /// The servers as `kvlab decide` takes them back: each one's role and
    /// its URL as shown, with no password at all (decide reads it from the
    /// product's variable, e.g. `PGPASSWORD`, or it is written in by hand).
    pub fn decide_servers(&self) -> Vec<(super::usage::Role, String)> {
        self.servers
            .iter()
            .map(|s| (s.role, without_password(&s.server)))
            .collect()
    }

    /// The flags of `kvlab decide` for the observed load on its servers (the
    /// goal left out).
    pub fn flags(&self) -> Vec<String> {
        let mut f = Vec::new();
        for (role, url) in self.decide_servers() {
            let flag = match role {
                super::usage::Role::Cache => "--cache",
                _ => "--target",
            };
            f.extend([flag.to_string(), url]);
        }
        for (id, v) in self.load.figures() {
            f.extend([format!("--{}", id.replace('_', "-")), v.to_string()]);
        }
        f
    }
}

/// A URL as kvlab shows it (`user:***@`), with no password at all.
fn without_password(shown: &str) -> String {
    shown.replacen("//:***@", "//", 1).replacen(":***@", "@", 1)
}
