//! Stale-read detection. Every written value carries a per-key version,
//! assigned when its write begins; writes to one key may overlap, as a real
//! application's do. The [`VersionBoard`] knows, per key, the newest version
//! whose write has completed and, for each recent completed write, the last
//! version assigned when it completed (its *overtakers* are the versions after
//! that: writes that began after it completed).
//!
//! A read is *stale* when it returns a version that another write followed in
//! real time (began after it completed) and completed before the read began.
//! On a linearizable store a read may return any of the writes concurrent with
//! the newest completed one, so none of those is stale; the value of a write
//! still in flight, or of one that failed, never is.
//!
//! The board also tells whether a read's previous access to its key was a read
//! ([`VersionBoard::after_read`]): a cache that drops a key on every write can
//! hit only those reads, so their share is a run's hit-ratio ceiling.
//!
//! Shared by all workers through atomics only (no locks); a read costs two
//! atomic loads at send (a store when a write came between) and a few at
//! completion.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Recent completed writes kept per key (their completion time and overtakers).
const RING: usize = 8;
/// Bits of a ring entry: the version's low bits, the versions assigned while
/// it was in flight (saturating), and µs since the board's epoch.
const TAG_BITS: u32 = 16;
const DELTA_BITS: u32 = 8;
const TIME_BITS: u32 = 64 - TAG_BITS - DELTA_BITS;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
const DELTA_MAX: u64 = (1 << DELTA_BITS) - 1;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

struct Slot {
    /// Last assigned version (writes take the next one as they begin).
    assigned: AtomicU64,
    /// Newest version whose write completed.
    completed: AtomicU64,
    /// The assigned version the key's last read saw (0 at the start: the
    /// loaded value counts as read).
    read_at: AtomicU64,
    /// (tag << 48) | (overtaken-at − version) << 40 | µs since the epoch, of
    /// recent completed writes, at `version % RING`.
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
                assigned: AtomicU64::new(0),
                completed: AtomicU64::new(0),
                read_at: AtomicU64::new(0),
                done: Default::default(),
            })
            .collect();
        VersionBoard {
            slots,
            epoch: Instant::now(),
        }
    }

    /// Takes `key`'s last access before the run as a write (see
    /// [`crate::workload::last_written`]): its first read is not after a read.
    pub fn mark_written(&self, key: u64) {
        self.slots[key as usize]
            .read_at
            .store(u64::MAX, Ordering::Relaxed);
    }

    /// The keys it tracks (`0..keys`).
    pub fn keys(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Bytes a board for `keys` keys takes.
    pub fn bytes_for(keys: u64) -> u64 {
        keys * std::mem::size_of::<Slot>() as u64
    }

    /// Starts a write of `key`: its new version. Every write must be followed
    /// by [`Self::end_write`].
    #[inline]
    pub fn begin_write(&self, key: u64) -> u64 {
        self.slots[key as usize]
            .assigned
            .fetch_add(1, Ordering::AcqRel)
            + 1
    }

    /// Ends the write of `version` of `key`, completed at `at` when `ok` (a
    /// failed write may or may not have been applied: it never makes a read stale).
    #[inline]
    pub fn end_write(&self, key: u64, version: u64, ok: bool, at: Instant) {
        if !ok {
            return;
        }
        let slot = &self.slots[key as usize];
        let us = at.saturating_duration_since(self.epoch).as_micros() as u64 & TIME_MASK;
        let overtaken_at = slot.assigned.load(Ordering::Acquire);
        let delta = overtaken_at.saturating_sub(version).min(DELTA_MAX);
        let tag = version & TAG_MASK;
        slot.done[version as usize % RING].store(
            tag << (DELTA_BITS + TIME_BITS) | delta << TIME_BITS | us,
            Ordering::Release,
        );
        slot.completed.fetch_max(version, Ordering::AcqRel);
    }

    /// The ring entry of `version` of `key`, if the board still holds it:
    /// (the last version assigned when it completed, µs of its completion).
    #[inline]
    fn entry(&self, key: u64, version: u64) -> Lookup {
        let e = self.slots[key as usize].done[version as usize % RING].load(Ordering::Acquire);
        if e == 0 {
            return Lookup::NotDone;
        }
        let tag = e >> (DELTA_BITS + TIME_BITS);
        // The entry's version, the nearest to `version` with its tag in its slot.
        let back = version.wrapping_sub(tag) & TAG_MASK;
        let ahead = tag.wrapping_sub(version) & TAG_MASK;
        if back == 0 {
            let delta = (e >> TIME_BITS) & DELTA_MAX;
            return Lookup::Done(version + delta, e & TIME_MASK);
        }
        // A newer write completed in its slot: this version completed before
        // it, or is still in flight (far fewer than `RING` writes overlap).
        match ahead < back {
            true => Lookup::Overwritten,
            false => Lookup::NotDone,
        }
    }

    /// When version `version` of `key` was written (its write completed),
    /// if the board still knows; `None` for version 0 (the loaded value).
    #[inline]
    pub fn written_at(&self, key: u64, version: u64) -> Option<Instant> {
        if version == 0 {
            return None;
        }
        match self.entry(key, version) {
            Lookup::Done(_, us) => Some(self.epoch + std::time::Duration::from_micros(us)),
            _ => None,
        }
    }

    /// The newest completed version of `key`, taken when a read of it begins.
    #[inline]
    pub fn snapshot(&self, key: u64) -> u64 {
        self.slots[key as usize].completed.load(Ordering::Acquire)
    }

    /// Notes a read of `key` beginning: whether the previous access to the key
    /// was a read (no write began since the last read; the loaded value
    /// counts as read).
    #[inline]
    pub fn after_read(&self, key: u64) -> bool {
        let slot = &self.slots[key as usize];
        let assigned = slot.assigned.load(Ordering::Acquire);
        if slot.read_at.load(Ordering::Relaxed) == assigned {
            return true;
        }
        slot.read_at.store(assigned, Ordering::Relaxed);
        false
    }

    /// Judges a read of `key` that began at `began` (when the newest completed
    /// version was `snapshot`) and returned version `got`: stale when a write
    /// that began after `got` completed had itself completed by `began`.
    #[inline]
    pub fn judge(&self, key: u64, snapshot: u64, got: u64, began: Instant) -> Option<Staleness> {
        if got >= snapshot {
            return None;
        }
        // The versions that did not overtake `got` (0: the loaded value,
        // completed before every write began).
        let overtaken_at = match got {
            0 => 0,
            _ => match self.entry(key, got) {
                Lookup::Done(at, _) => at,
                Lookup::NotDone => return None,
                // Completed long ago: at least `RING` later writes completed.
                Lookup::Overwritten => got,
            },
        };
        if overtaken_at >= snapshot {
            return None;
        }
        let began_us = began.saturating_duration_since(self.epoch).as_micros() as u64;
        // The earliest known completed overtaker no newer than the snapshot:
        // the write that made the returned value outdated.
        let slot = &self.slots[key as usize];
        let first = slot
            .done
            .iter()
            .filter_map(|e| {
                let e = e.load(Ordering::Acquire);
                let back = snapshot.wrapping_sub(e >> (DELTA_BITS + TIME_BITS)) & TAG_MASK;
                let v = snapshot.checked_sub(back)?;
                let us = e & TIME_MASK;
                (e != 0 && v > overtaken_at && us <= began_us).then_some(us)
            })
            .min();
        Some(Staleness {
            versions: snapshot - overtaken_at,
            age_ns: first.map_or(0, |us| began_us.saturating_sub(us) * 1000),
        })
    }
}

/// What the board holds of one version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lookup {
    /// Completed: the last version assigned at its completion, and when (µs).
    Done(u64, u64),
    /// In flight, failed, or not written.
    NotDone,
    /// Completed before a later write took its place in the ring.
    Overwritten,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn writes_to_one_key_may_overlap() {
        let b = VersionBoard::new(2);
        let v1 = b.begin_write(0);
        let v2 = b.begin_write(0);
        assert_eq!(
            (v1, v2),
            (1, 2),
            "a second writer of the key gets the next version"
        );
        assert_eq!(b.begin_write(1), 1, "keys are counted apart");
        b.end_write(0, v2, true, Instant::now());
        b.end_write(0, v1, true, Instant::now());
        assert_eq!(b.snapshot(0), 2);
    }

    #[test]
    fn a_read_of_the_newest_completed_version_is_fresh() {
        let b = VersionBoard::new(1);
        let t = Instant::now();
        let v = b.begin_write(0);
        // A read that began while the write was in flight may see either value.
        let during = b.snapshot(0);
        assert_eq!(b.judge(0, during, 0, t), None);
        assert_eq!(b.judge(0, during, 1, t), None);
        b.end_write(0, v, true, t);
        let after = b.snapshot(0);
        assert_eq!(b.judge(0, after, 1, t), None);
    }

    #[test]
    fn overlapping_writes_may_land_in_either_order() {
        let b = VersionBoard::new(1);
        let t = Instant::now();
        let (v1, v2) = (b.begin_write(0), b.begin_write(0));
        b.end_write(0, v2, true, t);
        b.end_write(0, v1, true, t + Duration::from_millis(1));
        let read = t + Duration::from_millis(5);
        // The store may have applied 2 then 1: reading 1 is not stale.
        assert_eq!(b.judge(0, b.snapshot(0), v1, read), None);
        // A write that began after 1 completed, and completed: now it is.
        let v3 = b.begin_write(0);
        b.end_write(0, v3, true, t + Duration::from_millis(3));
        let st = b.judge(0, b.snapshot(0), v1, read).unwrap();
        assert_eq!(st.versions, 1);
        assert!((1_900_000..=2_100_000).contains(&st.age_ns), "{st:?}");
        // The loaded value after every write completed: stale.
        assert!(b.judge(0, b.snapshot(0), 0, read).is_some());
    }

    #[test]
    fn the_value_of_a_write_in_flight_is_never_stale() {
        let b = VersionBoard::new(1);
        let t = Instant::now();
        let slow = b.begin_write(0);
        let fast = b.begin_write(0);
        b.end_write(0, fast, true, t);
        // The slow write still in flight: its value is as new as any.
        assert_eq!(b.judge(0, b.snapshot(0), slow, t), None);
    }

    #[test]
    fn a_failed_write_never_makes_a_read_stale() {
        let b = VersionBoard::new(1);
        let v = b.begin_write(0);
        b.end_write(0, v, false, Instant::now());
        assert_eq!(b.snapshot(0), 0);
        assert_eq!(b.judge(0, b.snapshot(0), 0, Instant::now()), None);
        assert_eq!(b.judge(0, b.snapshot(0), v, Instant::now()), None);
        // The version is spent: the next write gets a newer one.
        assert_eq!(b.begin_write(0), 2);
    }

    #[test]
    fn stale_reads_report_versions_and_age() {
        let b = VersionBoard::new(1);
        let t0 = Instant::now();
        for i in 1..=3u64 {
            let v = b.begin_write(0);
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
        for i in 4..=20u64 {
            let v = b.begin_write(0);
            b.end_write(0, v, true, t0 + Duration::from_millis(10 * i));
        }
        let st = b
            .judge(0, b.snapshot(0), 0, t0 + Duration::from_millis(300))
            .unwrap();
        assert_eq!(st.versions, 20);
        assert!(st.age_ns >= 100_000_000, "{st:?}");
        // Long overwritten in the ring: still stale.
        assert!(
            b.judge(0, b.snapshot(0), 2, t0 + Duration::from_millis(300))
                .is_some()
        );
    }

    #[test]
    fn a_write_completed_after_the_read_began_does_not_count() {
        let b = VersionBoard::new(1);
        let snap = b.snapshot(0);
        let v = b.begin_write(0);
        b.end_write(0, v, true, Instant::now());
        // The read began before the write completed: the old value is fine.
        assert_eq!(b.judge(0, snap, 0, Instant::now()), None);
    }

    #[test]
    fn a_read_after_a_read_is_told_from_one_after_a_write() {
        let b = VersionBoard::new(1);
        assert!(b.after_read(0), "the loaded value counts as read");
        assert!(b.after_read(0));
        let v = b.begin_write(0);
        assert!(!b.after_read(0), "a write began since the last read");
        assert!(b.after_read(0));
        b.end_write(0, v, true, Instant::now());
        assert!(b.after_read(0), "a write ending is not an access");
    }
}
