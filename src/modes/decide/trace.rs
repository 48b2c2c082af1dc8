//! `kvlab decide --trace`: the load taken from a trace (its keys, mix, value
//! sizes and skew), and the trace's own miss-ratio curve held against the
//! measured one.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::plan::Workload;
use crate::results::decide::{CurvePoint, TraceSummary, TraceTtl, db_load};
use crate::workload::trace::by_policy;
use crate::workload::trace::mrc::{self, TraceCurve};
use crate::workload::trace::policy::Policy;
use crate::workload::trace::{Modelled, feed};
use crate::workload::{KeyDistribution, Ratio};

/// Shares of the trace's keys its curve is drawn at.
const SHARES: [f64; 9] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0];
/// Shares of the trace's keys a policy other than LRU is simulated at.
const SIMULATED_SHARES: [f64; 16] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
];
/// A fitted Zipf exponent below this is taken as uniform popularity.
const UNIFORM_BELOW: f64 = 0.2;

/// What a trace said: its curve and what the load took from it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Traced {
    /// Its miss-ratio curve.
    pub curve: Knots,
    /// The summary the decision records.
    pub summary: TraceSummary,
}

/// Which of the workload's settings flags gave (the trace gives the rest).
pub struct Given {
    /// `--keys`.
    pub keys: bool,
    /// `--ratio`.
    pub ratio: bool,
    /// `--value-size`.
    pub sizes: bool,
    /// `--key-distribution`.
    pub distribution: bool,
}

/// Reads the trace at `path` and puts what `given` leaves open into `w`;
/// its curve is drawn for the cache's eviction `policy` at `rps` requests a
/// second and its TTLs (its TTL column, else the cache's `ttl_s`): exact
/// LRU without a TTL from stack distances, anything else simulated.
pub fn apply(
    path: &Path,
    w: &mut Workload,
    given: Given,
    (policy, rps, ttl_s): (Policy, f64, u32),
    stop: &AtomicBool,
) -> Result<Traced, UsageError> {
    let bad = |why: String| {
        UsageError::bad(
            "--trace",
            format!("{}: {why}", path.display()),
            "give a trace in the cache-trace CSV format (timestamp,key,key size,value size,client id,operation,TTL), plain or zstd",
        )
    };
    let input = feed::open(path).map_err(|e| bad(e.to_string()))?;
    let (scan, err) = feed::scan(input, stop);
    if let Some(e) = err {
        return Err(bad(e));
    }
    let (gets, sets) = (scan.modelled(Modelled::Get), scan.modelled(Modelled::Set));
    if gets == 0 {
        return Err(bad(match scan.first_malformed {
            Some((n, why)) => format!("no reads kvlab can send (line {n}: {why})"),
            None => "no reads kvlab can send".into(),
        }));
    }
    let curve = mrc::curve(path, gets + sets, stop).map_err(bad)?;
    let ttl = (scan.with_ttl > 0 || ttl_s > 0).then_some(TraceTtl {
        lines_with_ttl: scan.with_ttl,
        cache_ttl_s: ttl_s,
    });
    let knots = match (policy, &ttl) {
        (Policy::Lru, None) => Knots::of(&curve),
        _ => Knots::simulated(
            path,
            (&curve, gets + sets),
            (policy, rps, f64::from(ttl_s)),
            stop,
        )
        .map_err(bad)?,
    };
    let mut taken = Vec::new();
    if !given.keys {
        w.keys = curve.distinct_keys.max(1);
        taken.push("keys".to_string());
    }
    if !given.ratio {
        w.ratio = ratio_of(gets, sets);
        taken.push("ratio".into());
    }
    if !given.sizes
        && let Some(d) = scan.size_dist()
    {
        w.set_sizes(d);
        taken.push("value sizes".into());
    }
    if !given.distribution {
        w.distribution = match curve.zipf {
            Some((theta, _)) if theta >= UNIFORM_BELOW => KeyDistribution::Zipf {
                theta: (theta * 100.0).round() / 100.0,
            },
            _ => KeyDistribution::Uniform,
        };
        taken.push("key distribution".into());
    }
    let summary = TraceSummary {
        file: path.display().to_string(),
        lines: scan.lines,
        distinct_keys: curve.distinct_keys,
        reads_counted: curve.reads,
        sample_rate: curve.sample_rate,
        zipf_theta: curve.zipf.map(|z| z.0),
        zipf_r2: curve.zipf.map(|z| z.1),
        taken,
        policy: (policy != Policy::Lru || ttl.is_some()).then(|| policy.to_string()),
        ttl,
    };
    Ok(Traced {
        curve: knots,
        summary,
    })
}

/// A trace's miss-ratio curve kept compact: its hit ratio at item counts
/// 3% apart (and every count below 34), linear between them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knots {
    /// Distinct keys of the trace.
    pub distinct_keys: u64,
    /// (items, hit ratio), items ascending from 0.
    pub points: Vec<(u64, f64)>,
}

impl Knots {
    /// The knots of `t`, up to its distinct keys.
    pub fn of(t: &TraceCurve) -> Knots {
        let mut items = vec![0u64];
        let mut x = 1.0_f64;
        while (x as u64) < t.distinct_keys {
            if items.last() != Some(&(x as u64)) {
                items.push(x as u64);
            }
            x = (x * 1.03).max(x + 1.0);
        }
        items.push(t.distinct_keys.max(1));
        let hits = t.hit_ratios(&items);
        Knots {
            distinct_keys: t.distinct_keys,
            points: items.into_iter().zip(hits).collect(),
        }
    }

    /// The knots of the trace at `path` (whose LRU pass `t` counted
    /// `modelled` reads and writes) under the `clock`'s policy, rate and TTL:
    /// one simulation at each of [`SIMULATED_SHARES`] of its keys.
    fn simulated(
        path: &Path,
        (t, modelled): (&TraceCurve, u64),
        clock: (Policy, f64, f64),
        stop: &AtomicBool,
    ) -> Result<Knots, String> {
        let keys = t.distinct_keys.max(1);
        let mut items: Vec<u64> = SIMULATED_SHARES
            .iter()
            .map(|s| (s * keys as f64).round() as u64)
            .collect();
        items.insert(0, 0);
        items.dedup();
        let hits = by_policy::hit_ratios(path, modelled, clock, &items, stop)?;
        Ok(Knots {
            distinct_keys: t.distinct_keys,
            points: items.into_iter().zip(hits).collect(),
        })
    }

    /// The hit ratio of a cache of `items` items on the trace.
    pub fn hit_ratio(&self, items: f64) -> f64 {
        let i = self.points.partition_point(|p| (p.0 as f64) < items);
        match (i.checked_sub(1).map(|j| self.points[j]), self.points.get(i)) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                a.1 + (b.1 - a.1) * (items - a.0 as f64) / (b.0 - a.0) as f64
            }
            (_, Some(b)) => b.1,
            (Some(a), None) => a.1,
            (None, None) => 0.0,
        }
    }
}

/// SETs to GETs in parts per thousand, reduced.
fn ratio_of(gets: u64, sets: u64) -> Ratio {
    let set = ((sets as f64 / (gets + sets) as f64) * 1000.0).round() as u32;
    let (set, get) = (set, 1000 - set);
    let g = gcd(set, get).max(1);
    Ratio {
        set: set / g,
        get: get / g,
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    match b {
        0 => a,
        _ => gcd(b, a % b),
    }
}

/// The trace's curve at the stated data: each share of the stated `keys`
/// held, with the cache `memory` that holds that share (bytes), and the
/// database reads it leaves at `rps` with `write_share` writes.
pub fn points(
    t: &Knots,
    keys: u64,
    memory: &dyn Fn(f64) -> f64,
    (rps, write_share): (f64, f64),
) -> Vec<CurvePoint> {
    SHARES
        .iter()
        .map(|&share| {
            let hit = at_share(t, keys, share);
            CurvePoint {
                cache_memory_bytes: memory(share) as u64,
                hit_ratio: hit,
                source: crate::results::decide::CurveSource::Trace,
                db_reads_per_s: db_load(rps, write_share, hit),
                trace_hit_ratio: None,
                share_of_keys: Some(share),
                measured_on_copy: None,
                before_held: None,
            }
        })
        .collect()
}

/// The trace's hit ratio for a cache holding `share` of `keys` keys (the
/// stated ones: the trace's own, or more where `--keys` says so).
pub fn at_share(t: &Knots, keys: u64, share: f64) -> f64 {
    t.hit_ratio(share.min(1.0) * keys as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_reduces_to_small_weights() {
        assert_eq!(ratio_of(95, 5), Ratio { set: 1, get: 19 });
        assert_eq!(ratio_of(1, 0), Ratio { set: 0, get: 1 });
        assert_eq!(ratio_of(2, 1), Ratio { set: 333, get: 667 });
    }
}
