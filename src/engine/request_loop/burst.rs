//! A hot-key burst in the worker (`--hot-keys`): while it lasts, a read is
//! sent to one of the hot keys with the burst's share. Per read: one
//! comparison of times when a burst is set, and one draw while it lasts.

use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::SmallRng;

use crate::engine::clock::Timing;
use crate::workload::HotKeys;

/// The burst on the run's clock.
#[derive(Clone, Copy, Debug)]
pub(super) struct Burst {
    /// The share of reads it takes, as a threshold of 53 random bits.
    threshold: u64,
    /// The first hot key and how many there are.
    first: u64,
    keys: u64,
    /// When it starts and ends.
    from: Instant,
    to: Instant,
}

impl Burst {
    /// `hot` over a run of `keys` keys on `timing`'s clock.
    pub fn new(hot: &HotKeys, keys: u64, timing: &Timing) -> Burst {
        let from = timing.measure_start + Duration::from_secs_f64(hot.from_s);
        let far = from + Duration::from_secs(100 * 365 * 86_400);
        Burst {
            threshold: (hot.share * (1u64 << 53) as f64) as u64,
            first: hot.first_key(keys),
            keys: hot.keys,
            from,
            to: hot.for_s.map_or(far, |d| from + Duration::from_secs_f64(d)),
        }
    }

    /// The hot key a read at `now` goes to instead of the one drawn, if the
    /// burst takes it.
    #[inline]
    pub fn take(&self, now: Instant, rng: &mut SmallRng) -> Option<u64> {
        if now < self.from || now >= self.to || (rng.next_u64() >> 11) >= self.threshold {
            return None;
        }
        Some(self.first + rng.next_u64() % self.keys)
    }
}
