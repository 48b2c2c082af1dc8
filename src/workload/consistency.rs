//! Stale-read detection. Every written value carries a per-key version; the
//! [`VersionBoard`] knows, per key, the newest version whose write has completed.
//! A read is *stale* when it returns a version older than the newest version
//! whose write had completed before the read began.
//!
//! Writes to one key never overlap: [`VersionBoard::begin_write`] refuses a key
//! with a write in flight (the caller draws another key). So per key, version
//! order is real-time order and, on any linearizable store, the order the store
//! applied them: a store that serves the newest completed write is never judged
//! stale, and a cache that serves an overwritten value always is.
//!
//! Shared by all workers through atomics only (no locks); a read costs one
//! atomic load at send and one at completion.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Completion times kept per key, for the age of a stale read.
const RING: usize = 4;
/// Bits of the version kept beside a completion time in a ring entry.
const TAG_BITS: u32 = 24;
const TIME_MASK: u64 = (1 << (64 - TAG_BITS)) - 1;

struct Slot {
    /// Last assigned version << 1 | write-in-flight bit.
    state: AtomicU64,
    /// Newest version whose write completed.
    completed: AtomicU64,
    /// (version tag << 40) | µs since the epoch, of recent completed writes.
    done: [AtomicU64; RING],
}

/// Per-key versions of one run, shared by its writers and readers.
pub struct VersionBoard {
    slots: Box<[Slot]>,
    epoch: Instant,
}

impl std::fmt::Debug for VersionBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VersionBoard({} keys)", self.slots.len())
    }
}

/// How far behind a stale read was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staleness {
    /// Completed versions the read missed (newest completed − returned).
    pub versions: u64,
    /// Time from the completion of the first write the read missed to the
    /// start of the read, ns (a lower bound when that write is no longer known).
    pub age_ns: u64,
}

impl VersionBoard {
    /// A board for keys `0..keys`, every key at version 0 (the loaded value).
    pub fn new(keys: u64) -> VersionBoard {
        let slots = (0..keys)
            .map(|_| Slot {
                state: AtomicU64::new(0),
                completed: AtomicU64::new(0),
                done: Default::default(),
            })
            .collect();
        VersionBoard {
            slots,
            epoch: Instant::now(),
        }
    }

    /// The keys it tracks (`0..keys`).
    pub fn keys(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Bytes a board for `keys` keys takes.
    pub fn bytes_for(keys: u64) -> u64 {
        keys * std::mem::size_of::<Slot>() as u64
    }

    /// Starts a write of `key`: its new version, or `None` when a write of the
    /// key is already in flight. Every `Some` must be followed by [`Self::end_write`].
    #[inline]
    pub fn begin_write(&self, key: u64) -> Option<u64> {
        let slot = &self.slots[key as usize];
        let mut s = slot.state.load(Ordering::Acquire);
        loop {
            if s & 1 == 1 {
                return None;
            }
            let v = (s >> 1) + 1;
            match slot.state.compare_exchange_weak(
                s,
                v << 1 | 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(v),
                Err(now) => s = now,
            }
        }
    }

    /// Ends the write of `version` of `key`, completed at `at` when `ok` (a
    /// failed write may or may not have been applied: it never makes a read stale).
    #[inline]
    pub fn end_write(&self, key: u64, version: u64, ok: bool, at: Instant) {
        let slot = &self.slots[key as usize];
        if ok {
            let us = at.saturating_duration_since(self.epoch).as_micros() as u64 & TIME_MASK;
            let tag = version & ((1 << TAG_BITS) - 1);
            slot.done[version as usize % RING]
                .store(tag << (64 - TAG_BITS) | us, Ordering::Release);
            slot.completed.fetch_max(version, Ordering::AcqRel);
        }
        slot.state.store(version << 1, Ordering::Release);
    }

    /// When version `version` of `key` was written (its write completed),
    /// if the board still knows; `None` for version 0 (the loaded value).
    #[inline]
    pub fn written_at(&self, key: u64, version: u64) -> Option<Instant> {
        if version == 0 {
            return None;
        }
        let e = self.slots[key as usize].done[version as usize % RING].load(Ordering::Acquire);
        let tag = version & ((1 << TAG_BITS) - 1);
        (e != 0 && e >> (64 - TAG_BITS) == tag)
            .then(|| self.epoch + std::time::Duration::from_micros(e & TIME_MASK))
    }

    /// The newest completed version of `key`, taken when a read of it begins.
    #[inline]
    pub fn snapshot(&self, key: u64) -> u64 {
        self.slots[key as usize].completed.load(Ordering::Acquire)
    }

    /// Judges a read of `key` that began at `began` (when the newest completed
    /// version was `snapshot`) and returned version `got`.
    #[inline]
    pub fn judge(&self, key: u64, snapshot: u64, got: u64, began: Instant) -> Option<Staleness> {
        if got >= snapshot {
            return None;
        }
        let slot = &self.slots[key as usize];
        let began_us = began.saturating_duration_since(self.epoch).as_micros() as u64;
        // The earliest known completed write newer than `got` and not newer than
        // the snapshot: the write that made the returned value outdated.
        let mut first: Option<(u64, u64)> = None;
        for e in &slot.done {
            let e = e.load(Ordering::Acquire);
            if e == 0 {
                continue;
            }
            let tag = e >> (64 - TAG_BITS);
            let back = snapshot.wrapping_sub(tag) & ((1 << TAG_BITS) - 1);
            let Some(v) = snapshot.checked_sub(back) else {
                continue;
            };
            if v > got && v <= snapshot && first.is_none_or(|(fv, _)| v < fv) {
                first = Some((v, e & TIME_MASK));
            }
        }
        let age_ns = first.map_or(0, |(_, us)| began_us.saturating_sub(us) * 1000);
        Some(Staleness {
            versions: snapshot - got,
            age_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn writes_to_one_key_never_overlap() {
        let b = VersionBoard::new(2);
        let v = b.begin_write(0).unwrap();
        assert_eq!(v, 1);
        assert_eq!(
            b.begin_write(0),
            None,
            "a second writer must draw another key"
        );
        assert_eq!(b.begin_write(1), Some(1), "other keys are free");
        b.end_write(0, v, true, Instant::now());
        assert_eq!(b.begin_write(0), Some(2));
    }

    #[test]
    fn a_read_of_the_newest_completed_version_is_fresh() {
        let b = VersionBoard::new(1);
        let t = Instant::now();
        let v = b.begin_write(0).unwrap();
        // A read that began while the write was in flight may see either value.
        let during = b.snapshot(0);
        assert_eq!(b.judge(0, during, 0, t), None);
        assert_eq!(b.judge(0, during, 1, t), None);
        b.end_write(0, v, true, t);
        let after = b.snapshot(0);
        assert_eq!(b.judge(0, after, 1, t), None);
    }

    #[test]
    fn a_failed_write_never_makes_a_read_stale() {
        let b = VersionBoard::new(1);
        let v = b.begin_write(0).unwrap();
        b.end_write(0, v, false, Instant::now());
        assert_eq!(b.snapshot(0), 0);
        assert_eq!(b.judge(0, b.snapshot(0), 0, Instant::now()), None);
        // The version is spent: the next write gets a newer one.
        assert_eq!(b.begin_write(0), Some(2));
    }

    #[test]
    fn stale_reads_report_versions_and_age() {
        let b = VersionBoard::new(1);
        let t0 = Instant::now();
        for i in 1..=3u64 {
            let v = b.begin_write(0).unwrap();
            b.end_write(0, v, true, t0 + Duration::from_millis(10 * i));
        }
        let s = b.snapshot(0);
        assert_eq!(s, 3);
        let read = t0 + Duration::from_millis(50);
        let st = b.judge(0, s, 1, read).unwrap();
        assert_eq!(st.versions, 2);
        // Version 2 completed at 20 ms: the value was outdated for 30 ms.
        assert!((29_000_000..=31_000_000).contains(&st.age_ns), "{st:?}");
        // Many versions behind: the age is a lower bound from the oldest known.
        for i in 4..=10u64 {
            let v = b.begin_write(0).unwrap();
            b.end_write(0, v, true, t0 + Duration::from_millis(10 * i));
        }
        let st = b
            .judge(0, b.snapshot(0), 0, t0 + Duration::from_millis(200))
            .unwrap();
        assert_eq!(st.versions, 10);
        assert!(st.age_ns >= 100_000_000, "{st:?}");
    }

    #[test]
    fn a_write_completed_after_the_read_began_does_not_count() {
        let b = VersionBoard::new(1);
        let snap = b.snapshot(0);
        let v = b.begin_write(0).unwrap();
        b.end_write(0, v, true, Instant::now());
        // The read began before the write completed: the old value is fine.
        assert_eq!(b.judge(0, snap, 0, Instant::now()), None);
    }
}
