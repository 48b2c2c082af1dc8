//! The reference policies: exact LRU, random eviction (the bound a sampled
//! policy falls to without a usable clock) and the optimal static cache (the
//! floor of misses).

use rand::rngs::SmallRng;

use super::Cache;
use super::lists::{Links, List, Resident};

/// Exact LRU: a list from the most to the least recently read key.
pub(super) struct Lru {
    links: Links,
    list: List,
    resident: Vec<bool>,
    capacity: usize,
}

impl Lru {
    /// An empty cache of `capacity` items over keys `0..n`.
    pub(super) fn new(n: usize, capacity: usize) -> Lru {
        Lru {
            links: Links::new(n),
            list: List::new(),
            resident: vec![false; n],
            capacity,
        }
    }
}

impl Cache for Lru {
    fn read(&mut self, key: u32, _now_s: f64) -> bool {
        if self.resident[key as usize] {
            let list = &mut self.list;
            self.links.unlink(list, key);
            self.links.push_front(list, key);
            return true;
        }
        if self.list.len() >= self.capacity
            && let Some(old) = self.links.pop_back(&mut self.list)
        {
            self.resident[old as usize] = false;
        }
        self.links.push_front(&mut self.list, key);
        self.resident[key as usize] = true;
        false
    }

    fn invalidate(&mut self, key: u32) {
        if std::mem::take(&mut self.resident[key as usize]) {
            self.links.unlink(&mut self.list, key);
        }
    }
}

/// Random eviction: a uniformly drawn resident key makes room.
pub(super) struct Random {
    resident: Resident,
    capacity: usize,
    rng: SmallRng,
}

impl Random {
    /// An empty cache of `capacity` items over keys `0..n`.
    pub(super) fn new(n: usize, capacity: usize, rng: SmallRng) -> Random {
        Random {
            resident: Resident::new(n, capacity),
            capacity,
            rng,
        }
    }
}

impl Cache for Random {
    fn read(&mut self, key: u32, _now_s: f64) -> bool {
        if self.resident.contains(key) {
            return true;
        }
        if self.resident.len() >= self.capacity {
            let victim = self.resident.draw(&mut self.rng);
            self.resident.remove(victim);
        }
        self.resident.insert(key);
        false
    }

    fn invalidate(&mut self, key: u32) {
        self.resident.remove(key);
    }
}

/// The optimal static cache: keys `0..capacity` (the most popular) are the
/// only ones it holds; one is filled by its first read and after a write.
pub(super) struct Optimal {
    held: Vec<bool>,
}

impl Optimal {
    /// An empty cache holding keys `0..capacity` of `0..n`.
    pub(super) fn new(n: usize, capacity: usize) -> Optimal {
        Optimal {
            held: vec![false; capacity.min(n)],
        }
    }
}

impl Cache for Optimal {
    fn read(&mut self, key: u32, _now_s: f64) -> bool {
        match self.held.get_mut(key as usize) {
            Some(h) => std::mem::replace(h, true),
            None => false,
        }
    }

    fn invalidate(&mut self, key: u32) {
        if let Some(h) = self.held.get_mut(key as usize) {
            *h = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hits of `reads` (a negative key: a write of its negation).
    fn hits<C: Cache>(c: &mut C, reads: &[i64]) -> Vec<bool> {
        let mut out = Vec::new();
        for &k in reads {
            match k < 0 {
                true => c.invalidate((-k) as u32),
                false => out.push(c.read(k as u32, 0.0)),
            }
        }
        out
    }

    #[test]
    fn lru_evicts_the_least_recently_read_and_writes_drop_keys() {
        let mut c = Lru::new(10, 2);
        // 1 2 1 3: 2 goes (1 was read after it); then 1 hits, 2 misses.
        let h = hits(&mut c, &[1, 2, 1, 3, 1, 2]);
        assert_eq!(h, [false, false, true, false, true, false]);
        // A write drops 2: its next read misses, and room stays for 1.
        let h = hits(&mut c, &[-2, 2, 1]);
        assert_eq!(h, [false, true]);
    }

    #[test]
    fn random_holds_capacity_keys_and_optimal_only_the_first_ids() {
        let mut r = Random::new(100, 10, crate::workload::rng(2));
        for k in 0..100 {
            r.read(k, 0.0);
        }
        assert_eq!(r.resident.len(), 10);
        assert!(r.read(r.resident.at(0), 0.0));
        let mut o = Optimal::new(100, 3);
        let h = hits(&mut o, &[0, 0, 5, 5, 2, 2, -2, 2]);
        assert_eq!(h, [false, true, false, false, false, true, false]);
    }
}
