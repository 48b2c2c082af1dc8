//! The workload model: which key each request touches, whether it reads or writes,
//! and the deterministic value every key holds (so every read can be verified).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};

pub mod batch;
pub mod churn;
pub mod consistency;
pub mod draws;
pub mod hot;
pub mod params;
pub mod profiles;
pub mod shape;
pub mod sizes;
pub mod timing;
pub mod trace;

pub use batch::BatchSizes;
pub use churn::ConnLife;
pub use hot::HotKeys;
pub use params::{KeyDistribution, Ratio, Stop, WritePolicy};
pub use shape::{DAY_S, RateShape};
pub use sizes::SizeDist;
pub use timing::{Arrivals, LinkDelay, SendSlack};

/// The kind of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Read a key.
    Get,
    /// Write a key.
    Set,
}

/// Picks keys for one connection. Owned by one worker; no sharing.
pub enum KeyGen {
    /// Uniform over `0..n`.
    Uniform {
        /// Key count.
        n: u64,
    },
    /// Zipfian over `0..n`, key 0 hottest.
    Zipf(Box<Zipf<f64>>),
    /// `next, next+1, …` wrapping from `end` back to `start`.
    Sequential {
        /// Next key id.
        next: u64,
        /// First id of this slice.
        start: u64,
        /// One past the last id of this slice.
        end: u64,
    },
    /// `next, next-step, …` down to the first key, then from the top again.
    Countdown {
        /// Next key id.
        next: u64,
        /// The first id again after the last.
        top: u64,
        /// Connections: the stride.
        step: u64,
    },
}

impl KeyGen {
    /// A generator for connection `conn` of `conns` over `keys` keys.
    /// Sequential generators give each connection its own contiguous slice.
    pub fn new(dist: KeyDistribution, keys: u64, conn: usize, conns: usize) -> KeyGen {
        match dist {
            KeyDistribution::Uniform => KeyGen::Uniform { n: keys },
            KeyDistribution::Zipf { theta } => match Zipf::new(keys as f64, theta) {
                Ok(z) => KeyGen::Zipf(Box::new(z)),
                Err(_) => KeyGen::Uniform { n: keys },
            },
            KeyDistribution::Sequential => {
                let (start, end) = slice_of(keys, conn, conns);
                KeyGen::Sequential {
                    next: start,
                    start,
                    end: end.max(start + 1).min(keys.max(1)),
                }
            }
            KeyDistribution::Countdown => {
                let top = keys.saturating_sub(1 + conn as u64);
                KeyGen::Countdown {
                    next: top,
                    top,
                    step: conns.max(1) as u64,
                }
            }
        }
    }

    /// The next key id.
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> u64 {
        match self {
            KeyGen::Uniform { n } => rng.next_u64() % *n,
            KeyGen::Zipf(z) => (z.sample(rng) as u64).saturating_sub(1),
            KeyGen::Sequential { next, start, end } => {
                let k = *next;
                *next += 1;
                if *next >= *end {
                    *next = *start;
                }
                k
            }
            KeyGen::Countdown { next, top, step } => {
                let k = *next;
                *next = match k.checked_sub(*step) {
                    Some(n) => n,
                    None => *top,
                };
                k
            }
        }
    }
}

/// The `[start, end)` slice of `0..keys` that connection `conn` of `conns` owns.
pub fn slice_of(keys: u64, conn: usize, conns: usize) -> (u64, u64) {
    let conns = conns.max(1) as u64;
    let conn = conn as u64;
    let base = keys / conns;
    let extra = keys % conns;
    let start = conn * base + conn.min(extra);
    let len = base + u64::from(conn < extra);
    (start, start + len)
}

/// Chooses GET or SET by the configured ratio.
#[derive(Clone, Copy, Debug)]
pub struct OpMix {
    /// `next_u64() < threshold` means SET.
    threshold: u64,
    all_set: bool,
}

impl OpMix {
    /// A mix with the given SET:GET weights.
    pub fn new(ratio: Ratio) -> OpMix {
        let f = ratio.set_fraction();
        OpMix {
            threshold: (f * u64::MAX as f64) as u64,
            all_set: ratio.get == 0,
        }
    }

    /// Whether it writes at all.
    pub fn writes(&self) -> bool {
        self.all_set || self.threshold > 0
    }

    /// The share of operations that write.
    pub fn write_share(&self) -> f64 {
        match self.all_set {
            true => 1.0,
            false => self.threshold as f64 / u64::MAX as f64,
        }
    }

    /// The next operation.
    #[inline]
    pub fn next(&self, rng: &mut SmallRng) -> OpKind {
        if self.all_set || (self.threshold > 0 && rng.next_u64() < self.threshold) {
            OpKind::Set
        } else {
            OpKind::Get
        }
    }
}

/// A seeded fast RNG for one worker.
pub fn rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}

/// Bytes that open every value: 16 hex digits of the key id, then 16 of the version.
const HEADER: usize = 32;

/// Smallest value that carries its whole version (stale reads are measured only
/// with values at least this large).
pub const VERSIONED_SIZE: usize = HEADER;

/// What a key takes in a server beside its value and its name, bytes: its
/// entry, its header and the allocator's rounding (a Redis key of kvlab's
/// with a 256 B value takes about 398 B). kvlab's one figure for the size of
/// its data in a server's memory: the managed servers' memory, the room a
/// cache it did not start must have, a decision's copy.
pub const KEY_OVERHEAD_BYTES: u64 = 120;

/// What a key takes in a server's memory, bytes: its value (`value_size`,
/// a mean), its name's prefix (`prefix_len`) and what a key takes beside
/// them (`overhead`: [`KEY_OVERHEAD_BYTES`], or a decision's method's). The
/// one formula for the size of kvlab's data in a server.
pub fn bytes_per_key(value_size: u64, prefix_len: u64, overhead: u64) -> u64 {
    value_size + prefix_len + overhead
}

/// Deterministic values: `hex(key id)`, `hex(version)` (0 for loaded values),
/// then a slice of a fixed pseudo-random block that starts at an offset derived
/// from the key; values shorter than the header keep its first bytes. Each
/// key's size is fixed (one size, or drawn once from a [`SizeDist`] by the
/// key). Cheap to write and verify.
#[derive(Clone, Debug)]
pub struct Values {
    /// The sizes a key hashes to (one entry: every value that size).
    sizes: std::sync::Arc<[u32]>,
    max: usize,
    min: usize,
    mean: f64,
    /// How the sizes were given (`256`, `100:80,1000:20`).
    label: String,
    block: Vec<u8>,
}

/// Value sizes as a workload holds them: one size (and no distribution), or
/// a distribution and its mean size.
pub fn sizes_of(d: SizeDist) -> (usize, Option<SizeDist>) {
    match d {
        SizeDist::Fixed { size } => (size, None),
        d => (Values::with(&d).mean().round() as usize, Some(d)),
    }
}

impl Values {
    /// Values of `size` bytes.
    pub fn new(size: usize) -> Values {
        Values::with(&SizeDist::Fixed { size })
    }

    /// Values whose sizes follow `dist`.
    pub fn with(dist: &SizeDist) -> Values {
        let sizes = dist.table();
        let max = sizes.iter().copied().max().unwrap_or(0) as usize;
        let min = sizes.iter().copied().min().unwrap_or(0) as usize;
        let mean = sizes.iter().map(|&x| f64::from(x)).sum::<f64>() / sizes.len().max(1) as f64;
        let mut block = Vec::with_capacity(max + 64);
        let mut x: u32 = 0x9e37_79b9;
        for _ in 0..max + 64 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            block.push(b'a' + (x % 26) as u8);
        }
        Values {
            sizes: sizes.into(),
            max,
            min,
            mean,
            label: dist.to_string(),
            block,
        }
    }

    /// How the sizes were given: `256`, or the distribution (`64-4096`).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The largest value in bytes (what buffers and columns must hold).
    pub fn size(&self) -> usize {
        self.max
    }

    /// A size to give buffers: the size, or for sizes by key twice the mean
    /// (at most the largest; a buffer grows when a value needs more).
    pub fn typical(&self) -> usize {
        match self.varied() {
            false => self.max,
            true => ((self.mean * 2.0) as usize).min(self.max),
        }
    }

    /// The smallest value in bytes.
    pub fn min(&self) -> usize {
        self.min
    }

    /// The mean value size in bytes (over keys).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Whether values have more than one size.
    pub fn varied(&self) -> bool {
        self.sizes.len() > 1
    }

    /// The size of `key`'s value, bytes.
    #[inline]
    pub fn size_of(&self, key: u64) -> usize {
        size_in(&self.sizes, self.max, key)
    }

    /// The size of each key's value, cheap to clone (no value bytes).
    pub fn sizer(&self) -> Sizer {
        Sizer {
            sizes: self.sizes.clone(),
            max: self.max,
        }
    }

    /// Whether every value carries its whole version.
    pub fn versioned(&self) -> bool {
        self.min >= VERSIONED_SIZE
    }

    fn header(key: u64, version: u64) -> [u8; HEADER] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut h = [0u8; HEADER];
        for i in 0..16 {
            h[i] = HEX[((key >> (60 - 4 * i)) & 0xf) as usize];
            h[16 + i] = HEX[((version >> (60 - 4 * i)) & 0xf) as usize];
        }
        h
    }

    fn body(&self, key: u64, size: usize) -> &[u8] {
        let off = (key % 64) as usize;
        &self.block[off..off + size.saturating_sub(HEADER)]
    }

    /// Appends the loaded value (version 0) of `key` to `out`.
    #[inline]
    pub fn write(&self, key: u64, out: &mut Vec<u8>) {
        self.write_version(key, 0, out);
    }

    /// Appends version `version` of the value of `key` to `out`.
    #[inline]
    pub fn write_version(&self, key: u64, version: u64, out: &mut Vec<u8>) {
        let size = self.size_of(key);
        let h = Self::header(key, version);
        out.extend_from_slice(&h[..size.min(HEADER)]);
        out.extend_from_slice(self.body(key, size));
    }

    /// The version `got` holds when it is a value of `key`; `None` when it is
    /// not (wrong key, size, body or a version that is not hex digits). Values
    /// too short to hold the whole version give the part they hold.
    #[inline]
    pub fn verify(&self, key: u64, got: &[u8]) -> Option<u64> {
        let size = self.size_of(key);
        if got.len() != size {
            return None;
        }
        let n = size.min(HEADER);
        let h = Self::header(key, 0);
        let k = n.min(16);
        if got[..k] != h[..k] || got[n..] != *self.body(key, size) {
            return None;
        }
        let mut version = 0u64;
        for &b in &got[k..n] {
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                _ => return None,
            };
            version = version << 4 | u64::from(d);
        }
        Some(version)
    }
}

/// The size of each key's value (see [`Values::sizer`]).
#[derive(Clone, Debug)]
pub struct Sizer {
    sizes: std::sync::Arc<[u32]>,
    max: usize,
}

impl Sizer {
    /// The size of `key`'s value, bytes.
    #[inline]
    pub fn size_of(&self, key: u64) -> usize {
        size_in(&self.sizes, self.max, key)
    }
}

#[inline]
fn size_in(sizes: &[u32], max: usize, key: u64) -> usize {
    if sizes.len() == 1 {
        return max;
    }
    // The top bits of a multiplicative hash: neighbouring keys spread.
    let slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize;
    sizes[slot % sizes.len()] as usize
}

/// Whether `key`'s last access before a run is taken as a write, for a load
/// whose `write_share` of accesses write: a fixed hash of the key under that
/// share, so that `write_share` of the keys are (the steady state of a load
/// whose reads and writes draw keys alike: each access is a write with that
/// chance, whatever came before it).
#[inline]
pub fn last_written(key: u64, write_share: f64) -> bool {
    let h = (key ^ 0x5851_f42d_4c95_7f2d).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let h = (h ^ (h >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    ((h ^ (h >> 29)) >> 11) as f64 / (1u64 << 53) as f64 <= write_share && write_share > 0.0
}

/// Writes `prefix` + decimal key id into `out` (cleared first).
#[inline]
pub fn write_key(prefix: &[u8], key: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(prefix);
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(key).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_roundtrip_and_differ() {
        for size in [1, 16, 17, 31, 32, 33, 256, 4096] {
            let v = Values::new(size);
            let mut a = Vec::new();
            v.write(42, &mut a);
            assert_eq!(a.len(), size);
            assert_eq!(v.verify(42, &a), Some(0));
            if size > 1 {
                assert_eq!(v.verify(43, &a), None);
            }
            let mut bad = a.clone();
            bad[0] ^= 1;
            assert_eq!(v.verify(42, &bad), None, "key digits");
            if size > 32 {
                let mut bad = a.clone();
                bad[size - 1] ^= 1;
                assert_eq!(v.verify(42, &bad), None, "body");
            }
            if size >= 17 {
                let mut bad = a.clone();
                bad[16] = b'x';
                assert_eq!(v.verify(42, &bad), None, "version digits");
            }
            assert_eq!(v.verify(42, &a[..size - 1]), None);
            if v.versioned() {
                let mut w = Vec::new();
                v.write_version(42, 0xdead_beef_1234, &mut w);
                assert_eq!(w.len(), size);
                assert_eq!(v.verify(42, &w), Some(0xdead_beef_1234));
                assert_eq!(v.verify(41, &w), None);
            }
        }
    }

    #[test]
    fn mixed_sizes_are_a_fixed_function_of_the_key_and_verified() {
        let v = Values::with(&"100:80,1000:15,10000:5".parse().unwrap());
        assert_eq!((v.min(), v.size()), (100, 10000));
        assert!(v.varied() && v.versioned());
        let mut seen = std::collections::BTreeMap::new();
        for key in 0..20_000u64 {
            let mut a = Vec::new();
            v.write_version(key, 7, &mut a);
            assert_eq!(a.len(), v.size_of(key));
            assert_eq!(v.verify(key, &a), Some(7));
            *seen.entry(a.len()).or_insert(0u32) += 1;
        }
        let share = |s: usize| f64::from(seen[&s]) / 20_000.0;
        assert!((share(100) - 0.8).abs() < 0.02, "{seen:?}");
        assert!((share(10000) - 0.05).abs() < 0.01, "{seen:?}");
        // A value of another key's size (or cut short) is wrong.
        let (small, big) = (0..)
            .find(|&k| v.size_of(k) == 100)
            .zip((0..).find(|&k| v.size_of(k) == 1000))
            .unwrap();
        let mut a = Vec::new();
        v.write(big, &mut a);
        assert_eq!(v.verify(small, &a), None);
        assert_eq!(v.verify(big, &a[..100]), None);
        assert!(
            (v.mean() - (80.0 + 150.0 + 500.0)).abs() < 5.0,
            "{}",
            v.mean()
        );
    }

    #[test]
    fn slices_cover_the_key_space() {
        let mut covered = 0;
        for c in 0..7 {
            let (s, e) = slice_of(100, c, 7);
            assert_eq!(s, covered);
            covered = e;
        }
        assert_eq!(covered, 100);
    }

    #[test]
    fn a_countdown_writes_each_key_once_coldest_first() {
        // 3 connections over 10 keys, each its quota (as the engine splits a
        // request count): every key once, in falling order across them.
        let mut r = rng(1);
        let mut seen: Vec<(u64, usize, u64)> = Vec::new();
        for c in 0..3 {
            let mut g = KeyGen::new(KeyDistribution::Countdown, 10, c, 3);
            let (a, b) = slice_of(10, c, 3);
            seen.extend((0..b - a).map(|i| (i, c, g.next(&mut r))));
        }
        // Round by round, connection by connection.
        seen.sort_unstable();
        let order: Vec<u64> = seen.iter().map(|x| x.2).collect();
        assert_eq!(order, vec![9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
        // Past its quota a generator starts from its top again.
        let mut g = KeyGen::new(KeyDistribution::Countdown, 4, 1, 2);
        let ks: Vec<u64> = (0..3).map(|_| g.next(&mut r)).collect();
        assert_eq!(ks, vec![2, 0, 2]);
    }

    #[test]
    fn generators_stay_in_range() {
        let mut r = rng(1);
        for d in [
            KeyDistribution::Uniform,
            KeyDistribution::Zipf { theta: 0.99 },
            KeyDistribution::Sequential,
            KeyDistribution::Countdown,
        ] {
            let mut g = KeyGen::new(d, 10, 1, 3);
            for _ in 0..1000 {
                assert!(g.next(&mut r) < 10);
            }
        }
        let mut g = KeyGen::new(KeyDistribution::Sequential, 10, 1, 3);
        let seq: Vec<u64> = (0..5).map(|_| g.next(&mut r)).collect();
        assert_eq!(seq, [4, 5, 6, 4, 5]);
    }

    #[test]
    fn mix_follows_ratio() {
        let mut r = rng(7);
        let m = OpMix::new(Ratio { set: 1, get: 3 });
        let sets = (0..100_000)
            .filter(|_| m.next(&mut r) == OpKind::Set)
            .count();
        assert!((24_000..26_000).contains(&sets), "{sets}");
        let m = OpMix::new(Ratio { set: 0, get: 1 });
        assert!((0..1000).all(|_| m.next(&mut r) == OpKind::Get));
        let m = OpMix::new(Ratio { set: 1, get: 0 });
        assert!((0..1000).all(|_| m.next(&mut r) == OpKind::Set));
    }

    #[test]
    fn keys_are_prefixed() {
        let mut k = Vec::new();
        write_key(b"kvlab:", 1234, &mut k);
        assert_eq!(k, b"kvlab:1234");
    }
}
