//! What a trace says about a cache in front of a database: its miss-ratio
//! curve (the hit ratio of its reads for an LRU cache of each size, in items),
//! its distinct keys, and its skew (a Zipf exponent fitted to its key
//! popularity). The curve is exact (every read's LRU stack distance, counted
//! with a Fenwick tree over access times), or, for traces past
//! [`EXACT_MAX`] modelled lines, SHARDS: the same pass over the keys whose
//! hash falls in a fixed sample, distances scaled by the sample's rate
//! (Waldspurger et al., FAST '15).
//!
//! The cache is modelled as kvlab's cache-aside runs it: a read that misses
//! fills the cache, a write invalidates its key. Reads in the first
//! [`WARMUP_SHARE`] of the trace only warm it (kvlab's measured points are
//! settled caches).

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use super::{Modelled, feed, key_id};

/// The most modelled lines the exact pass takes; past it, SHARDS.
pub const EXACT_MAX: u64 = 16 << 20;
/// The share of the trace that only warms the modelled cache.
pub const WARMUP_SHARE: f64 = 0.2;
/// The most ranks the Zipf fit uses (the head, where counts are large).
const FIT_RANKS: usize = 1000;

/// What the pass over a trace found.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceCurve {
    /// Distinct keys of the modelled lines (reads and writes).
    pub distinct_keys: u64,
    /// Reads counted for the curve (after the warm-up).
    pub reads: u64,
    /// The share of keys the pass followed (1: exact).
    pub sample_rate: f64,
    /// The fitted Zipf exponent and the fit's R² (`None`: too few repeated
    /// keys to fit).
    pub zipf: Option<(f64, f64)>,
    /// `hits[d]`: counted reads whose stack distance was `d` items.
    hits: Vec<u64>,
}

impl TraceCurve {
    /// The hit ratio of an LRU cache holding `items` items.
    pub fn hit_ratio(&self, items: u64) -> f64 {
        let n = (items as usize).min(self.hits.len());
        let hits: u64 = self.hits[..n].iter().sum();
        hits as f64 / self.reads.max(1) as f64
    }

    /// [`TraceCurve::hit_ratio`] at each of `items` (ascending), in one pass.
    pub fn hit_ratios(&self, items: &[u64]) -> Vec<f64> {
        let (mut sum, mut at) = (0u64, 0usize);
        items
            .iter()
            .map(|&n| {
                let n = (n as usize).min(self.hits.len());
                while at < n {
                    sum += self.hits[at];
                    at += 1;
                }
                sum as f64 / self.reads.max(1) as f64
            })
            .collect()
    }
}

/// A Fenwick tree of marks over access times (1-indexed, its capacity a
/// power of two), grown as the pass goes.
struct Marks(Vec<u32>);

impl Default for Marks {
    fn default() -> Marks {
        Marks(vec![0; 1025])
    }
}

impl Marks {
    fn cap(&self) -> usize {
        self.0.len() - 1
    }

    /// Doubles the capacity: the new nodes below the last cover times not
    /// yet marked; the last covers them all.
    fn grow(&mut self) {
        let n = self.cap();
        let total = self.prefix(n - 1);
        self.0.resize(2 * n + 1, 0);
        self.0[2 * n] = total as u32;
    }

    fn add(&mut self, at: usize, delta: i32) {
        let mut i = at + 1;
        while i > self.cap() {
            self.grow();
        }
        while i <= self.cap() {
            self.0[i] = self.0[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at times `0..=at`.
    fn prefix(&self, at: usize) -> u64 {
        let mut i = (at + 1).min(self.cap());
        let mut s = 0u64;
        while i > 0 {
            s += u64::from(self.0[i]);
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// One key's place in the pass.
struct Seen {
    /// Lines (reads and writes) of the key.
    count: u32,
    /// Its last access time while in the modelled cache (`u32::MAX`: out).
    last: u32,
}

/// The modelled cache as the pass goes.
struct Pass {
    keys: HashMap<u64, Seen>,
    marks: Marks,
    /// Access times of followed keys so far.
    time: u32,
    /// Modelled lines seen; reads count from `counted_from`.
    line: u64,
    counted_from: u64,
    /// Keys followed: hash below this share of `u64::MAX`.
    threshold: u64,
    rate: f64,
    hits: Vec<u64>,
    reads: u64,
    /// Counted reads of every key, followed or not.
    all_reads: u64,
}

impl Pass {
    fn new(modelled: u64) -> Pass {
        let rate = match modelled > EXACT_MAX {
            true => EXACT_MAX as f64 / modelled as f64,
            false => 1.0,
        };
        Pass::sampled(modelled, rate)
    }

    /// A pass following the share `rate` of the keys.
    fn sampled(modelled: u64, rate: f64) -> Pass {
        Pass {
            keys: HashMap::new(),
            marks: Marks::default(),
            time: 0,
            line: 0,
            counted_from: (modelled as f64 * WARMUP_SHARE) as u64,
            threshold: (rate * u64::MAX as f64) as u64,
            rate,
            hits: Vec::new(),
            reads: 0,
            all_reads: 0,
        }
    }

    fn access(&mut self, key: &[u8], read: bool) {
        let h = key_id(key, u64::MAX);
        self.line += 1;
        let seen = self.keys.entry(h).or_insert(Seen {
            count: 0,
            last: u32::MAX,
        });
        seen.count = seen.count.saturating_add(1);
        let counted = read && self.line > self.counted_from;
        self.all_reads += u64::from(counted);
        if h > self.threshold {
            return;
        }
        self.reads += u64::from(counted);
        if seen.last != u32::MAX {
            let last = seen.last as usize;
            if counted {
                let between = self.marks.prefix(self.time as usize) - self.marks.prefix(last);
                let d = (between as f64 / self.rate) as usize;
                if self.hits.len() <= d {
                    self.hits.resize(d + 1, 0);
                }
                self.hits[d] += 1;
            }
            self.marks.add(last, -1);
            seen.last = u32::MAX;
        }
        if read {
            // A miss fills the cache; a hit moves the key to the top.
            self.marks.add(self.time as usize, 1);
            seen.last = self.time;
            self.time += 1;
        }
    }

    /// The curve. Sampled, the difference between the reads expected of
    /// the sample and those it got goes to the smallest distance
    /// (SHARDS-adj): a hot key in or out of the sample would otherwise move
    /// the curve's small sizes.
    fn finish(mut self) -> TraceCurve {
        if self.rate < 1.0 {
            let expected = (self.all_reads as f64 * self.rate).round() as u64;
            if self.hits.is_empty() {
                self.hits.push(0);
            }
            self.hits[0] = (self.hits[0] + expected).saturating_sub(self.reads);
            self.reads = expected;
        }
        let mut counts: Vec<u32> = self.keys.values().map(|s| s.count).collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        TraceCurve {
            distinct_keys: counts.len() as u64,
            reads: self.reads,
            sample_rate: self.rate,
            zipf: fit_zipf(&counts),
            hits: self.hits,
        }
    }
}

/// The curve of the trace at `path`, whose scan counted `modelled` reads
/// and writes. An error names what went wrong reading it.
pub fn curve(
    path: &std::path::Path,
    modelled: u64,
    stop: &AtomicBool,
) -> Result<TraceCurve, String> {
    let input = feed::open(path).map_err(|e| e.to_string())?;
    let mut pass = Pass::new(modelled);
    let err = feed::each_line(input, stop, |_, l| {
        if let Ok(l) = l {
            match l.modelled() {
                Modelled::Get => pass.access(l.key, true),
                Modelled::Set => pass.access(l.key, false),
                Modelled::Not => {}
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    Ok(pass.finish())
}

/// The Zipf exponent of key counts sorted from the most used: the slope of
/// log count against log rank over the head (counts of 5 or more, at most
/// [`FIT_RANKS`] ranks), and the fit's R².
fn fit_zipf(counts: &[u32]) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = counts
        .iter()
        .take(FIT_RANKS)
        .take_while(|&&c| c >= 5)
        .enumerate()
        .map(|(i, &c)| (((i + 1) as f64).ln(), f64::from(c).ln()))
        .collect();
    if pts.len() < 10 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    let slope = sxy / sxx;
    let r2 = match syy > 0.0 {
        true => sxy * sxy / (sxx * syy),
        false => 1.0,
    };
    Some((-slope, r2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass_of(ops: &[(&str, bool)]) -> Pass {
        let mut p = Pass::new(ops.len() as u64);
        p.counted_from = 0;
        for (k, read) in ops {
            p.access(k.as_bytes(), *read);
        }
        p
    }

    #[test]
    fn stack_distances_are_lru_distances() {
        // a b c a: a's second read has b and c above it (distance 2): a hit
        // from 3 items up. b after a write to it: a miss at every size.
        let p = pass_of(&[
            ("a", true),
            ("b", true),
            ("c", true),
            ("a", true),
            ("b", false),
            ("b", true),
            ("c", true),
        ]);
        assert_eq!(p.reads, 6);
        // c's second read: a and b were read after it (distance 2).
        assert_eq!(p.hits, vec![0, 0, 2]);
        let c = TraceCurve {
            distinct_keys: 3,
            reads: p.reads,
            sample_rate: 1.0,
            zipf: None,
            hits: p.hits,
        };
        assert_eq!(c.hit_ratio(2), 0.0);
        assert_eq!(c.hit_ratio(3), 2.0 / 6.0);
        assert_eq!(c.hit_ratio(1000), 2.0 / 6.0);
    }

    /// The curve of `reads` Zipf(0.9) reads over `keys` keys, following the
    /// share `rate` of them.
    fn zipf_curve(keys: usize, reads: usize, rate: f64) -> TraceCurve {
        let w: Vec<f64> = (1..=keys).map(|r| 1.0 / (r as f64).powf(0.9)).collect();
        let total: f64 = w.iter().sum();
        let mut cdf = Vec::with_capacity(keys);
        let mut acc = 0.0;
        for x in w {
            acc += x / total;
            cdf.push(acc);
        }
        let mut rng = crate::workload::rng(3);
        let mut p = Pass::sampled(reads as u64, rate);
        for _ in 0..reads {
            let u = (rand::Rng::next_u64(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
            let k = cdf.partition_point(|&c| c < u);
            p.access(format!("k{k}").as_bytes(), true);
        }
        p.finish()
    }

    #[test]
    fn a_sampled_curve_follows_the_exact_one() {
        let exact = zipf_curve(20_000, 400_000, 1.0);
        let sampled = zipf_curve(20_000, 400_000, 0.1);
        assert!(
            sampled.reads < exact.reads / 5,
            "{} of {}",
            sampled.reads,
            exact.reads
        );
        for items in [200, 1000, 4000, 10_000, 20_000] {
            let (e, s) = (exact.hit_ratio(items), sampled.hit_ratio(items));
            assert!(
                (e - s).abs() < 0.03,
                "{items} items: exact {e}, sampled {s}"
            );
        }
    }

    #[test]
    fn marks_grow_and_keep_their_sums() {
        let mut m = Marks::default();
        for t in 0..5000 {
            m.add(t, 1);
        }
        m.add(10, -1);
        assert_eq!(m.prefix(4999), 4999);
        assert_eq!(m.prefix(9), 10);
        assert_eq!(m.prefix(10), 10);
        assert_eq!(m.prefix(2500), 2500);
        assert_eq!(m.prefix(100_000), 4999);
    }

    #[test]
    fn a_zipf_popularity_fits_its_exponent() {
        let counts: Vec<u32> = (1..=2000)
            .map(|r| (1e6 / (r as f64).powf(0.9)) as u32)
            .collect();
        let (theta, r2) = fit_zipf(&counts).unwrap();
        assert!((theta - 0.9).abs() < 0.01, "{theta}");
        assert!(r2 > 0.99);
        assert_eq!(fit_zipf(&[1; 100]), None);
    }
}
