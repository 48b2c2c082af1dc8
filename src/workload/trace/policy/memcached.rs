//! memcached's segmented LRU (`-o lru_segmented`, on by default), as
//! `items.c` runs it. New items enter HOT; a read never relinks an item, it
//! only marks it: the first read FETCHED, a later one ACTIVE (`do_item_bump`);
//! an ACTIVE item in COLD moves to WARM at once (the asynchronous bump),
//! its flag cleared. The LRU maintainer (`lru_maintainer_juggle`, run here
//! after every insertion) pulls tails (`lru_pull_tail`): HOT's tail goes to
//! WARM if ACTIVE, else to COLD while HOT holds over `hot_lru_pct` 20% of
//! the items; WARM's tail is bumped back to WARM's head if ACTIVE (flag
//! cleared), else goes to COLD while WARM holds over `warm_lru_pct` 40%.
//! An insertion into a full cache evicts COLD's tail (pulling HOT's tail
//! first when COLD is empty, `do_item_alloc_pull`).
//!
//! Not modelled: the age limits (`hot_max_factor`, `warm_max_factor`: HOT
//! and WARM tails older than 0.2 and 2 times COLD's tail also go to COLD;
//! memcached's clock counts whole seconds), slab classes (one class: all
//! values one size) and dropped asynchronous bumps. Promoting a COLD item
//! on its first read instead (not memcached's rule) misses more: 39.3%
//! rather than 38.6% at Zipf 0.99 with 1% of 1M keys cached.

use super::Cache;
use super::lists::{Links, List};

/// The share of items HOT may hold, percent (`hot_lru_pct`).
pub(super) const HOT_LRU_PCT: usize = 20;
/// The share of items WARM may hold, percent (`warm_lru_pct`).
pub(super) const WARM_LRU_PCT: usize = 40;
/// Tail pulls per juggle at most (the maintainer's bound).
const JUGGLE_MAX: usize = 500;

/// A key's state: its segment in the low two bits (HOT 1, WARM 2, COLD 3;
/// 0: not resident), then its flags.
const HOT: u8 = 1;
const WARM: u8 = HOT + 1;
const COLD: u8 = WARM + 1;
const SEGMENT: u8 = 0b11;
/// The key was read since it was stored (`ITEM_FETCHED`).
const FETCHED: u8 = 1 << 2;
/// The key was read again (`ITEM_ACTIVE`).
const ACTIVE: u8 = 1 << 3;

/// A memcached slab class under the segmented LRU.
pub(super) struct Segmented {
    links: Links,
    /// HOT, WARM, COLD.
    lists: [List; 3],
    /// Each key's segment and flags.
    state: Vec<u8>,
    capacity: usize,
}

impl Segmented {
    /// An empty cache of `capacity` items over keys `0..n`.
    pub(super) fn new(n: usize, capacity: usize) -> Segmented {
        Segmented {
            links: Links::new(n),
            lists: [List::new(); 3],
            state: vec![0; n],
            capacity,
        }
    }

    /// Items in the three queues.
    fn items(&self) -> usize {
        self.lists.iter().map(List::len).sum()
    }

    /// Moves `key` from its segment to the head of `to` (flags kept; to
    /// its own segment's head when `to` is its segment).
    fn move_to(&mut self, key: u32, to: u8) {
        let s = &mut self.state[key as usize];
        let from = *s & SEGMENT;
        *s = (*s & !SEGMENT) | to;
        self.links.unlink(&mut self.lists[(from - 1) as usize], key);
        self.links
            .push_front(&mut self.lists[(to - 1) as usize], key);
    }

    /// A read's marks (`do_item_bump`): FETCHED, then ACTIVE; ACTIVE in
    /// COLD moves the item to WARM, the flag cleared (`do_item_update`).
    fn bump(&mut self, key: u32) {
        let s = self.state[key as usize];
        if s & ACTIVE != 0 {
            return;
        }
        if s & FETCHED == 0 {
            self.state[key as usize] = s | FETCHED;
        } else if s & SEGMENT == COLD {
            self.move_to(key, WARM);
        } else {
            self.state[key as usize] = s | ACTIVE;
        }
    }

    /// One `lru_pull_tail` of HOT or WARM with `limit` items: whether it
    /// moved an item.
    fn pull(&mut self, seg: u8, limit: usize) -> bool {
        let list = self.lists[(seg - 1) as usize];
        let Some(key) = list.tail() else {
            return false;
        };
        let s = self.state[key as usize];
        if s & ACTIVE != 0 {
            // Active items are rescued: HOT's to WARM, WARM's to its head.
            self.state[key as usize] = s & !ACTIVE;
            self.move_to(key, WARM);
            true
        } else if list.len() > limit {
            self.move_to(key, COLD);
            true
        } else {
            false
        }
    }

    /// The maintainer's pass (`lru_maintainer_juggle`): HOT's tail, else
    /// WARM's, until neither moves (COLD never holds an ACTIVE item here).
    fn juggle(&mut self) {
        let total = self.items();
        let (hot, warm) = (total * HOT_LRU_PCT / 100, total * WARM_LRU_PCT / 100);
        for _ in 0..JUGGLE_MAX {
            if !(self.pull(HOT, hot) || self.pull(WARM, warm)) {
                break;
            }
        }
    }

    /// Frees one item (`do_item_alloc_pull`): COLD's tail; with COLD empty,
    /// HOT's tail moves on first (WARM's when HOT is empty too).
    fn evict(&mut self) {
        loop {
            if let Some(key) = self.links.pop_back(&mut self.lists[2]) {
                self.state[key as usize] = 0;
                return;
            }
            if !self.pull(HOT, 0) && !self.pull(WARM, 0) {
                return;
            }
        }
    }
}

impl Cache for Segmented {
    fn read(&mut self, key: u32, _now_s: f64) -> bool {
        if self.state[key as usize] != 0 {
            self.bump(key);
            return true;
        }
        if self.items() >= self.capacity {
            self.evict();
        }
        self.state[key as usize] = HOT;
        self.links.push_front(&mut self.lists[0], key);
        self.juggle();
        false
    }

    fn invalidate(&mut self, key: u32) {
        let s = std::mem::take(&mut self.state[key as usize]);
        if s != 0 {
            let seg = (s & SEGMENT) as usize;
            self.links.unlink(&mut self.lists[seg - 1], key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(c: &Segmented, key: u32) -> u8 {
        c.state[key as usize] & SEGMENT
    }

    #[test]
    fn new_items_flow_hot_to_cold_and_active_ones_to_warm() {
        // 10 items: HOT keeps 2, WARM 4.
        let mut c = Segmented::new(100, 10);
        for k in 0..10 {
            assert!(!c.read(k, 0.0));
        }
        let lens = |c: &Segmented| c.lists.map(|l| l.len());
        assert_eq!(lens(&c), [2, 0, 8]);
        assert_eq!((seg(&c, 9), seg(&c, 0)), (HOT, COLD));
        // Key 8 (HOT) read twice turns ACTIVE; the next insertion pushes it
        // off HOT's tail into WARM, and key 0 (COLD's tail) out.
        assert!(c.read(8, 0.0) && c.read(8, 0.0));
        assert!(!c.read(10, 0.0));
        assert_eq!(seg(&c, 8), WARM);
        assert_eq!(c.state[0], 0);
        // A COLD key read twice moves to WARM on its second read.
        assert!(c.read(1, 0.0));
        assert_eq!(seg(&c, 1), COLD);
        assert!(c.read(1, 0.0));
        assert_eq!((seg(&c, 1), c.state[1] & ACTIVE), (WARM, 0));
        assert_eq!(lens(&c), [2, 2, 6]);
        c.invalidate(1);
        assert_eq!((lens(&c), c.state[1]), ([2, 1, 6], 0));
    }

    #[test]
    fn warm_bumps_active_items_and_sheds_the_rest_past_its_share() {
        let mut c = Segmented::new(100, 10);
        for k in 0..10 {
            c.read(k, 0.0);
        }
        // Keys 0..6 (COLD) read twice: WARM grows past 4, its extra tails
        // fall back to COLD.
        for k in 0..6 {
            c.read(k, 0.0);
            c.read(k, 0.0);
        }
        c.read(50, 0.0);
        assert!(c.lists[1].len() <= 4, "{}", c.lists[1].len());
        // A WARM item read again is bumped to WARM's head, not to COLD.
        let tail = c.lists[1].tail().unwrap();
        c.read(tail, 0.0);
        c.read(51, 0.0);
        assert_eq!(seg(&c, tail), WARM);
        assert_eq!(c.items(), 10);
    }
}
