//! The near cache: a bounded LRU (the `lru` crate) in each client thread,
//! read before the remote server, filled by its hits, emptied by the
//! server's invalidations (RESP3 tracking) or by a TTL. Its counts live in
//! the worker's tally ([`NearCounts`]); the entries, here.
//!
//! An entry holds the value's bytes, as an application's near cache does
//! (its memory is what the run reports), and the version they carry, so
//! that an invalidation tells how long after its write it came.

use std::num::NonZeroUsize;
use std::ops::ControlFlow::{self, Break, Continue};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lru::LruCache;

pub use super::counts::NearCounts;
use super::request_loop::{Io, Request};
use crate::driver::wire::{Codec, Unasked, id_of_name};
use crate::plan::near::{Invalidation, NearCache, entry_bytes};
use crate::results::stats::{ErrorKind, Outcome};
use crate::workload::consistency::VersionBoard;
use crate::workload::{OpKind, Values};

/// One entry: the value as read, its version, and when it was filled.
struct Entry {
    value: Vec<u8>,
    version: u64,
    filled: Instant,
}

/// One worker's near cache.
pub struct Near {
    lru: LruCache<u64, Entry>,
    /// Bytes held, as [`entry_bytes`] counts them.
    bytes: u64,
    /// The byte bound, if the bound is in bytes.
    bound_bytes: Option<u64>,
    key_len: usize,
    ttl: Option<Duration>,
    /// A value buffer from an entry that left, for the next fill.
    spare: Vec<u8>,
    board: Option<Arc<VersionBoard>>,
    /// The key names an invalidation named, and their ids (reused).
    heard: Vec<Range<usize>>,
    ids: Vec<u64>,
}

impl Near {
    /// A near cache as `n` asks, for keys of `key_len` bytes and values of at
    /// least `min_value`; `board` tells when writes completed.
    pub fn new(
        n: &NearCache,
        key_len: usize,
        min_value: usize,
        board: Option<Arc<VersionBoard>>,
    ) -> Near {
        let items = n.max_items(min_value, key_len).clamp(1, usize::MAX as u64) as usize;
        Near {
            lru: LruCache::new(NonZeroUsize::new(items).expect("at least 1")),
            bytes: 0,
            bound_bytes: match n.bound {
                crate::plan::near::NearBound::Bytes(b) => Some(b),
                crate::plan::near::NearBound::Items(_) => None,
            },
            key_len,
            ttl: match n.invalidation {
                Invalidation::Ttl(s) => Some(Duration::from_secs(u64::from(s))),
                _ => None,
            },
            spare: Vec::new(),
            board,
            heard: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// The near cache of a worker running `spec` (`None`: none asked).
    pub fn of(spec: &super::Spec) -> Option<Near> {
        let key_len = spec.key_prefix.len() + spec.keys.to_string().len();
        let n = spec.near.as_ref()?;
        Some(Near::new(n, key_len, spec.values.min(), spec.board.clone()))
    }

    /// Before `r` goes out: a read this cache holds ends here (`true`),
    /// verified by `values` and judged like any read; a write drops its key.
    #[inline]
    pub fn answer(&mut self, io: &mut Io<'_>, r: &Request, values: &Values) -> bool {
        let Some(counts) = io.tally.near.as_mut() else {
            return false;
        };
        if r.op == OpKind::Set {
            self.remove(r.key);
            return false;
        }
        // Fresh at the request's start; a miss reads no clock.
        let Some(v) = self.get(r.key, r.sent, r.measured, counts) else {
            return false;
        };
        let got = values.verify(r.key, v);
        let outcome = match got {
            Some(_) => Outcome::Hit,
            None => Outcome::Error(ErrorKind::WrongValue),
        };
        io.tally.finish(r, outcome, Instant::now(), got);
        true
    }

    /// A remote hit for `key`: its value (version `version`) at `value` of
    /// socket `s`'s buffer is kept.
    #[inline]
    pub fn fill_from(
        &mut self,
        io: &mut Io<'_>,
        s: usize,
        (key, version): (u64, u64),
        value: Range<usize>,
        now: Instant,
    ) {
        if let Some(mut counts) = io.tally.near.take() {
            self.fill(key, &io.buffered(s)[value], version, now, &mut counts);
            io.tally.near = Some(counts);
        }
    }

    /// A message at the front of socket `s` (decoded by `codec`) that no
    /// request asked for: an invalidation of keys named `prefix` + id is
    /// applied and consumed (`Continue(true)`); `Continue(false)` when the
    /// front is a reply; `Break` with what a client's reply reading returns
    /// when the message is incomplete (`true` while it can still come whole)
    /// or broken (`false`).
    #[inline]
    pub fn heard<C: Codec>(
        &mut self,
        codec: &C,
        io: &mut Io<'_>,
        s: usize,
        prefix: &[u8],
        now: Instant,
    ) -> ControlFlow<bool, bool> {
        let buf = io.buffered(s);
        let (len, all) = match codec.unasked(buf, &mut self.heard) {
            None => return Continue(false),
            Some(Ok(Unasked::Incomplete)) => {
                return Break(io.may_hold(s, codec.declared_len(buf)));
            }
            Some(Err(_)) => return Break(false),
            Some(Ok(Unasked::Other { len })) => {
                io.consume(s, len);
                return Continue(true);
            }
            Some(Ok(Unasked::InvalidateAll { len })) => (len, true),
            Some(Ok(Unasked::Invalidate { len })) => (len, false),
        };
        self.ids.clear();
        self.ids.extend(
            self.heard
                .iter()
                .filter_map(|k| id_of_name(prefix, &buf[k.clone()])),
        );
        io.consume(s, len);
        if let Some(mut counts) = io.tally.near.take() {
            counts.messages += 1;
            if all {
                self.clear(&mut counts);
            }
            for i in 0..self.ids.len() {
                self.invalidate(self.ids[i], now, &mut counts);
            }
            io.tally.near = Some(counts);
        }
        Continue(true)
    }

    /// The value held for `key` at `now`, if fresh; counts the hit or miss.
    #[inline]
    pub fn get(
        &mut self,
        key: u64,
        now: Instant,
        measured: bool,
        c: &mut NearCounts,
    ) -> Option<&[u8]> {
        let expired = |e: &Entry| {
            self.ttl
                .is_some_and(|t| now.saturating_duration_since(e.filled) >= t)
        };
        if self.ttl.is_some() && self.lru.peek(&key).is_some_and(expired) {
            c.misses += u64::from(measured);
            c.expired += u64::from(measured);
            self.remove(key);
            return None;
        }
        // One lookup without a TTL: found or not.
        match self.lru.get(&key) {
            Some(e) => {
                c.hits += u64::from(measured);
                c.hits_all += 1;
                Some(e.value.as_slice())
            }
            None => {
                c.misses += u64::from(measured);
                None
            }
        }
    }

    /// Holds `value` (version `version`) for `key` from `now`, dropping the
    /// least recently used entries for room.
    #[inline]
    pub fn fill(&mut self, key: u64, value: &[u8], version: u64, now: Instant, c: &mut NearCounts) {
        self.remove(key);
        let size = entry_bytes(value.len(), self.key_len);
        if let Some(bound) = self.bound_bytes {
            if size > bound {
                return;
            }
            while self.bytes + size > bound {
                match self.lru.pop_lru() {
                    Some((_, e)) => self.left(e, c),
                    None => break,
                }
            }
        }
        let mut buf = std::mem::take(&mut self.spare);
        buf.clear();
        buf.extend_from_slice(value);
        let e = Entry {
            value: buf,
            version,
            filled: now,
        };
        self.bytes += size;
        if let Some((_, old)) = self.lru.push(key, e) {
            self.left(old, c);
        }
        c.peak_bytes = c.peak_bytes.max(self.bytes);
        c.peak_items = c.peak_items.max(self.lru.len() as u64);
    }

    /// An entry pushed out for room.
    fn left(&mut self, e: Entry, c: &mut NearCounts) {
        c.evictions += 1;
        self.drop_entry(e);
    }

    /// Takes `e`'s bytes off the count and keeps its buffer for a fill.
    fn drop_entry(&mut self, e: Entry) {
        self.bytes -= entry_bytes(e.value.len(), self.key_len);
        self.spare = e.value;
    }

    /// Drops `key` (this thread writes it).
    #[inline]
    pub fn remove(&mut self, key: u64) {
        if let Some(e) = self.lru.pop(&key) {
            self.drop_entry(e);
        }
    }

    /// The server says `key` changed, heard at `now`: drops it and, where it
    /// held an outdated version, times the delay from that version's
    /// successor's acknowledgement.
    pub fn invalidate(&mut self, key: u64, now: Instant, c: &mut NearCounts) {
        c.keys_invalidated += 1;
        let Some(e) = self.lru.pop(&key) else { return };
        c.entries_invalidated += 1;
        if let Some(b) = &self.board
            && key < b.keys()
        {
            match b.written_at(key, e.version + 1) {
                Some(at) => {
                    let us = now.saturating_duration_since(at).as_micros() as u64;
                    let _ = c.delay_us.record(us.max(1));
                }
                None if b.snapshot(key) <= e.version => c.before_ack += 1,
                None => {}
            }
        }
        self.drop_entry(e);
    }

    /// The server dropped everything (a flush).
    pub fn clear(&mut self, c: &mut NearCounts) {
        c.flushes += 1;
        while let Some((_, e)) = self.lru.pop_lru() {
            self.drop_entry(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::near::NearBound;

    fn near(bound: NearBound, invalidation: Invalidation) -> Near {
        Near::new(
            &NearCache {
                bound,
                invalidation,
            },
            10,
            100,
            None,
        )
    }

    #[test]
    fn a_byte_bound_is_never_passed() {
        let mut n = near(NearBound::Bytes(10_000), Invalidation::Tracking);
        let mut c = NearCounts::default();
        let now = Instant::now();
        for k in 0..1000 {
            n.fill(k, &vec![7u8; 100 + (k as usize % 50)], 0, now, &mut c);
            assert!(n.bytes <= 10_000, "{}", n.bytes);
        }
        assert!(c.peak_bytes <= 10_000 && c.evictions > 900, "{c:?}");
        assert!(n.get(999, now, true, &mut c).is_some());
        assert!(n.get(0, now, true, &mut c).is_none());
        assert_eq!((c.hits, c.misses), (1, 1));
    }

    #[test]
    fn an_item_bound_and_invalidations_drop_entries() {
        let mut n = near(NearBound::Items(3), Invalidation::Tracking);
        let mut c = NearCounts::default();
        let now = Instant::now();
        for k in 0..5 {
            n.fill(k, b"value", 0, now, &mut c);
        }
        assert_eq!((n.lru.len(), c.evictions), (3, 2));
        n.invalidate(4, now, &mut c);
        n.invalidate(0, now, &mut c);
        assert_eq!((c.keys_invalidated, c.entries_invalidated), (2, 1));
        assert!(n.get(4, now, true, &mut c).is_none());
        n.clear(&mut c);
        assert_eq!((n.lru.len(), n.bytes), (0, 0));
    }

    #[test]
    fn a_ttl_expires_entries() {
        let mut n = near(NearBound::Items(10), Invalidation::Ttl(1));
        let mut c = NearCounts::default();
        let t0 = Instant::now();
        n.fill(1, b"v", 0, t0, &mut c);
        assert!(
            n.get(1, t0 + Duration::from_millis(999), true, &mut c)
                .is_some()
        );
        assert!(
            n.get(1, t0 + Duration::from_secs(1), true, &mut c)
                .is_none()
        );
        assert_eq!((c.hits, c.misses, c.expired), (1, 1, 1));
    }
}
