//! What a row knows of cache-aside and stale reads, merged over the
//! repetitions of one point (by histogram, never by averaging percentiles).

use crate::results::RunResult;
use crate::results::stats::{Leg, Percentiles, decode_histogram, new_histogram};

/// Stale reads at one point (repetitions merged).
#[derive(Clone, Debug, PartialEq)]
pub struct StaleFigures {
    /// Reads checked.
    pub checked: u64,
    /// Stale reads among them.
    pub stale: u64,
    /// How long stale values had been outdated, µs.
    pub age: Percentiles,
    /// Mean versions a stale read was behind.
    pub versions_mean: f64,
    /// Most versions a stale read was behind.
    pub versions_max: u64,
}

impl StaleFigures {
    /// Stale reads per million checked reads.
    pub fn per_million(&self) -> f64 {
        self.stale as f64 * 1e6 / self.checked.max(1) as f64
    }
}

/// Merges the stale-read figures of one point's runs (`None` when not tracked).
pub fn stale_figures(runs: &[&RunResult]) -> Option<StaleFigures> {
    let reports: Vec<_> = runs.iter().filter_map(|r| r.consistency.as_ref()).collect();
    let first = reports.first()?;
    // Results written before the histogram was stored keep their percentiles.
    let age = match reports.iter().all(|c| c.stale_age_histogram.is_some()) {
        true => merged(
            reports
                .iter()
                .filter_map(|c| c.stale_age_histogram.as_deref()),
        ),
        false => first.stale_age_us,
    };
    let stale: u64 = reports.iter().map(|c| c.stale_reads).sum();
    let behind: f64 = reports
        .iter()
        .map(|c| c.versions_behind_mean * c.stale_reads as f64)
        .sum();
    Some(StaleFigures {
        checked: reports.iter().map(|c| c.checked_reads).sum(),
        stale,
        age,
        versions_mean: behind / stale.max(1) as f64,
        versions_max: reports
            .iter()
            .map(|c| c.versions_behind_max)
            .max()
            .unwrap_or(0),
    })
}

/// Merges the histograms named by `encoded` (skipping any that do not decode).
fn merged<'a>(encoded: impl Iterator<Item = &'a str>) -> Percentiles {
    let mut h = new_histogram();
    for x in encoded.filter_map(|s| decode_histogram(s).ok()) {
        let _ = h.add(&x);
    }
    Percentiles::of(&h)
}

/// What a cache in front of a database did at one point (repetitions merged).
#[derive(Clone, Debug, PartialEq)]
pub struct AsideFigures {
    /// `invalidate` or `update`.
    pub policy: String,
    /// Cache kind (redis, valkey, memcached).
    pub cache: String,
    /// Expiry of cache entries, seconds.
    pub ttl_s: u32,
    /// The hit ratio of all reads ([`crate::results::aside::hit_ratio`]).
    pub hit_ratio: f64,
    /// Database reads the cache saved per second.
    pub db_reads_saved_per_s: f64,
    /// Database reads made per second (cache misses, and reads around an
    /// unreachable cache).
    pub db_reads_per_s: f64,
    /// Latency of each leg (as [`Leg::ALL`]), µs; `None` for a leg never taken.
    pub legs: Vec<Option<Percentiles>>,
}

/// Merges the cache-aside figures of one point's runs (`None` without a cache).
pub fn figures(runs: &[&RunResult]) -> Option<AsideFigures> {
    let first = runs.iter().find_map(|r| r.cache_aside.as_ref())?;
    let (mut hits, mut misses, mut bypassed, mut secs) = (0u64, 0u64, 0u64, 0f64);
    for r in runs {
        if let Some(a) = &r.cache_aside {
            hits += a.cache_hits;
            misses += a.cache_misses;
            bypassed += a.cache_bypassed;
            secs += r.totals.duration_s;
        }
    }
    let secs = secs.max(1e-9);
    Some(AsideFigures {
        policy: first.write_policy.clone(),
        cache: first.cache.kind.clone(),
        ttl_s: first.ttl_s,
        hit_ratio: crate::results::aside::hit_ratio(hits, misses, bypassed).unwrap_or(0.0),
        db_reads_saved_per_s: hits as f64 / secs,
        db_reads_per_s: (misses + bypassed) as f64 / secs,
        legs: Leg::ALL
            .iter()
            .map(|l| {
                let reports: Vec<_> = runs
                    .iter()
                    .filter_map(|r| r.cache_aside.as_ref()?.legs.get(l.name()))
                    .filter(|x| x.replies > 0)
                    .collect();
                if reports.is_empty() {
                    return None;
                }
                Some(match reports.iter().all(|x| x.histogram.is_some()) {
                    true => merged(reports.iter().filter_map(|x| x.histogram.as_deref())),
                    false => reports[0].latency_us,
                })
            })
            .collect(),
    })
}
