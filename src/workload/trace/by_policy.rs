//! A trace's miss-ratio curve under a cache's own eviction policy
//! ([`super::policy`]): the trace's reads and writes simulated once per
//! size, modelled as [`super::mrc`] models them (a read that misses fills
//! the cache, a write drops its key; the first [`WARMUP_SHARE`] of the trace
//! only warms it). Past [`SIMULATED_MAX`] modelled lines the pass follows a
//! fixed sample of the keys, by hash, and each size is scaled by the
//! sample's rate (SHARDS, as the LRU curve does). A key whose writes carry
//! a TTL (the trace's TTL column) lives its last one from each fill; the
//! others the cache's own TTL, if any.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use super::mrc::WARMUP_SHARE;
use super::policy::{Access, Policy, Setup, simulate_with_ttls};
use super::{Modelled, feed, key_id};

/// The most modelled lines one simulation takes; past it, a sample of keys.
pub const SIMULATED_MAX: u64 = 4 << 20;

/// The trace's accesses, keys numbered densely as first seen.
struct Accesses {
    accesses: Vec<Access>,
    /// Accesses before the counted part of the trace.
    warmup: u64,
    /// Distinct keys followed.
    keys: u64,
    /// The share of keys followed (1: all).
    rate: f64,
    /// Each key's last TTL of the trace, seconds (0: none).
    ttls: Vec<f32>,
}

/// Reads the modelled lines of the trace at `path` (`modelled` of them).
fn accesses(path: &std::path::Path, modelled: u64, stop: &AtomicBool) -> Result<Accesses, String> {
    let rate = match modelled > SIMULATED_MAX {
        true => SIMULATED_MAX as f64 / modelled as f64,
        false => 1.0,
    };
    let threshold = (rate * u64::MAX as f64) as u64;
    let counted_from = (modelled as f64 * WARMUP_SHARE) as u64;
    let mut ids: HashMap<u64, u32> = HashMap::new();
    let (mut out, mut warmup, mut line) = (Vec::new(), 0u64, 0u64);
    let mut ttls: Vec<f32> = Vec::new();
    let input = feed::open(path).map_err(|e| e.to_string())?;
    let err = feed::each_line(input, stop, |_, l| {
        let Ok(l) = l else { return };
        let write = match l.modelled() {
            Modelled::Get => false,
            Modelled::Set => true,
            Modelled::Not => return,
        };
        line += 1;
        let h = key_id(l.key, u64::MAX);
        if h > threshold {
            return;
        }
        let next = ids.len() as u32;
        let key = u64::from(*ids.entry(h).or_insert(next));
        if ttls.len() <= key as usize {
            ttls.resize(key as usize + 1, 0.0);
        }
        if write && l.ttl > 0 {
            ttls[key as usize] = l.ttl as f32;
        }
        warmup += u64::from(line <= counted_from);
        out.push(Access { key, write });
    });
    if let Some(e) = err {
        return Err(e);
    }
    Ok(Accesses {
        accesses: out,
        warmup,
        keys: ids.len() as u64,
        rate,
        ttls,
    })
}

/// The hit ratio of the reads of the trace at `path` (`modelled` reads and
/// writes) for a cache of each of `items` items under `policy`, its
/// accesses `rps` a second (the clock Redis's policies rank keys by, and
/// its TTLs count), each fill living its key's TTL in the trace, else
/// `ttl_s` (0: none).
pub fn hit_ratios(
    path: &std::path::Path,
    modelled: u64,
    (policy, rps, ttl_s): (Policy, f64, f64),
    items: &[u64],
    stop: &AtomicBool,
) -> Result<Vec<f64>, String> {
    let a = accesses(path, modelled, stop)?;
    if a.keys == 0 {
        return Ok(vec![0.0; items.len()]);
    }
    items
        .iter()
        .map(|&n| {
            let setup = Setup {
                keys: a.keys,
                capacity: ((n as f64 * a.rate).round() as usize).max(1),
                // The sample's accesses come `rate` times as often.
                rate: (rps * a.rate).max(f64::MIN_POSITIVE),
                warmup: a.warmup,
                seed: 1,
                ttl_s,
            };
            let accesses = a.accesses.iter().copied();
            match n {
                0 => Ok(0.0),
                _ => simulate_with_ttls(policy, &setup, accesses, &a.ttls).map(|o| o.hit_ratio()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_lru_simulated_over_a_trace_is_its_stack_distance_curve() {
        // A Zipf-like trace of 2,000 keys with one write in ten: the
        // simulation of exact LRU and the stack distances agree within a
        // few reads of 36,000. Stack distances count a few hits too many
        // with writes: a key pushed out by one that a write then drops
        // stays "in" the stack (read a, read b, write b, read a: a hit at
        // one item), where the cache evicted it (an independent LRU agrees
        // with the simulation: 560, 4,809, 15,872, 24,712 hits).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut out = String::new();
        let lines = 50_000u64;
        let mut rng = crate::workload::rng(3);
        for i in 0..lines {
            let u = (rand::Rng::next_u64(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
            let key = (2000f64.powf(u) as u64).saturating_sub(1);
            let op = if i % 10 == 0 { "set" } else { "get" };
            out.push_str(&format!("{},k{key},3,100,1,{op},0\n", i / 1000));
        }
        std::fs::write(&path, &out).unwrap();
        let stop = AtomicBool::new(false);
        let exact = super::super::mrc::curve(&path, lines, &stop).unwrap();
        let items = [0, 1, 10, 100, 500, 2000];
        let sim = hit_ratios(&path, lines, (Policy::Lru, 1000.0, 0.0), &items, &stop).unwrap();
        for (n, h) in items.iter().zip(&sim) {
            let e = exact.hit_ratio(*n);
            assert!(*h <= e + 1e-12 && e - h < 1e-3, "{n}: {h} against {e}");
        }
        // LFU keeps the hot keys of a skewed trace better than LRU does.
        let lfu = hit_ratios(&path, lines, (Policy::REDIS_LFU, 1000.0, 0.0), &[20], &stop).unwrap();
        assert!(lfu[0] > exact.hit_ratio(20), "{lfu:?}");
    }

    #[test]
    fn a_keys_ttl_from_the_trace_expires_its_fills_and_the_caches_ttl_the_rest() {
        // Key a is set with a TTL of 1 s, key b without; both read 8 times
        // a second (the clock: 16 accesses a second, one of each in turn).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut out = String::from("0,a,1,100,1,set,1\n0,b,1,100,1,set,0\n");
        let lines = 20_000u64;
        for i in 0..lines {
            let key = ["a", "b"][i as usize % 2];
            out.push_str(&format!("{},{key},1,100,1,get,0\n", i / 16));
        }
        std::fs::write(&path, &out).unwrap();
        let stop = AtomicBool::new(false);
        let at = |ttl_s| {
            hit_ratios(&path, lines + 2, (Policy::Lru, 16.0, ttl_s), &[2], &stop).unwrap()[0]
        };
        // a misses one read in 8 (each fill lives 1 s: 7 reads hit), b none.
        assert!(
            (at(0.0) - (7.0 / 8.0 + 1.0) / 2.0).abs() < 1e-3,
            "{}",
            at(0.0)
        );
        // The cache's TTL of 0.5 s for b: it misses one in 4; a keeps its own.
        assert!(
            (at(0.5) - (7.0 / 8.0 + 3.0 / 4.0) / 2.0).abs() < 1e-3,
            "{}",
            at(0.5)
        );
    }
}
