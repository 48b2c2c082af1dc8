//! Miss ratios by eviction policy: simulates a cache-aside cache of a given
//! number of items under the eviction policy of a real server (exact LRU,
//! random, Redis's sampled `allkeys-lru` and `allkeys-lfu`, memcached's
//! segmented LRU, the optimal static cache) over a stream of reads and
//! writes, and reports the hit ratio of the reads. Also the miss floor that
//! a TTL alone sets ([`ttl_floor`]).
//!
//! The model is kvlab's LRU curve's ([`super::mrc`]): a read that hits
//! counts a hit; a read that misses counts a miss and inserts its key
//! (evicting by the policy when the cache is full); a write drops its key.
//! Access `i` of the stream happens `i / rate` seconds in (the clock Redis's
//! policies rank keys by). Reads before `warmup` accesses only warm the
//! cache. Keys are dense ids `0..keys`, all values one size.
//!
//! # Layout
//! - this file: [`Policy`], [`Access`], [`Setup`], [`Outcome`],
//!   [`simulate`], [`zipf_stream`], [`zipf_probabilities`], [`ttl_floor`].
//! - `lists`: the intrusive lists and the resident set the caches share.
//! - `basic`: exact LRU, random eviction, the optimal static cache.
//! - `redis`: Redis's (and Valkey's) eviction pool, LRU clock and LFU counter.
//! - `memcached`: memcached's HOT/WARM/COLD segmented LRU.
//! - `settings`: [`Policy::of_settings`], the policy a server's settings name.

mod basic;
mod lists;
mod memcached;
mod redis;
mod settings;
#[cfg(test)]
mod tests;

use std::fmt;

use rand::Rng;
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};

use crate::workload::{KeyDistribution, KeyGen, OpKind, OpMix, Ratio};

/// An eviction policy, as a server runs it by default. Saved as its
/// server's name with its parameters (`{"policy": "allkeys-lfu", ...}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "kebab-case")]
pub enum Policy {
    /// Exact LRU: evicts the key read longest ago.
    #[default]
    Lru,
    /// Evicts a uniformly random resident key (FIFO gives about the same).
    Random,
    /// Redis's `allkeys-lru`: `samples` random keys (`maxmemory-samples`)
    /// feed a pool of 16 candidates ranked by idle time on a 1-second clock.
    #[serde(rename = "allkeys-lru")]
    RedisLru {
        /// Keys sampled per eviction (Redis's default 5, at most 64).
        samples: u32,
    },
    /// Redis's `allkeys-lfu`: the same pool, ranked by a logarithmic access
    /// counter that decays with idle minutes.
    #[serde(rename = "allkeys-lfu")]
    RedisLfu {
        /// Keys sampled per eviction (Redis's default 5, at most 64).
        samples: u32,
        /// `lfu-log-factor` (default 10): how slowly the counter grows.
        log_factor: u32,
        /// `lfu-decay-time` in minutes (default 1; 0: never decays).
        decay_time_min: u32,
    },
    /// memcached's segmented LRU (`-o lru_segmented`, the default): HOT
    /// (20% of items), WARM (40%) and COLD queues.
    SegmentedLru,
    /// The best static cache: the `capacity` most popular keys, which must
    /// be ids `0..capacity` (kvlab's Zipf keys: key 0 is the hottest).
    Optimal,
}

impl Policy {
    /// Redis's `allkeys-lru` with its default `maxmemory-samples` 5.
    pub const REDIS_LRU: Policy = Policy::RedisLru { samples: 5 };
    /// Redis's `allkeys-lfu` with its defaults: 5 samples, `lfu-log-factor`
    /// 10, `lfu-decay-time` 1 minute.
    pub const REDIS_LFU: Policy = Policy::RedisLfu {
        samples: 5,
        log_factor: 10,
        decay_time_min: 1,
    };
    /// Every policy, with the servers' defaults.
    pub const ALL: [Policy; 6] = [
        Policy::Lru,
        Policy::Random,
        Policy::REDIS_LRU,
        Policy::REDIS_LFU,
        Policy::SegmentedLru,
        Policy::Optimal,
    ];

    /// The server's own name of the policy (`allkeys-lru`, `segmented-lru`);
    /// [`fmt::Display`] adds its parameters.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Lru => "lru",
            Policy::Random => "random",
            Policy::RedisLru { .. } => "allkeys-lru",
            Policy::RedisLfu { .. } => "allkeys-lfu",
            Policy::SegmentedLru => "segmented-lru",
            Policy::Optimal => "optimal",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            Policy::RedisLru { samples } => write!(f, " (samples {samples})"),
            Policy::RedisLfu {
                samples,
                log_factor,
                decay_time_min,
            } => write!(
                f,
                " (samples {samples}, log_factor {log_factor}, decay_time_min {decay_time_min})"
            ),
            _ => Ok(()),
        }
    }
}

/// One access of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The key's id, in `0..keys`.
    pub key: u64,
    /// A write (drops the key) rather than a read.
    pub write: bool,
}

/// The simulated cache and its clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    /// Key ids lie in `0..keys` (at most `u32::MAX`).
    pub keys: u64,
    /// Items the cache holds (at least 1).
    pub capacity: usize,
    /// Accesses per second: access `i` happens at `i / rate` s. Only Redis's
    /// policies read the clock; at 1 req/s or less every access has its own
    /// second and `allkeys-lru` ranks keys by exact recency.
    pub rate: f64,
    /// Accesses that only warm the cache before reads count.
    pub warmup: u64,
    /// The seed of the policy's own draws (Redis's samples and counter).
    pub seed: u64,
    /// Seconds a filled key lives (0: no TTL). An expired key is removed at
    /// its expiry, as Redis's active expiry and memcached's LRU crawler
    /// reclaim it (a read finds it gone either way).
    pub ttl_s: f64,
}

/// The reads a simulation counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Reads after the warm-up.
    pub reads: u64,
    /// Those that hit.
    pub hits: u64,
}

impl Outcome {
    /// Hits per counted read (0 without reads).
    pub fn hit_ratio(&self) -> f64 {
        self.hits as f64 / self.reads.max(1) as f64
    }

    /// Misses per counted read (1 without reads).
    pub fn miss_ratio(&self) -> f64 {
        1.0 - self.hit_ratio()
    }
}

/// A simulated cache: reads that fill it on a miss, writes that drop keys.
trait Cache {
    /// A read of `key` at `now_s` seconds: whether it hit (a miss inserts).
    fn read(&mut self, key: u32, now_s: f64) -> bool;
    /// A write of `key`: drops it if resident.
    fn invalidate(&mut self, key: u32);
}

/// Runs `accesses` through a cache of `setup.capacity` items under
/// `policy`. An error names a bad setup or the first key id out of range.
pub fn simulate(
    policy: Policy,
    setup: &Setup,
    accesses: impl IntoIterator<Item = Access>,
) -> Result<Outcome, String> {
    simulate_with_ttls(policy, setup, accesses, &[])
}

/// [`simulate`] with each key's own TTL, seconds (`ttls[key]`, a trace's
/// TTL column); a key past the slice or at 0 lives `setup.ttl_s`.
pub fn simulate_with_ttls(
    policy: Policy,
    setup: &Setup,
    accesses: impl IntoIterator<Item = Access>,
    ttls: &[f32],
) -> Result<Outcome, String> {
    if setup.capacity == 0 {
        return Err("the cache must hold at least one item".into());
    }
    if setup.keys == 0 || setup.keys > u64::from(u32::MAX) {
        return Err(format!("{} keys: must be 1 to {}", setup.keys, u32::MAX));
    }
    if !(setup.rate.is_finite() && setup.rate > 0.0) {
        return Err(format!("a rate of {} req/s: must be positive", setup.rate));
    }
    let (n, cap) = (setup.keys as usize, setup.capacity);
    let rng = crate::workload::rng(setup.seed);
    match policy {
        Policy::Lru => run(basic::Lru::new(n, cap), setup, accesses, ttls),
        Policy::Random => run(basic::Random::new(n, cap, rng), setup, accesses, ttls),
        Policy::Optimal => run(basic::Optimal::new(n, cap), setup, accesses, ttls),
        Policy::SegmentedLru => run(memcached::Segmented::new(n, cap), setup, accesses, ttls),
        Policy::RedisLru { samples } => {
            let rank = redis::Rank::Lru;
            run(
                redis::Redis::new(n, cap, samples, rank, rng),
                setup,
                accesses,
                ttls,
            )
        }
        Policy::RedisLfu {
            samples,
            log_factor,
            decay_time_min,
        } => {
            let rank = redis::Rank::Lfu {
                log_factor,
                decay_time_min,
            };
            run(
                redis::Redis::new(n, cap, samples, rank, rng),
                setup,
                accesses,
                ttls,
            )
        }
    }
}

/// The simulation's loop over one cache.
fn run<C: Cache>(
    mut cache: C,
    setup: &Setup,
    accesses: impl IntoIterator<Item = Access>,
    ttls: &[f32],
) -> Result<Outcome, String> {
    let step = 1.0 / setup.rate;
    let mut out = Outcome::default();
    let mut ttl = Expiry::new(setup, ttls);
    for (i, a) in (0u64..).zip(accesses) {
        if a.key >= setup.keys {
            return Err(format!(
                "access {i}: key {} is not below {}",
                a.key, setup.keys
            ));
        }
        let (key, now) = (a.key as u32, i as f64 * step);
        ttl.expire(&mut cache, now);
        if a.write {
            cache.invalidate(key);
            ttl.dropped(key);
            continue;
        }
        let hit = cache.read(key, now);
        if !hit {
            ttl.filled(key, now);
        }
        if i >= setup.warmup {
            out.reads += 1;
            out.hits += u64::from(hit);
        }
    }
    Ok(out)
}

/// Each filled key's expiry: the fills' expiries, soonest first, and the
/// expiry of each key's newest fill.
struct Expiry<'a> {
    ttl_s: f64,
    /// Each key's own TTL (0 or past the slice: `ttl_s`).
    ttls: &'a [f32],
    /// (expiry, key) of each fill, soonest first.
    fills: std::collections::BinaryHeap<std::cmp::Reverse<(Time, u32)>>,
    /// The expiry of each key's newest fill (NaN: none live).
    newest: Vec<f64>,
}

/// A time in seconds, ordered (the simulation's times are finite).
#[derive(Clone, Copy, PartialEq)]
struct Time(f64);

impl Eq for Time {}

impl PartialOrd for Time {
    fn partial_cmp(&self, o: &Time) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Time {
    fn cmp(&self, o: &Time) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

impl<'a> Expiry<'a> {
    fn new(setup: &Setup, ttls: &'a [f32]) -> Expiry<'a> {
        let on = setup.ttl_s > 0.0 || ttls.iter().any(|&t| t > 0.0);
        Expiry {
            ttl_s: setup.ttl_s,
            ttls,
            fills: Default::default(),
            newest: match on {
                true => vec![f64::NAN; setup.keys as usize],
                false => Vec::new(),
            },
        }
    }

    /// Drops from `cache` every key whose fill expired by `now`.
    fn expire<C: Cache>(&mut self, cache: &mut C, now: f64) {
        while let Some(&std::cmp::Reverse((Time(at), key))) = self.fills.peek() {
            if at > now {
                break;
            }
            self.fills.pop();
            if self.newest[key as usize] == at {
                cache.invalidate(key);
                self.newest[key as usize] = f64::NAN;
            }
        }
    }

    /// The TTL of `key`'s fills (0: none).
    fn ttl_of(&self, key: u32) -> f64 {
        match self.ttls.get(key as usize) {
            Some(&t) if t > 0.0 => f64::from(t),
            _ => self.ttl_s,
        }
    }

    fn filled(&mut self, key: u32, now: f64) {
        if self.newest.is_empty() {
            return;
        }
        let ttl = self.ttl_of(key);
        if ttl > 0.0 {
            let at = now + ttl;
            self.fills.push(std::cmp::Reverse((Time(at), key)));
            self.newest[key as usize] = at;
        }
    }

    fn dropped(&mut self, key: u32) {
        if !self.newest.is_empty() {
            self.newest[key as usize] = f64::NAN;
        }
    }
}

/// An endless stream of kvlab's own accesses: keys drawn by Zipf with
/// exponent `theta` over `0..keys` (`keys` at least 1; key 0 hottest),
/// `write_share` of them writes, drawn from `seed`.
pub fn zipf_stream(
    keys: u64,
    theta: f64,
    write_share: f64,
    seed: u64,
) -> impl Iterator<Item = Access> {
    key_stream(KeyDistribution::Zipf { theta }, keys, write_share, seed)
}

/// An endless stream of kvlab's own accesses: keys drawn by `dist` over
/// `0..keys`, `write_share` of them writes, drawn from `seed`.
pub fn key_stream(
    dist: KeyDistribution,
    keys: u64,
    write_share: f64,
    seed: u64,
) -> impl Iterator<Item = Access> {
    let mut rng: SmallRng = crate::workload::rng(seed);
    let mut keygen = KeyGen::new(dist, keys, 0, 1);
    let per_million = (write_share.clamp(0.0, 1.0) * 1e6).round() as u32;
    let mix = OpMix::new(Ratio {
        set: per_million,
        get: 1_000_000 - per_million,
    });
    std::iter::from_fn(move || {
        let key = keygen.next(&mut rng);
        let write = mix.next(&mut rng) == OpKind::Set;
        Some(Access { key, write })
    })
}

/// The probability of each of keys `0..keys` under Zipf with exponent
/// `theta` (key `i` has rank `i + 1`), summing to 1.
pub fn zipf_probabilities(keys: u64, theta: f64) -> Vec<f64> {
    let mut p: Vec<f64> = (1..=keys).map(|r| (r as f64).powf(-theta)).collect();
    let total: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= total);
    p
}

/// The miss ratio of an unlimited cache whose items expire `ttl_s` seconds
/// after they are written, under independent (Poisson) reads at `rate`
/// req/s where key `i` is read with probability `probabilities[i]`
/// (normalised if they do not sum to 1). Each miss fills its key for
/// `T = ttl_s`, during which its `λ_i T` reads hit, so
/// `miss = Σ p_i / (1 + λ_i T)` with `λ_i = p_i · rate`.
pub fn ttl_floor(probabilities: &[f64], rate: f64, ttl_s: f64) -> f64 {
    let total: f64 = probabilities.iter().sum();
    let miss: f64 = probabilities
        .iter()
        .map(|&p| p / (1.0 + p * rate * ttl_s.max(0.0)))
        .sum();
    miss / total.max(f64::MIN_POSITIVE)
}

/// A uniform index in `0..n` (`n > 0`).
#[inline]
fn below(rng: &mut SmallRng, n: usize) -> usize {
    ((u128::from(rng.next_u64()) * n as u128) >> 64) as usize
}

/// A uniform float in `[0, 1)`.
#[inline]
fn unit(rng: &mut SmallRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}
