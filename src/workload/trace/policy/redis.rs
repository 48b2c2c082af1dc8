//! Redis's (and Valkey's) `allkeys-lru` and `allkeys-lfu`, as `evict.c`
//! runs them. Each eviction samples `maxmemory-samples` resident keys into
//! a pool of [`POOL_SIZE`] candidates kept in ascending score (a sampled key
//! enters while the pool has room or when it scores above the pool's lowest,
//! which then leaves); the pool's highest-scoring entry still resident is
//! evicted. Entries keep the score they had when sampled, and a key may sit
//! in the pool twice, as in Redis.
//!
//! The LRU score is the idle time on Redis's 24-bit clock of whole seconds
//! (`LRU_CLOCK_RESOLUTION` 1000 ms; keys read in the same second tie). The
//! LFU score is 255 minus the key's 8-bit logarithmic counter after its
//! decay by idle minutes (16-bit minute clock). Not modelled: the clock's
//! refresh at `hz` (up to 100 ms stale) and the hash table's walk that picks
//! samples (here: uniform draws).

use rand::rngs::SmallRng;

use super::lists::{NIL, Resident};
use super::{Cache, unit};

/// Candidates the eviction pool holds (`EVPOOL_SIZE`).
pub(super) const POOL_SIZE: usize = 16;
/// The most keys one sampling takes (Redis caps `maxmemory-samples` at 64).
const MAX_SAMPLES: usize = 64;
/// The LRU clock's mask: 24 bits of seconds (`LRU_CLOCK_MAX`).
const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;
/// A new key's LFU counter (`LFU_INIT_VAL`).
pub(super) const LFU_INIT_VAL: u32 = 5;

/// What a key's 24-bit field holds and the pool ranks by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rank {
    /// The LRU clock (seconds mod 2^24) of the key's last access.
    Lru,
    /// The minute of the last decrement (16 bits) and the counter (8 bits).
    Lfu {
        /// `lfu-log-factor`.
        log_factor: u32,
        /// `lfu-decay-time`, minutes (0: no decay).
        decay_time_min: u32,
    },
}

/// The eviction pool: `len` entries (score, key), ascending score.
struct Pool {
    entries: [(u64, u32); POOL_SIZE],
    len: usize,
}

impl Pool {
    /// Offers `key` with `score` (`evictionPoolPopulate`'s insertion).
    fn offer(&mut self, score: u64, key: u32) {
        let len = self.len;
        // The first entry not scoring below the key (or the first free one).
        let k = self.entries[..len]
            .iter()
            .position(|e| e.0 >= score)
            .unwrap_or(len);
        if len < POOL_SIZE {
            self.entries.copy_within(k..len, k + 1);
            self.entries[k] = (score, key);
            self.len += 1;
        } else if k > 0 {
            // Full: the lowest-scoring entry leaves.
            self.entries.copy_within(1..k, 0);
            self.entries[k - 1] = (score, key);
        }
    }

    /// Takes the highest-scoring entry out.
    fn pop(&mut self) -> Option<u32> {
        self.len = self.len.checked_sub(1)?;
        Some(self.entries[self.len].1)
    }
}

/// A Redis cache under `allkeys-lru` or `allkeys-lfu`.
pub(super) struct Redis {
    resident: Resident,
    /// Each key's 24-bit LRU/LFU field (meaningful while resident).
    field: Vec<u32>,
    pool: Pool,
    rank: Rank,
    samples: usize,
    capacity: usize,
    rng: SmallRng,
    /// The clock at the current access: seconds (LRU) or minutes (LFU),
    /// already masked to the field's width.
    clock: u32,
}

impl Redis {
    /// An empty cache of `capacity` items over keys `0..n`, sampling
    /// `samples` keys (1 to 64) per eviction.
    pub(super) fn new(n: usize, capacity: usize, samples: u32, rank: Rank, rng: SmallRng) -> Redis {
        Redis {
            resident: Resident::new(n, capacity),
            field: vec![0; n],
            pool: Pool {
                entries: [(0, NIL); POOL_SIZE],
                len: 0,
            },
            rank,
            samples: (samples as usize).clamp(1, MAX_SAMPLES),
            capacity,
            rng,
            clock: 0,
        }
    }

    /// The key's counter after decay (`LFUDecrAndReturn`); its field is
    /// left alone.
    fn lfu_decayed(&self, key: u32, decay_time_min: u32) -> u32 {
        let field = self.field[key as usize];
        let (ldt, counter) = (field >> 8, field & 255);
        let now = self.clock;
        // `LFUTimeElapsed`: the minute clock wraps once at most.
        let elapsed = match now >= ldt {
            true => now - ldt,
            false => 65535 - ldt + now,
        };
        let periods = elapsed.checked_div(decay_time_min).unwrap_or(0);
        counter.saturating_sub(periods)
    }

    /// The pool's score of `key`: idle seconds, or 255 minus its counter.
    fn score(&self, key: u32) -> u64 {
        match self.rank {
            Rank::Lru => {
                let lru = self.field[key as usize];
                // `estimateObjectIdleTime`, in seconds.
                u64::from(match self.clock >= lru {
                    true => self.clock - lru,
                    false => self.clock + (LRU_CLOCK_MAX - lru),
                })
            }
            Rank::Lfu { decay_time_min, .. } => {
                u64::from(255 - self.lfu_decayed(key, decay_time_min))
            }
        }
    }

    /// A read's update of the key's field (`updateLFU` or the LRU clock).
    fn touch(&mut self, key: u32) {
        self.field[key as usize] = match self.rank {
            Rank::Lru => self.clock,
            Rank::Lfu {
                log_factor,
                decay_time_min,
            } => {
                let c = self.lfu_decayed(key, decay_time_min);
                (self.clock << 8) | lfu_log_incr(c, log_factor, &mut self.rng)
            }
        };
    }

    /// Samples keys into the pool (`evictionPoolPopulate`): `samples`
    /// distinct resident keys, or all of them when fewer.
    fn populate(&mut self) {
        let n = self.resident.len();
        let mut drawn = [NIL; MAX_SAMPLES];
        let count = self.samples.min(n);
        for j in 0..count {
            let key = match n <= self.samples {
                true => self.resident.at(j),
                false => loop {
                    let k = self.resident.draw(&mut self.rng);
                    if !drawn[..j].contains(&k) {
                        break k;
                    }
                },
            };
            drawn[j] = key;
            let score = self.score(key);
            self.pool.offer(score, key);
        }
    }

    /// Makes room for one key (`performEvictions` for one key): the pool's
    /// best candidate still resident goes; entries of keys gone are dropped.
    fn evict(&mut self) {
        while self.resident.len() > 0 {
            self.populate();
            while let Some(key) = self.pool.pop() {
                if self.resident.remove(key) {
                    return;
                }
            }
        }
    }
}

/// `LFULogIncr`: the counter grows by one with probability
/// `1 / ((c − LFU_INIT_VAL) · log_factor + 1)`, saturating at 255.
pub(super) fn lfu_log_incr(c: u32, log_factor: u32, rng: &mut SmallRng) -> u32 {
    if c >= 255 {
        return 255;
    }
    let base = f64::from(c.saturating_sub(LFU_INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    c + u32::from(unit(rng) < p)
}

impl Cache for Redis {
    fn read(&mut self, key: u32, now_s: f64) -> bool {
        let secs = now_s as u64;
        self.clock = match self.rank {
            Rank::Lru => (secs & u64::from(LRU_CLOCK_MAX)) as u32,
            Rank::Lfu { .. } => ((secs / 60) & 65535) as u32,
        };
        if self.resident.contains(key) {
            self.touch(key);
            return true;
        }
        if self.resident.len() >= self.capacity {
            self.evict();
        }
        self.resident.insert(key);
        self.field[key as usize] = match self.rank {
            Rank::Lru => self.clock,
            Rank::Lfu { .. } => (self.clock << 8) | LFU_INIT_VAL,
        };
        false
    }

    fn invalidate(&mut self, key: u32) {
        self.resident.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool_keys(p: &Pool) -> Vec<(u64, u32)> {
        p.entries[..p.len].to_vec()
    }

    #[test]
    fn the_pool_keeps_the_best_sixteen_in_order() {
        let mut p = Pool {
            entries: [(0, NIL); POOL_SIZE],
            len: 0,
        };
        for k in 0..16u32 {
            p.offer(u64::from(k * 10), k);
        }
        // Full: a score tying the lowest or below it does not enter; a
        // higher one pushes the lowest out.
        p.offer(0, 99);
        assert_eq!(pool_keys(&p)[0], (0, 0));
        p.offer(55, 100);
        let keys = pool_keys(&p);
        assert_eq!(keys.len(), 16);
        assert_eq!(
            &keys[..6],
            &[(10, 1), (20, 2), (30, 3), (40, 4), (50, 5), (55, 100)]
        );
        p.offer(1000, 101);
        assert_eq!(pool_keys(&p)[15], (1000, 101));
        assert_eq!(p.pop(), Some(101));
        assert_eq!(p.pop(), Some(15));
    }

    #[test]
    fn lru_ranks_by_whole_seconds_and_evicts_the_idlest_sampled() {
        let mut r = Redis::new(10, 3, 5, Rank::Lru, crate::workload::rng(1));
        // Three keys read at 0, 1 and 2 s; all are sampled (fewer than 5):
        // the idlest, key 0, goes.
        for (k, t) in [(0, 0.0), (1, 1.0), (2, 2.0)] {
            assert!(!r.read(k, t));
        }
        assert!(r.read(0, 2.5));
        assert!(!r.read(3, 3.0));
        assert!(!r.resident.contains(1));
        assert_eq!(r.score(0), 1);
        // The clock wraps at 2^24 s: idle time still counts from the key.
        r.clock = 5;
        r.field[0] = LRU_CLOCK_MAX - 5;
        assert_eq!(r.score(0), 10);
    }

    #[test]
    fn lfu_counters_grow_logarithmically_and_decay_by_minute() {
        let mut rng = crate::workload::rng(3);
        // From 5 the first increment is certain; then 1 in 11 at factor 10.
        assert_eq!(lfu_log_incr(5, 10, &mut rng), 6);
        let ups: u32 = (0..110_000)
            .map(|_| lfu_log_incr(6, 10, &mut rng) - 6)
            .sum();
        assert!((9_000..11_000).contains(&ups), "{ups}");
        assert_eq!(lfu_log_incr(255, 0, &mut rng), 255);
        let lfu = Rank::Lfu {
            log_factor: 10,
            decay_time_min: 1,
        };
        let mut r = Redis::new(10, 2, 5, lfu, crate::workload::rng(1));
        r.read(0, 0.0);
        assert_eq!(r.field[0], LFU_INIT_VAL);
        r.read(0, 1.0);
        assert_eq!(r.field[0], 6);
        // Three minutes idle: 3 periods off when sampled, and on the read.
        r.clock = 3;
        assert_eq!((r.lfu_decayed(0, 1), r.score(0)), (3, 252));
        assert_eq!(r.lfu_decayed(0, 2), 5);
        assert_eq!(r.lfu_decayed(0, 0), 6);
        r.read(0, 180.0);
        assert_eq!(r.field[0] >> 8, 3);
        assert_eq!(r.field[0] & 255, 4);
    }
}
