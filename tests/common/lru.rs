//! An exact LRU simulation of a cache-aside load, to hold kvlab's carried
//! miss-ratio curve against: keys drawn by Zipf, a read that misses filling
//! the cache, a write invalidating its key; the cache loaded with every key
//! first, then warmed by the load until steady, then counted. One pass gives
//! every size at once (LRU stack distances, a Fenwick tree over access times).
#![allow(dead_code)]

/// Accesses that warm the cache before counting, and accesses counted.
const WARM: usize = 4_000_000;
const COUNTED: usize = 3_000_000;

/// The hit ratio of all reads of an LRU cache holding each of `shares` of
/// `keys` keys drawn by Zipf `theta`, `write_share` of accesses writes.
pub fn hit_ratios(keys: usize, theta: f64, write_share: f64, shares: &[f64]) -> Vec<f64> {
    let mut cdf = Vec::with_capacity(keys);
    let mut acc = 0.0;
    let total: f64 = (1..=keys).map(|r| (r as f64).powf(-theta)).sum();
    for r in 1..=keys {
        acc += (r as f64).powf(-theta) / total;
        cdf.push(acc);
    }
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut uniform = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let times = keys + WARM + COUNTED + 1;
    let mut marks = Fenwick(vec![0; times + 1]);
    const OUT: u32 = u32::MAX;
    let mut last = vec![OUT; keys];
    // Loaded with every key (in key order: popularity is by rank, so this
    // order is as good as any for a cache the load then reshapes).
    for (k, l) in last.iter_mut().enumerate() {
        *l = k as u32;
        marks.add(k, 1);
    }
    let mut now = keys;
    let mut hits_at = vec![0u64; keys + 1];
    let mut reads = 0u64;
    for i in 0..WARM + COUNTED {
        let u = uniform();
        let k = cdf.partition_point(|&c| c < u).min(keys - 1);
        let write = uniform() < write_share;
        let prev = last[k];
        if prev != OUT {
            marks.add(prev as usize, -1);
        }
        if write {
            last[k] = OUT;
            continue;
        }
        let counted = i >= WARM;
        if counted {
            reads += 1;
            if prev != OUT {
                // Items accessed since: its place in the LRU stack.
                let d = marks.prefix(now) - marks.prefix(prev as usize);
                hits_at[d as usize] += 1;
            }
        }
        marks.add(now, 1);
        last[k] = now as u32;
        now += 1;
    }
    let mut cum = vec![0u64; keys + 2];
    for d in 0..=keys {
        cum[d + 1] = cum[d] + hits_at[d];
    }
    shares
        .iter()
        .map(|s| {
            let items = ((s * keys as f64).round() as usize).min(keys);
            cum[items] as f64 / reads.max(1) as f64
        })
        .collect()
}

/// A Fenwick tree of marks over access times.
struct Fenwick(Vec<i32>);

impl Fenwick {
    fn add(&mut self, at: usize, delta: i32) {
        let mut i = at + 1;
        while i < self.0.len() {
            self.0[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at times `0..=at`.
    fn prefix(&self, at: usize) -> i64 {
        let mut i = (at + 1).min(self.0.len() - 1);
        let mut s = 0i64;
        while i > 0 {
            s += self.0[i] as i64;
            i -= i & i.wrapping_neg();
        }
        s
    }
}
