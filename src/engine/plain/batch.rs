//! Batch reads (`--batch`): one GET reading several keys with the protocol's
//! own multi-key read. Hits, misses, verification and stale reads are per
//! key; the request has one latency and, if it fails, one error.

use std::ops::Range;
use std::time::Instant;

use super::{InFlight, Plain, PlainConn};
use crate::driver::wire::{Batch, Codec, tag_of};
use crate::engine::request_loop::Io;
use crate::results::stats::{ErrorKind, Outcome};
use crate::workload::{Values, write_key};

/// The batch of `keys`, its names written into the buffers given (names end
/// to end, where each ends, the ids).
pub(super) fn names<'a>(
    prefix: &[u8],
    keys: &[(u64, u64)],
    tag: u32,
    (names, ends, ids): (&'a mut Vec<u8>, &'a mut Vec<u32>, &'a mut Vec<u64>),
) -> Batch<'a> {
    names.clear();
    ends.clear();
    ids.clear();
    let mut digits = itoa::Buffer::new();
    for &(k, _) in keys {
        names.extend_from_slice(prefix);
        names.extend_from_slice(digits.format(k).as_bytes());
        ends.push(names.len() as u32);
        ids.push(k);
    }
    Batch {
        ids,
        names,
        ends,
        tag,
    }
}

/// What the values `found` in `buf` say of batch read `keys`: each key's
/// version read back (`None`: a miss) into `got`, or the error that fails
/// the request (a value that is not its key's: `wrong_value`; a key the
/// request did not ask for, or one twice: `protocol`).
pub(super) fn judge(
    values: &Values,
    keys: &[(u64, u64)],
    found: &[(u64, Range<usize>)],
    buf: &[u8],
    got: &mut Vec<Option<u64>>,
) -> Result<(), ErrorKind> {
    got.clear();
    got.resize(keys.len(), None);
    for (id, range) in found {
        let i = keys
            .iter()
            .position(|&(k, _)| k == *id)
            .ok_or(ErrorKind::Protocol)?;
        if got[i].is_some() {
            return Err(ErrorKind::Protocol);
        }
        let v = buf.get(range.clone()).ok_or(ErrorKind::Protocol)?;
        got[i] = Some(values.verify(*id, v).ok_or(ErrorKind::WrongValue)?);
    }
    Ok(())
}

/// A connection's batch reads: key lists kept for reuse and, on a sharded
/// target, the reads split into parts by slot.
#[derive(Default)]
pub struct Batches {
    spares: Vec<Vec<(u64, u64)>>,
    parents: Vec<Parent>,
    free: Vec<u32>,
    /// Scratch: a read's keys with their slots, sorted by slot.
    slots: Vec<(u16, u64, u64)>,
}

/// A batch read on a sharded target, waiting for its parts.
#[derive(Clone, Copy, Default)]
struct Parent {
    /// Parts still in flight.
    pending: u32,
    /// Parts it was sent as.
    parts: u32,
    /// Keys it reads.
    keys: u64,
    /// The first failure of a part.
    error: Option<ErrorKind>,
}

impl Batches {
    /// An empty key list (its allocation reused).
    pub(super) fn spare(&mut self) -> Vec<(u64, u64)> {
        self.spares.pop().unwrap_or_default()
    }

    /// Keeps `keys`' allocation for a later batch.
    fn give_back(&mut self, mut keys: Vec<(u64, u64)>) {
        keys.clear();
        self.spares.push(keys);
    }

    /// A part of parent `p` ended (failed with `error`): the parent's keys
    /// and first error when it was the last.
    fn part_done(
        &mut self,
        p: u32,
        error: Option<ErrorKind>,
    ) -> Option<((u64, u64), Option<ErrorKind>)> {
        let parent = &mut self.parents[p as usize];
        parent.pending -= 1;
        parent.error = parent.error.or(error);
        if parent.pending > 0 {
            return None;
        }
        let done = ((parent.keys, u64::from(parent.parts)), parent.error);
        self.free.push(p);
        Some(done)
    }

    /// A new parent of `parts` parts reading `keys` keys: its index.
    fn parent(&mut self, parts: u32, keys: u64) -> u32 {
        let parent = Parent {
            pending: parts,
            parts,
            keys,
            error: None,
        };
        match self.free.pop() {
            Some(p) => {
                self.parents[p as usize] = parent;
                p
            }
            None => {
                self.parents.push(parent);
                (self.parents.len() - 1) as u32
            }
        }
    }
}

impl<C: Codec> Plain<'_, C> {
    /// Sharded targets: sends batch read `f` as one part per slot (an MGET
    /// may only name keys of one slot), each to its slot's node, as a
    /// cluster client does; the read ends when its last part does.
    pub(super) fn issue_parts(&mut self, io: &mut Io<'_>, c: &mut PlainConn<C>, mut f: InFlight) {
        let b = &mut c.batches;
        b.slots.clear();
        for &(k, v) in &f.keys {
            write_key(&self.spec.key_prefix, k, &mut self.key);
            b.slots.push((self.codec.slot(&self.key), k, v));
        }
        b.slots.sort_unstable_by_key(|s| s.0);
        let parts = 1 + b.slots.windows(2).filter(|w| w[0].0 != w[1].0).count();
        let p = b.parent(parts as u32, f.keys.len() as u64);
        let keys = std::mem::take(&mut f.keys);
        let mut at = 0;
        while at < c.batches.slots.len() {
            let slot = c.batches.slots[at].0;
            let mut part = c.batches.spare();
            while let Some(&(s, k, v)) = c.batches.slots.get(at)
                && s == slot
            {
                part.push((k, v));
                at += 1;
            }
            let mut r = f.r;
            (r.key, r.version) = part[0];
            let tag = tag_of(c.next, r.op);
            c.next = c.next.wrapping_add(1) & (u32::MAX >> 1);
            write_key(&self.spec.key_prefix, r.key, &mut self.key);
            let node = self.node_of(io, &self.key);
            let part = InFlight {
                r,
                tag,
                asking: false,
                hops: 0,
                keys: part,
                parent: Some(p),
            };
            self.send(io, c, node, part, f.r.sent);
        }
        c.batches.give_back(keys);
    }

    /// Ends `f` as failed with `kind`, giving back its key list.
    pub(super) fn end_failed(
        io: &mut Io<'_>,
        batches: &mut Batches,
        f: InFlight,
        kind: ErrorKind,
        now: Instant,
    ) {
        if f.keys.is_empty() {
            io.tally.finish(&f.r, Outcome::Error(kind), now, None);
            return;
        }
        Self::close(io, batches, f, Some(kind), now);
    }

    /// Ends batch read `f`, whose keys' versions read back are in `self.got`
    /// (or which failed with `error`).
    pub(super) fn end_batch(
        &mut self,
        io: &mut Io<'_>,
        batches: &mut Batches,
        f: InFlight,
        error: Option<ErrorKind>,
        now: Instant,
    ) {
        if error.is_none() {
            for (&(key, version), &got) in f.keys.iter().zip(&self.got) {
                io.tally.batch_key(&f.r, key, version, got);
            }
        }
        Self::close(io, batches, f, error, now);
    }

    /// Ends batch read (or part) `f`: the request ends with its last part.
    fn close(
        io: &mut Io<'_>,
        batches: &mut Batches,
        f: InFlight,
        error: Option<ErrorKind>,
        now: Instant,
    ) {
        let done = match f.parent {
            None => Some(((f.keys.len() as u64, 1), error)),
            Some(p) => batches.part_done(p, error),
        };
        if let Some((keys, error)) = done {
            io.tally.finish_batch(&f.r, keys, error, now);
        }
        batches.give_back(f.keys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_judged_key_by_key() {
        let values = Values::new(32);
        let keys = [(3, 0), (7, 0), (9, 0)];
        let mut buf = Vec::new();
        values.write_version(3, 0, &mut buf);
        let a = 0..buf.len();
        values.write_version(9, 0, &mut buf);
        let b = a.end..buf.len();
        let mut got = Vec::new();
        let found = [(9, b.clone()), (3, a.clone())];
        assert_eq!(judge(&values, &keys, &found, &buf, &mut got), Ok(()));
        assert_eq!(got, [Some(0), None, Some(0)]);
        // A value under another key's name, a key not asked for, one twice.
        let wrong = [(7, a.clone())];
        assert_eq!(
            judge(&values, &keys, &wrong, &buf, &mut got),
            Err(ErrorKind::WrongValue)
        );
        let other = [(4, a.clone())];
        assert_eq!(
            judge(&values, &keys, &other, &buf, &mut got),
            Err(ErrorKind::Protocol)
        );
        let twice = [(3, a.clone()), (3, a)];
        assert_eq!(
            judge(&values, &keys, &twice, &buf, &mut got),
            Err(ErrorKind::Protocol)
        );
    }
}
