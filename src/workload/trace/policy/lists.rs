//! The structures the simulated caches share, indexed by dense key ids with
//! no allocation per access: doubly-linked lists threaded through per-key
//! link arrays, and the resident set that Redis-style sampling draws from.

use rand::rngs::SmallRng;

/// No key: the end of a list, or a key not in the resident set.
pub(super) const NIL: u32 = u32::MAX;

/// One list's ends and length; its links live in a [`Links`].
#[derive(Clone, Copy, Debug)]
pub(super) struct List {
    head: u32,
    tail: u32,
    len: usize,
}

impl List {
    /// An empty list.
    pub(super) fn new() -> List {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    /// Keys in the list.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The key at the tail (the oldest), if any.
    pub(super) fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }
}

/// The links of lists over keys `0..n`: each key in at most one list.
pub(super) struct Links {
    prev: Vec<u32>,
    next: Vec<u32>,
}

impl Links {
    /// Links for keys `0..n`, none in a list.
    pub(super) fn new(n: usize) -> Links {
        Links {
            prev: vec![NIL; n],
            next: vec![NIL; n],
        }
    }

    /// Puts `k` (in no list) at the head of `l`.
    #[inline]
    pub(super) fn push_front(&mut self, l: &mut List, k: u32) {
        self.prev[k as usize] = NIL;
        self.next[k as usize] = l.head;
        match l.head {
            NIL => l.tail = k,
            h => self.prev[h as usize] = k,
        }
        l.head = k;
        l.len += 1;
    }

    /// Takes `k` out of `l`, which holds it.
    #[inline]
    pub(super) fn unlink(&mut self, l: &mut List, k: u32) {
        let (p, n) = (self.prev[k as usize], self.next[k as usize]);
        match p {
            NIL => l.head = n,
            p => self.next[p as usize] = n,
        }
        match n {
            NIL => l.tail = p,
            n => self.prev[n as usize] = p,
        }
        l.len -= 1;
    }

    /// Takes the tail of `l` out, if any.
    #[inline]
    pub(super) fn pop_back(&mut self, l: &mut List) -> Option<u32> {
        let k = l.tail()?;
        self.unlink(l, k);
        Some(k)
    }
}

/// The resident keys, in no order, for uniform draws: a vector with
/// swap-remove and each key's place in it.
pub(super) struct Resident {
    keys: Vec<u32>,
    at: Vec<u32>,
}

impl Resident {
    /// An empty set over keys `0..n`, with room for `capacity` keys.
    pub(super) fn new(n: usize, capacity: usize) -> Resident {
        Resident {
            keys: Vec::with_capacity(capacity.min(n)),
            at: vec![NIL; n],
        }
    }

    /// Keys resident.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether `k` is resident.
    #[inline]
    pub(super) fn contains(&self, k: u32) -> bool {
        self.at[k as usize] != NIL
    }

    /// Adds `k` (not resident).
    #[inline]
    pub(super) fn insert(&mut self, k: u32) {
        self.at[k as usize] = self.keys.len() as u32;
        self.keys.push(k);
    }

    /// Drops `k`; whether it was resident.
    #[inline]
    pub(super) fn remove(&mut self, k: u32) -> bool {
        let i = self.at[k as usize];
        if i == NIL {
            return false;
        }
        self.keys.swap_remove(i as usize);
        if let Some(&moved) = self.keys.get(i as usize) {
            self.at[moved as usize] = i;
        }
        self.at[k as usize] = NIL;
        true
    }

    /// The key at place `i` (below [`Resident::len`]).
    #[inline]
    pub(super) fn at(&self, i: usize) -> u32 {
        self.keys[i]
    }

    /// A uniformly random resident key (the set is not empty).
    #[inline]
    pub(super) fn draw(&self, rng: &mut SmallRng) -> u32 {
        self.keys[super::below(rng, self.keys.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of `l` from head to tail.
    fn walk(links: &Links, l: &List) -> Vec<u32> {
        let mut out = Vec::new();
        let mut k = l.head;
        while k != NIL {
            out.push(k);
            k = links.next[k as usize];
        }
        out
    }

    #[test]
    fn lists_push_unlink_and_pop() {
        let mut links = Links::new(8);
        let (mut a, mut b) = (List::new(), List::new());
        for k in [1, 2, 3, 4] {
            links.push_front(&mut a, k);
        }
        assert_eq!(walk(&links, &a), [4, 3, 2, 1]);
        links.unlink(&mut a, 3);
        assert_eq!((walk(&links, &a), a.len()), (vec![4, 2, 1], 3));
        assert_eq!(links.pop_back(&mut a), Some(1));
        for k in [4, 2] {
            links.unlink(&mut a, k);
            links.push_front(&mut b, k);
        }
        assert_eq!((walk(&links, &a), a.tail()), (vec![], None));
        assert_eq!(
            (walk(&links, &b), b.tail(), b.len()),
            (vec![2, 4], Some(4), 2)
        );
        let mut c = List::new();
        assert_eq!(links.pop_back(&mut c), None);
    }

    #[test]
    fn the_resident_set_swaps_out_and_draws_only_residents() {
        let mut r = Resident::new(10, 4);
        for k in [7, 3, 5] {
            r.insert(k);
        }
        assert!(r.remove(7));
        assert!(!r.remove(7));
        assert!(r.contains(3) && r.contains(5) && !r.contains(7));
        assert_eq!(r.len(), 2);
        let mut rng = crate::workload::rng(1);
        let mut seen = [0u32; 10];
        for _ in 0..1000 {
            seen[r.draw(&mut rng) as usize] += 1;
        }
        assert_eq!(seen.iter().sum::<u32>(), seen[3] + seen[5]);
        assert!(seen[3] > 400 && seen[5] > 400, "{seen:?}");
    }
}
