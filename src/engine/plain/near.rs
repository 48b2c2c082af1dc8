//! The plain client's near cache: a read answered from it never goes out; a
//! remote hit fills it; a write drops its key; the server's invalidations,
//! read between replies, drop theirs.

use std::ops::ControlFlow::{self, Break, Continue};
use std::time::Instant;

use super::{Plain, PlainConn};
use crate::driver::wire::{Codec, Unasked, parse_usize};
use crate::engine::request_loop::{Io, Request};
use crate::results::stats::{ErrorKind, Outcome};
use crate::workload::OpKind;

impl<C: Codec> Plain<'_, C> {
    /// Before `r` goes out: a read the near cache holds ends here (`true`),
    /// verified and judged like any read; a write drops its key.
    #[inline]
    pub(super) fn near_first(&mut self, io: &mut Io<'_>, r: &Request) -> bool {
        let (Some(near), Some(counts)) = (self.near.as_mut(), io.tally.near.as_mut()) else {
            return false;
        };
        if r.op == OpKind::Set {
            near.remove(r.key);
            return false;
        }
        let now = Instant::now();
        let Some(v) = near.get(r.key, now, r.measured, counts) else {
            return false;
        };
        let got = self.spec.values.verify(r.key, v);
        let outcome = match got {
            Some(_) => Outcome::Hit,
            None => Outcome::Error(ErrorKind::WrongValue),
        };
        io.tally.finish(r, outcome, now, got);
        true
    }

    /// A remote hit for `key`: its value (version `version`) at `value` of
    /// socket `s`'s buffer goes into the near cache.
    #[inline]
    pub(super) fn near_fill(
        &mut self,
        io: &mut Io<'_>,
        s: usize,
        (key, version): (u64, u64),
        value: std::ops::Range<usize>,
        now: Instant,
    ) {
        let (Some(near), Some(mut counts)) = (self.near.as_mut(), io.tally.near.take()) else {
            return;
        };
        near.fill(key, &io.buffered(s)[value], version, now, &mut counts);
        io.tally.near = Some(counts);
    }

    /// A message at the front of socket `s` that no request asked for: an
    /// invalidation is applied and consumed (`Continue(true)`); `Continue(false)`
    /// when the front is a reply; `Break` with what [`Plain::parse`] returns
    /// when the message is incomplete or broken.
    #[inline]
    pub(super) fn near_heard(
        &mut self,
        io: &mut Io<'_>,
        c: &PlainConn<C>,
        s: usize,
        now: Instant,
    ) -> ControlFlow<bool, bool> {
        let buf = io.buffered(s);
        let codec = &c.codecs[s];
        let len = match codec.unasked(buf, &mut self.heard) {
            None => return Continue(false),
            Some(Ok(Unasked::Incomplete)) => {
                return Break(io.may_hold(s, codec.declared_len(buf)));
            }
            Some(Err(_)) => return Break(false),
            Some(Ok(Unasked::Other { len })) => {
                io.consume(s, len);
                return Continue(true);
            }
            Some(Ok(Unasked::InvalidateAll { len })) => {
                if let (Some(near), Some(counts)) = (self.near.as_mut(), io.tally.near.as_mut()) {
                    counts.messages += 1;
                    near.clear(counts);
                }
                io.consume(s, len);
                return Continue(true);
            }
            Some(Ok(Unasked::Invalidate { len })) => len,
        };
        let prefix = &self.spec.key_prefix;
        self.ids.clear();
        self.ids.extend(self.heard.iter().filter_map(|k| {
            let name = buf[k.clone()].strip_prefix(prefix.as_slice())?;
            parse_usize(name).map(|id| id as u64)
        }));
        io.consume(s, len);
        if let (Some(near), Some(counts)) = (self.near.as_mut(), io.tally.near.as_mut()) {
            counts.messages += 1;
            for &id in &self.ids {
                near.invalidate(id, now, counts);
            }
        }
        Continue(true)
    }
}
