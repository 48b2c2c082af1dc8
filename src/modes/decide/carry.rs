//! The copy's measured hit ratios carried to the stated keys. A copy of
//! fewer keys drawn by the same Zipf law does not hold the same share of its
//! traffic in the same share of its keys: at more keys the head holds more
//! (Zipf 0.99, a cache of 9% of the keys: 71.3% at 100,000 keys, 75.7% at
//! 1,000,000). Each measured point is moved by the popularity model's
//! difference between the two key counts at the same share held (Che's
//! approximation, [`crate::workload::trace::che`]), so what the real cache did beyond the
//! model (its own eviction, writes in flight) is kept; the model's figure on
//! the copy is kept beside it as its check.

use std::cell::RefCell;
use std::collections::HashMap;

use super::measure::Measured;
use super::{Ask, trace};
use crate::results::RunResult;
use crate::results::decide::{CurvePoint, CurveSource, StatedLoad, db_load};
use crate::workload::params::KeyDistribution;
use crate::workload::trace::che;
use crate::workload::trace::policy::{Policy, Setup, key_stream, simulate};

/// The popularity model of one decision's load under the cache's eviction
/// policy, its figures remembered (a decision weighs the same key counts
/// many times over its sweeps).
pub struct Model {
    dist: KeyDistribution,
    /// The write share the copy was measured at.
    write_share: f64,
    /// The cache's eviction policy and the stated requests a second (the
    /// clock Redis's policies rank keys by).
    policy: (Policy, f64),
    /// Seconds each fill lives in the cache (`--cache-ttl`; 0: no TTL).
    ttl_s: f64,
    memo: RefCell<HashMap<(u64, u64), Option<f64>>>,
    /// Simulated hit ratios by (keys, items).
    simulated: RefCell<HashMap<(u64, u64), Option<f64>>>,
}

/// The eviction policy `load`'s curves are drawn for (exact LRU where none
/// was read) and its stated rate, the clock of Redis's policies.
pub fn policy_of(load: &StatedLoad) -> (Policy, f64) {
    let p = load.eviction.as_ref().map(|e| e.policy).unwrap_or_default();
    (p, load.rps)
}

/// The most keys a policy other than LRU is simulated over; at more, the
/// simulation's misses at the same share are scaled by Che's ratio between
/// the two key counts (Zipf 0.99, allkeys-lfu at 1,000,000 keys: within 0.2
/// points of the simulation there at 1%, 5% and 20%; the difference would
/// be 1.4 points off at 1%).
const SIMULATED_KEYS: u64 = 100_000;

/// How far a measured point may stand from the model of an LRU cache of the
/// items it held before it is taken as no LRU of them (its items read at one
/// instant of a short run, a cache that had not yet evicted): such a point is
/// carried by the model alone.
pub const OFF_MODEL: f64 = 0.08;

/// A hit ratio carried to the stated keys.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Carried {
    /// At the stated keys.
    pub hit: f64,
    /// The model's figure on the copy (`None`: the model does not know the
    /// distribution, and the measured figure is carried as it is).
    pub model_on_copy: Option<f64>,
}

impl Model {
    /// The model of keys drawn by `dist` with `write_share` writes, for a
    /// cache evicting by `policy` at `rps` requests a second.
    pub fn new(dist: &KeyDistribution, write_share: f64, policy: (Policy, f64)) -> Model {
        Model {
            dist: *dist,
            write_share,
            policy,
            ttl_s: 0.0,
            memo: RefCell::new(HashMap::new()),
            simulated: RefCell::new(HashMap::new()),
        }
    }

    /// The model of `ask`'s load (its keys' distribution, the cache's
    /// policy at the stated rate, and its `--cache-ttl`) with `write_share`
    /// writes, the share the copy was measured at.
    pub fn of(ask: &Ask, write_share: f64) -> Model {
        Model::new(
            &ask.plan.workload.distribution,
            write_share,
            policy_of(&ask.load),
        )
        .with_ttl(f64::from(ask.cache.ttl_s))
    }

    /// The model with fills that live `ttl_s` seconds (0: no TTL).
    pub fn with_ttl(mut self, ttl_s: f64) -> Model {
        self.ttl_s = ttl_s.max(0.0);
        self
    }

    /// The model's hit ratio of all reads for a cache of `items` of `keys`:
    /// Che's approximation for LRU (and for uniform keys, where a policy
    /// cannot tell keys apart), else the policy simulated; with a TTL, every
    /// policy simulated with it, and never above what a cache with room for
    /// every key keeps ([`che::ttl_bound`]).
    pub fn hit(&self, keys: u64, items: f64) -> Option<f64> {
        let at = (keys, items.round() as u64);
        if let Some(h) = self.memo.borrow().get(&at) {
            return *h;
        }
        let ttl = self.ttl_s > 0.0;
        let h = match (self.policy.0, self.dist) {
            (_, KeyDistribution::Zipf { .. } | KeyDistribution::Uniform) if ttl => self
                .simulated(keys, items)
                .zip(self.ceiling(keys))
                .map(|(h, c)| h.min(c)),
            (Policy::Lru, _) | (_, KeyDistribution::Uniform) => self.che(keys, items.round()),
            (_, KeyDistribution::Zipf { .. }) => self.simulated(keys, items),
            _ => None,
        };
        self.memo.borrow_mut().insert(at, h);
        h
    }

    /// With a TTL, the most a cache with room for every one of `keys` hits:
    /// the reads the TTL leaves ([`che::ttl_bound`]); 1 without a TTL.
    fn ceiling(&self, keys: u64) -> Option<f64> {
        if self.ttl_s <= 0.0 {
            return Some(1.0);
        }
        let read = 1.0 - self.write_share;
        let (miss, _) = che::ttl_bound(&self.dist, keys, self.policy.1 * read, self.ttl_s)?;
        Some(read * (1.0 - miss))
    }

    /// Che's approximation of an LRU cache of `items` of `keys`.
    fn che(&self, keys: u64, items: f64) -> Option<f64> {
        che::hit_ratio(&self.dist, keys, items, self.write_share)
    }

    /// The policy simulated over at most [`SIMULATED_KEYS`] keys holding the
    /// same share of them, carried to `keys` by Che's ratio between the two
    /// key counts.
    fn simulated(&self, keys: u64, items: f64) -> Option<f64> {
        let k = keys.clamp(1, SIMULATED_KEYS);
        let share = items / keys.max(1) as f64;
        let small = (share * k as f64).round();
        let sim = self.simulate(k, small as u64, keys);
        // With a TTL, Che's with it at each key count's own clock.
        let che = |keys: u64, items: f64, rate: f64| {
            let read = 1.0 - self.write_share;
            let ttl = (rate * read, self.ttl_s);
            che::hit_ratio_ttl(&self.dist, keys, items, self.write_share, ttl)
        };
        match k == keys {
            true => sim,
            false => sim
                .zip(che(keys, items.round(), self.policy.1))
                .zip(che(k, small, self.clock(k, keys)?))
                .map(|((sim, big), small)| self.scaled(sim, big, small)),
        }
    }

    /// The simulation's requests a second over `k` of the `stated` keys:
    /// the stated rate slowed to `k / stated` (a key stays as many seconds
    /// as it would among `stated` keys); with a TTL, slowed so that a key at
    /// each share of the keys is read as often as among `stated` keys (the
    /// TTL's misses are its reads times the TTL).
    fn clock(&self, k: u64, stated: u64) -> Option<f64> {
        let rate = match (self.ttl_s > 0.0, &self.dist) {
            (true, KeyDistribution::Zipf { theta }) => {
                let hot = che::hottest(&self.dist, stated)? / che::hottest(&self.dist, k)?;
                self.policy.1 * hot * (k as f64 / stated.max(1) as f64).powf(*theta)
            }
            _ => self.policy.1 * k as f64 / stated.max(1) as f64,
        };
        Some(rate.max(f64::MIN_POSITIVE))
    }

    /// `sim`, simulated at fewer keys than stated, carried to the stated
    /// keys: its misses (below the read share, the most a cache hits) times
    /// Che's at the stated keys (`big`) over Che's at the simulated (`small`).
    fn scaled(&self, sim: f64, big: f64, small: f64) -> f64 {
        let read = 1.0 - self.write_share;
        match read - small > 1e-9 {
            true => (read - (read - sim) * (read - big) / (read - small)).clamp(0.0, read),
            false => sim,
        }
    }

    /// The policy's hit ratio simulated over `k` of the distribution's keys
    /// with a cache of `items` at [`Model::clock`], warmed over two TTLs
    /// where that takes at most 24 passes of keys.
    fn simulate(&self, k: u64, items: u64, stated: u64) -> Option<f64> {
        if let Some(h) = self.simulated.borrow().get(&(k, items)) {
            return *h;
        }
        let rate = self.clock(k, stated)?;
        let warmup = match self.ttl_s > 0.0 {
            true => ((2.0 * self.ttl_s * rate) as u64).clamp(3 * k, 24 * k),
            false => 3 * k,
        };
        let setup = Setup {
            keys: k,
            capacity: (items as usize).max(1),
            rate,
            warmup,
            seed: 5,
            ttl_s: self.ttl_s,
        };
        let stream = key_stream(self.dist, k, self.write_share, 9).take((warmup + 5 * k) as usize);
        // Writes drop their keys in the simulation too: its hit ratio of
        // reads is the model's.
        let h = simulate(self.policy.0, &setup, stream)
            .ok()
            .map(|o| o.hit_ratio());
        self.simulated.borrow_mut().insert((k, items), h);
        h
    }

    /// `hit`, measured by the cache-aside run `r` on a copy of `copy` keys,
    /// carried to `stated` keys at the share of keys its cache held (`None`:
    /// the items it held are not known).
    pub fn carry_run(&self, r: &RunResult, hit: f64, copy: u64, stated: u64) -> Option<Carried> {
        let items = r.cache_aside.as_ref()?.working_set.as_ref()?.items as f64;
        Some(self.carry(hit, items / copy.max(1) as f64, copy, stated))
    }

    /// `measured` on a copy of `copy` keys whose cache held `share` of
    /// them, carried to `stated` keys at the same share (by the model alone
    /// where `measured` is more than [`OFF_MODEL`] from it).
    pub fn carry(&self, measured: f64, share: f64, copy: u64, stated: u64) -> Carried {
        let read = 1.0 - self.write_share;
        let share = share.clamp(0.0, 1.0);
        let on_copy = self.hit(copy, share * copy as f64);
        let at_stated = || self.hit(stated, share * stated as f64);
        let hit = match (copy == stated, on_copy) {
            (true, _) | (false, None) => measured,
            (false, Some(c)) => match at_stated() {
                Some(s) if (measured - c).abs() > OFF_MODEL => s,
                Some(s) => (measured + s - c).clamp(0.0, read.max(0.0)),
                None => measured,
            },
        };
        // A run shorter than the TTL saw none of its expiry.
        let hit = hit.min(self.ceiling(stated).unwrap_or(1.0));
        Carried {
            hit,
            model_on_copy: on_copy,
        }
    }
}

/// The spread of a cache-aside run's hit ratio over its seconds: the 10th
/// and 90th percentiles of the seconds with at least 100 reads (`None`:
/// fewer than three such seconds).
pub fn hit_spread(r: &RunResult) -> Option<[f64; 2]> {
    let mut per: Vec<f64> = r
        .timeline
        .iter()
        .filter(|s| s.span_s == 1)
        .filter_map(|s| {
            let c = s.cache.as_ref()?;
            let reads = c.hits + c.misses + c.bypassed;
            (reads >= 100).then(|| c.hits as f64 / reads as f64)
        })
        .collect();
    if per.len() < 3 {
        return None;
    }
    per.sort_by(f64::total_cmp);
    let at = |q: f64| per[((per.len() - 1) as f64 * q).round() as usize];
    Some([at(0.1), at(0.9)])
}

/// The miss-ratio curve at the stated data: each settled run measured on
/// the copy, each carried to the stated keys (where the copy has fewer),
/// then the model's points for a cache kvlab did not start (measured at one
/// size only) and, with `--trace`, the trace's own curve. A point's trace
/// figure is the trace's at the items the cache holds at the stated keys.
pub(super) fn curve(ask: &Ask, m: &Measured, model: &Model, per_key: f64) -> Vec<CurvePoint> {
    let (copy, stated) = (ask.plan.workload.keys.max(1), ask.load.keys.max(1));
    let l = &ask.load;
    let at_trace = |share: f64| {
        ask.trace
            .as_ref()
            .map(|t| trace::at_share(&t.curve, stated, share))
    };
    let point = |bytes: u64, hit: f64, source: CurveSource, share: Option<f64>| CurvePoint {
        cache_memory_bytes: bytes,
        hit_ratio: hit,
        source,
        db_reads_per_s: db_load(l.rps, l.write_share, hit),
        trace_hit_ratio: None,
        share_of_keys: share,
        measured_on_copy: None,
    };
    let base = cache_base(m);
    let held = held(m, false);
    let (mut measured, mut carried) = (Vec::new(), Vec::new());
    for c in &m.curve {
        let Some(a) = c.result.cache_aside.as_ref() else {
            continue;
        };
        let ws = a.working_set.as_ref();
        let used = ws.map(|w| w.memory_used_bytes);
        let bytes = provisioned(c.memory_mb, used, m.cache.bytes).unwrap_or(0);
        let share = ws.map(|w| w.items as f64 / copy as f64);
        let at = at_stated(bytes, base, per_key);
        let mut p = point(at, a.hit_ratio, CurveSource::Measured, share);
        match (share, copy == stated) {
            (share, true) => p.trace_hit_ratio = share.and_then(at_trace),
            (Some(sh), false) => {
                let k = model.carry(a.hit_ratio, sh, copy, stated);
                let mut q = point(at, k.hit, CurveSource::Carried, Some(sh));
                q.trace_hit_ratio = at_trace(sh);
                q.measured_on_copy = k.model_on_copy.map(|on| [a.hit_ratio, on]);
                carried.push(q);
            }
            (None, false) => {}
        }
        measured.push(p);
    }
    let mut points = [measured, carried].concat();
    match (&ask.trace, memory_of_items(&held)) {
        (Some(t), Some(memory)) => {
            let bytes =
                |share: f64| at_stated(memory(share * copy as f64) as u64, base, per_key) as f64;
            points.extend(trace::points(
                &t.curve,
                stated,
                &bytes,
                (l.rps, l.write_share),
            ));
        }
        // A cache kvlab did not start is measured at its one size: the rest
        // of the curve is the popularity model's, said as such.
        (None, Some(memory)) if ask.cache.cache.external.is_some() => {
            for share in [0.05, 0.15, 0.4] {
                let Some(hit) = model.hit(stated, share * stated as f64) else {
                    continue;
                };
                let bytes = at_stated(memory(share * copy as f64) as u64, base, per_key);
                points.push(point(bytes, hit, CurveSource::Model, Some(share)));
            }
        }
        _ => {}
    }
    points
}

/// Each settled curve run's (items held, cache memory), bytes; `limited`:
/// only the runs at a memory limit (a cache of no limit is measured by its
/// resident memory, which counts more than its limit does).
fn held(m: &Measured, limited: bool) -> Vec<(f64, f64)> {
    m.curve
        .iter()
        .filter(|c| !limited || c.memory_mb.is_some())
        .filter_map(|c| {
            let w = c.result.cache_aside.as_ref()?.working_set.as_ref()?;
            let used = Some(w.memory_used_bytes);
            let bytes = provisioned(c.memory_mb, used, m.cache.bytes)?;
            Some((w.items as f64, bytes as f64))
        })
        .collect()
}

/// The cache's memory holding nothing, bytes: the base of its memory for
/// the items it held over the measured curve's limits (`held`), fitted
/// ([`memory_of_items`]); at most half the smallest size, 0 where no fit.
fn base(held: &[(f64, f64)]) -> f64 {
    let smallest = held.iter().map(|h| h.1).fold(f64::INFINITY, f64::min);
    match fit(held) {
        Some((base, _)) if smallest.is_finite() => base.min(smallest / 2.0),
        _ => 0.0,
    }
}

/// The cache's memory holding nothing over the decision's curve `m`
/// ([`base`]), for the check's cache size.
pub(super) fn cache_base(m: &Measured) -> f64 {
    base(&held(m, true))
}

/// A cache of `bytes` on the copy, at `ratio` times its keys holding the
/// same share of them: its base memory (`base`, which holds no key) as is,
/// the rest times `ratio`. (Memory per key alone would carry a small
/// cache's base tenfold, and size it larger than what it held.)
pub(super) fn at_stated(bytes: u64, base: f64, ratio: f64) -> u64 {
    let base = base.clamp(0.0, bytes as f64);
    (base + (bytes as f64 - base) * ratio).round() as u64
}

/// The cache's memory for a number of items held, fitted to the measured
/// points' (items, memory): a base plus a size per item (least squares).
fn memory_of_items(held: &[(f64, f64)]) -> Option<impl Fn(f64) -> f64> {
    fit(held).map(|(base, per_item)| move |items: f64| base + per_item * items)
}

/// The least-squares line of memory on items held (`held`): (base, bytes
/// per item), the base at least 0; `None` without a positive size per item.
fn fit(held: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = held.len() as f64;
    let (mx, my) = (
        held.iter().map(|p| p.0).sum::<f64>() / n,
        held.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = held.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = held.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let per_item = match sxx > 0.0 {
        true => sxy / sxx,
        false => my / mx,
    };
    let base = (my - per_item * mx).max(0.0);
    (mx > 0.0 && per_item > 0.0).then_some((base, per_item))
}

/// The memory of a cache limited to `mb` MiB (`None`: no limit) for the
/// measured copy: the limit, or, with none, what the cache alone holding the
/// whole copy took (`full`), at least what was in use; `None`: not known.
pub(super) fn provisioned(mb: Option<u64>, used: Option<u64>, full: Option<u64>) -> Option<u64> {
    match (mb, full, used) {
        (Some(mb), _, _) => Some(mb << 20),
        (None, Some(f), u) => Some(f.max(u.unwrap_or(0))),
        (None, None, u) => u,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LRU: (Policy, f64) = (Policy::Lru, 10_000.0);

    #[test]
    fn a_zipf_copy_carried_to_more_keys_hits_more_and_uniform_keys_do_not_move() {
        let z = Model::new(&KeyDistribution::Zipf { theta: 0.99 }, 0.0, LRU);
        // The model's own figure on the copy carries to its figure at the
        // stated keys (issue 43: 71.3% at 100k keys → 75.7% at 1M).
        let c = z.carry(0.713, 0.09, 100_000, 1_000_000);
        assert!((c.hit - 0.757).abs() < 0.01, "{c:?}");
        assert!((c.model_on_copy.unwrap() - 0.713).abs() < 0.01, "{c:?}");
        // A cache that did 2 points worse than the model keeps its 2 points.
        let worse = z.carry(0.693, 0.09, 100_000, 1_000_000);
        assert!((c.hit - worse.hit - 0.02).abs() < 1e-9);
        let u = Model::new(&KeyDistribution::Uniform, 0.1, LRU);
        assert!((u.carry(0.3, 0.33, 1000, 1_000_000).hit - 0.3).abs() < 1e-6);
        // Never above the read share.
        let w = Model::new(&KeyDistribution::Zipf { theta: 0.99 }, 0.3, LRU);
        assert!(w.carry(0.69, 0.99, 1000, 1_000_000).hit <= 0.7 + 1e-12);
    }

    #[test]
    fn the_model_of_a_redis_lfu_cache_is_its_simulation_carried_by_ches_key_counts() {
        // Issue 53's reference (1,000,000 Zipf 0.99 keys, a cache of 1%):
        // allkeys-lfu misses 36.76%, exact LRU 43.39%.
        let z = KeyDistribution::Zipf { theta: 0.99 };
        let lfu = Model::new(&z, 0.0, (Policy::REDIS_LFU, 10_000.0));
        let h = lfu.hit(1_000_000, 10_000.0).unwrap();
        assert!((h - 0.6324).abs() < 0.005, "{h}");
        let lru = Model::new(&z, 0.0, LRU).hit(1_000_000, 10_000.0).unwrap();
        assert!((lru - 0.5661).abs() < 0.01, "{lru}");
        // Within the simulated keys, the simulation itself; remembered.
        let small = lfu.hit(50_000, 500.0).unwrap();
        assert_eq!(lfu.hit(50_000, 500.0), Some(small));
        assert!(small > Model::new(&z, 0.0, LRU).hit(50_000, 500.0).unwrap());
    }

    #[test]
    fn with_a_ttl_the_model_follows_a_full_simulation_down_to_the_formulas_floor() {
        use crate::workload::trace::policy::{ttl_floor, zipf_probabilities, zipf_stream};
        // Issue 53: 1,000,000 Zipf 0.99 keys at 10k req/s, a 60 s TTL: an
        // unlimited cache still misses Σ pᵢ/(1 + λᵢT) = 23.3% of reads.
        let (keys, rps, ttl) = (1_000_000u64, 10_000.0, 60.0);
        let z = KeyDistribution::Zipf { theta: 0.99 };
        for policy in [Policy::Lru, Policy::REDIS_LFU] {
            let mut m = Model::new(&z, 0.0, (policy, rps));
            m.ttl_s = ttl;
            let floor = ttl_floor(&zipf_probabilities(keys, 0.99), rps, ttl);
            let all = m.hit(keys, keys as f64).unwrap();
            assert!(
                (1.0 - all - floor).abs() < 0.005,
                "{policy}: {all} against {floor}"
            );
            // Smaller caches: within half a point of the policy simulated over
            // all the keys with the TTL.
            for share in [0.01, 0.1] {
                let setup = Setup {
                    keys,
                    capacity: (share * keys as f64) as usize,
                    rate: rps,
                    warmup: 3 * keys,
                    seed: 5,
                    ttl_s: ttl,
                };
                let stream = zipf_stream(keys, 0.99, 0.0, 9).take(6 * keys as usize);
                let full = simulate(policy, &setup, stream).unwrap().hit_ratio();
                let model = m.hit(keys, share * keys as f64).unwrap();
                assert!(
                    (model - full).abs() < 0.005,
                    "{policy} at {share}: {model} against {full}"
                );
            }
        }
        // Without a TTL nothing moves; uniform keys keep the floor too.
        let u = |ttl_s| {
            let mut m = Model::new(&KeyDistribution::Uniform, 0.0, LRU);
            m.ttl_s = ttl_s;
            m.hit(200_000, 200_000.0).unwrap()
        };
        // 200,000 keys at 10k req/s: each read every 20 s; 60 s keeps 3 of 4.
        assert!((u(60.0) - 0.75).abs() < 0.01, "{}", u(60.0));
        assert_eq!(u(0.0), 1.0);
    }

    #[test]
    fn a_caches_base_is_carried_as_is_and_the_rest_per_key() {
        let mib = (1u64 << 20) as f64;
        // 1 MiB holding nothing, then 64 B an item: 7, 13 and 28 MiB hold
        // 98,304, 196,608 and 442,368 items.
        let held: Vec<(f64, f64)> = [7.0, 13.0, 28.0]
            .iter()
            .map(|mb: &f64| ((mb - 1.0) * mib / 64.0, mb * mib))
            .collect();
        assert!((base(&held) - mib).abs() < 1.0, "{}", base(&held));
        // At ten times the keys the same share: 1 + 6 × 10 MiB.
        assert_eq!(at_stated(7 << 20, mib, 10.0), 61 << 20);
        assert_eq!(at_stated(7 << 20, 0.0, 10.0), 70 << 20);
        // A base above the size (a fit gone wrong) is held to it; none fits
        // from one point.
        assert_eq!(at_stated(1 << 20, 8.0 * mib, 10.0), 1 << 20);
        assert_eq!(base(&held[..1]), 0.0);
        assert!(base(&[]) == 0.0);
    }
}
