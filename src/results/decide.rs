//! The answer for a stated load (`kvlab decide`) as data: the load as stated,
//! what kvlab measured instead and why, each architecture's cores, memory,
//! machines and monthly cost at the stated load, the cache's miss-ratio
//! curve, what a cache loss does, and the decision with its reason. Pure
//! functions turn measured rates into sizes and sizes into the decision.

use serde::{Deserialize, Serialize};

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
    /// Cores of one machine.
    pub machine_cores: f64,
    /// Memory of one machine, GiB.
    pub machine_gib: f64,
    /// Price of a core for an hour.
    pub price_core_hour: f64,
    /// Price of a GiB of memory for an hour.
    pub price_gib_hour: f64,
    /// The prices' currency, as stated (or that they are kvlab's defaults).
    pub currency: String,
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
}

/// What a decision took from a trace, and how its curve was computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// The trace file, as given.
    pub file: String,
    /// Its lines.
    pub lines: u64,
    /// Distinct keys of its reads and writes.
    pub distinct_keys: u64,
    /// Reads its curve counts (after the first fifth, which warms it).
    pub reads_counted: u64,
    /// The share of keys the curve followed: 1 exact LRU stack distances,
    /// less with SHARDS sampling.
    pub sample_rate: f64,
    /// The Zipf exponent fitted to its key popularity, and the fit's R².
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf_theta: Option<f64>,
    /// R² of that fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf_r2: Option<f64>,
    /// What the load took from it (`keys`, `ratio`, `value sizes`,
    /// `key distribution`): the rest came from flags given beside it.
    pub taken: Vec<String>,
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
    /// The rate of the fixed-rate runs (the cache-aside confirmation and the
    /// cache loss), req/s.
    pub rate: f64,
    /// Why that rate.
    pub rate_why: String,
}

/// One architecture at the stated load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Architecture {
    /// `database`, `cache-aside` or `cache`.
    pub name: String,
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
}

/// One point of the cache's miss-ratio curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The cache's memory at the stated data, bytes.
    pub cache_memory_bytes: u64,
    /// Hit ratio of all reads.
    pub hit_ratio: f64,
    /// `measured` (a settled cache-aside run) or `trace` (computed from it).
    pub source: String,
    /// Database reads per second it leaves at the stated rate.
    pub db_reads_per_s: f64,
    /// A measured point, with `--trace`: the trace's curve at the share of
    /// keys the cache held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_hit_ratio: Option<f64>,
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
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// `keep-cache`, `drop-cache`, `cache-only` or `cannot-meet`.
    pub answer: String,
    /// The sentence that justifies it from the numbers.
    pub because: String,
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

/// Hours in a month, for monthly costs.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// Machines and monthly cost at `load` of `servers`, each (cores, memory
/// bytes) on machines of its own (a database and a cache are not packed on
/// one machine).
pub fn sized(load: &StatedLoad, servers: &[(f64, u64)]) -> (u32, f64) {
    let mut machines = 0;
    let mut cost = 0.0;
    for &(cores, bytes) in servers {
        let gib = bytes as f64 / (1u64 << 30) as f64;
        machines += (cores / load.machine_cores)
            .ceil()
            .max((gib / load.machine_gib).ceil())
            .max(1.0) as u32;
        cost += (cores * load.price_core_hour + gib * load.price_gib_hour) * HOURS_PER_MONTH;
    }
    (machines, cost)
}

/// Database reads per second at `rps` with a cache of hit ratio `hit` in
/// front: the reads it misses and every write.
pub fn db_load(rps: f64, write_share: f64, hit: f64) -> f64 {
    rps * ((1.0 - write_share) * (1.0 - hit) + write_share)
}

/// The decision from the rows: the database alone, cache-aside and the cache
/// alone (any may be absent or outside the goal). Cache-aside is kept when
/// the database alone cannot meet the goal, or when it saves machines and at
/// least 10% of the cost; the cache alone only when nothing with a database
/// meets the goal.
pub fn decide(
    db: Option<&Architecture>,
    aside: Option<&Architecture>,
    cache: Option<&Architecture>,
) -> Answer {
    fn ok(a: Option<&Architecture>) -> Option<&Architecture> {
        a.filter(|a| a.within_goal)
    }
    let cost = |a: &Architecture| a.monthly_cost.unwrap_or(f64::INFINITY);
    let machines = |a: &Architecture| a.machines.unwrap_or(u32::MAX);
    let pays =
        |d: &Architecture, a: &Architecture| cost(a) < 0.9 * cost(d) && machines(a) < machines(d);
    let cores = |a: &Architecture| a.server_cores.map_or("?".into(), |c| format!("{c:.1}"));
    let money = |a: &Architecture| a.monthly_cost.map_or("?".into(), |c| format!("{c:.0}"));
    match (ok(db), ok(aside), ok(cache)) {
        (Some(d), Some(a), _) if pays(d, a) => Answer {
            answer: "keep-cache".into(),
            because: format!(
                "{} alone needs {} cores on {} machines for the load within the goal ({} a month); with the cache in front ({:.0}% of reads hit) {} cores on {} machines do, at {:.0}% of the cost",
                d.product,
                cores(d),
                machines(d),
                money(d),
                a.hit_ratio.unwrap_or(0.0) * 100.0,
                cores(a),
                machines(a),
                cost(a) * 100.0 / cost(d)
            ),
        },
        (Some(d), aside, _) => Answer {
            answer: "drop-cache".into(),
            because: match aside {
                Some(a) => format!(
                    "{} alone meets the goal with {} cores on {} machine(s) ({} a month); with the cache in front it would take {} machine(s) at {:.0}% of the cost: not enough saved to keep a second system and its stale reads",
                    d.product,
                    cores(d),
                    machines(d),
                    money(d),
                    machines(a),
                    cost(a) * 100.0 / cost(d)
                ),
                None => format!(
                    "{} alone meets the goal with {} cores ({} a month), and the cache in front does not meet it",
                    d.product,
                    cores(d),
                    money(d)
                ),
            },
        },
        (None, Some(a), _) => Answer {
            answer: "keep-cache".into(),
            because: format!(
                "{}; with the cache in front ({:.0}% of reads hit) the goal is met with {} cores ({} a month)",
                db.and_then(|d| d.why_not.clone())
                    .unwrap_or_else(|| "the database alone cannot meet the goal".into()),
                a.hit_ratio.unwrap_or(0.0) * 100.0,
                cores(a),
                money(a)
            ),
        },
        (None, None, Some(c)) => Answer {
            answer: "cache-only".into(),
            because: format!(
                "neither the database alone nor cache-aside meets the goal; {} alone does, with {} cores ({} a month), if the data may live in a cache (not durable as a database)",
                c.product,
                cores(c),
                money(c)
            ),
        },
        (None, None, None) => Answer {
            answer: "cannot-meet".into(),
            because: format!(
                "no architecture meets the goal here: {}",
                [db, aside, cache]
                    .into_iter()
                    .flatten()
                    .map(|a| format!(
                        "{}: {}",
                        a.name,
                        a.why_not.as_deref().unwrap_or("outside the goal")
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, within: bool, cores: f64, cost: f64) -> Architecture {
        Architecture {
            name: name.into(),
            product: name.into(),
            server_cores: Some(cores),
            memory_bytes: Some(1 << 30),
            machines: Some((cores / 2.0).ceil() as u32),
            monthly_cost: Some(cost),
            p99_ms: Some(1.0),
            within_goal: within,
            hit_ratio: Some(0.9),
            cache_memory_bytes: None,
            stale_reads_per_million: None,
            on_cache_loss: None,
            measured_from: String::new(),
            why_not: (!within).then(|| format!("{name} over the goal")),
        }
    }

    #[test]
    fn the_cache_is_kept_only_where_it_pays_and_every_case_has_an_answer() {
        let d = |w, c| row("database", w, 10.0, c);
        let a = |w, c| row("cache-aside", w, 4.0, c);
        let c = |w| row("cache", w, 2.0, 50.0);
        let answer = |db, aside, cache| decide(Some(&db), Some(&aside), Some(&cache)).answer;
        assert_eq!(
            answer(d(true, 1000.0), a(true, 400.0), c(true)),
            "keep-cache"
        );
        assert_eq!(answer(d(true, 100.0), a(true, 95.0), c(true)), "drop-cache");
        assert_eq!(
            answer(d(true, 100.0), a(false, 50.0), c(true)),
            "drop-cache"
        );
        assert_eq!(
            answer(d(false, 100.0), a(true, 500.0), c(true)),
            "keep-cache"
        );
        assert_eq!(
            answer(d(false, 100.0), a(false, 50.0), c(true)),
            "cache-only"
        );
        let none = decide(Some(&d(false, 1.0)), Some(&a(false, 1.0)), Some(&c(false)));
        assert_eq!(none.answer, "cannot-meet");
        assert!(
            none.because.contains("database: database over the goal"),
            "{}",
            none.because
        );
    }

    #[test]
    fn sizes_take_the_larger_of_cores_and_memory_in_machines() {
        let load = StatedLoad {
            rps: 1.0,
            p99_ms: 1.0,
            p50_ms: None,
            p999_ms: None,
            keys: 1,
            value_size: 1,
            ratio: "0:1".into(),
            distribution: "uniform".into(),
            write_share: 0.0,
            machine_cores: 8.0,
            machine_gib: 32.0,
            price_core_hour: 0.04,
            price_gib_hour: 0.005,
            currency: "USD".into(),
            rtt_ms: None,
            cache_rtt_ms: None,
            rtt_assumed: false,
            trace: None,
        };
        let (m, cost) = sized(&load, &[(20.0, 16 << 30)]);
        assert_eq!(m, 3);
        assert!((cost - (20.0 * 0.04 + 16.0 * 0.005) * 730.0).abs() < 1e-9);
        assert_eq!(sized(&load, &[(1.0, 100 << 30)]).0, 4);
        // A database and a cache each on machines of their own.
        assert_eq!(sized(&load, &[(1.0, 1 << 30), (1.0, 1 << 30)]).0, 2);
        assert!((db_load(1000.0, 0.05, 0.9) - 1000.0 * (0.95 * 0.1 + 0.05)).abs() < 1e-9);
    }
}
