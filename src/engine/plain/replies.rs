//! Replies: decoding every whole reply buffered on a socket, matching it to
//! its request (in order, or by tag), verifying the value, following a
//! redirect, and counting the outcome in the worker's tally.

use std::ops::ControlFlow::{self, Break, Continue};
use std::time::Instant;

use super::batch::{self, Batches};
use super::requests::Hop;
use super::route::parse_addr;
use super::{InFlight, Plain, PlainConn};
use crate::driver::wire::{Codec, Decoded, Reply};
use crate::engine::request_loop::{Io, Request};
use crate::results::stats::{ErrorKind, Outcome};
use crate::workload::OpKind;

/// What to do with the request a reply answered, once the buffer is released.
enum Then {
    Count(Outcome, Option<u64>),
    Redirect(Hop),
}

/// A whole reply: the bytes it takes, what it says, and the place in its
/// socket's queue of the request it answers.
struct Whole {
    len: usize,
    reply: Reply,
    at: usize,
}

impl<C: Codec> Plain<'_, C> {
    /// Decodes every whole reply buffered on socket `s`; `false` when the
    /// stream is broken.
    #[inline]
    pub(super) fn parse(
        &mut self,
        io: &mut Io<'_>,
        c: &mut PlainConn<C>,
        s: usize,
        now: Instant,
    ) -> bool {
        while io.pending(s).is_some() {
            if let Some(near) = self.near.as_mut() {
                match near.heard(&c.codecs[s], io, s, &self.spec.key_prefix, now) {
                    Continue(true) => continue,
                    Continue(false) => {}
                    Break(ok) => return ok,
                }
            }
            let Some(front) = c.queues[s].front() else {
                return false; // a reply nobody asked for
            };
            if front.asking {
                // The reply to the request that let this one be served first.
                match Self::asked(io, c, s, now) {
                    Continue(()) => continue,
                    Break(ok) => return ok,
                }
            }
            let w = match self.decode(io, c, s, now) {
                Continue(w) => w,
                Break(ok) => return ok,
            };
            let queue = &mut c.queues[s];
            let f = match w.at {
                0 => queue.pop_front(),
                at => queue.remove(at),
            }
            .expect("in flight");
            c.inflight -= 1;
            self.answered(io, c, s, f, w, now);
        }
        true
    }

    /// The reply on socket `s` to the ASKING-like request sent before the
    /// request at its front: `Continue` once consumed; `Break` with what
    /// [`Plain::parse`] returns when it is incomplete, or anything but the
    /// acknowledgement (the request then fails as a protocol error).
    #[inline]
    fn asked(io: &mut Io<'_>, c: &mut PlainConn<C>, s: usize, now: Instant) -> ControlFlow<bool> {
        let buf = io.buffered(s);
        let codec = &c.codecs[s];
        match codec.decode(OpKind::Set, buf) {
            Ok(Decoded::Incomplete) => Break(io.may_hold(s, codec.declared_len(buf))),
            Ok(Decoded::Frame {
                len,
                reply: Reply::Stored,
            }) => {
                c.queues[s].front_mut().expect("front exists").asking = false;
                io.consume(s, len);
                Continue(())
            }
            _ => {
                let f = c.queues[s].pop_front().expect("front exists");
                c.inflight -= 1;
                io.tally
                    .finish(&f.r, Outcome::Error(ErrorKind::Protocol), now, None);
                Break(false)
            }
        }
    }

    /// Decodes the next reply on socket `s`, a batch read's with its keys;
    /// `Break` with what [`Plain::parse`] returns when it is incomplete,
    /// answers no request, or cannot be decoded (the front request then fails
    /// as a protocol error).
    #[inline]
    fn decode(
        &mut self,
        io: &mut Io<'_>,
        c: &mut PlainConn<C>,
        s: usize,
        now: Instant,
    ) -> ControlFlow<bool, Whole> {
        let buf = io.buffered(s);
        let queue = &mut c.queues[s];
        let codec = &c.codecs[s];
        // A batch read's reply is decoded with its keys: those of the
        // request its tag names, where replies may come out of order.
        let batch = match self.spec.batch.is_some() {
            true => match codec.reply_tag(buf) {
                Some(t) => queue.iter().find(|f| f.tag & C::TAG_MASK == t),
                None => queue.front(),
            },
            false => None,
        }
        .filter(|f| !f.keys.is_empty());
        self.found.clear();
        let decoded = match batch {
            Some(f) => {
                self.ids.clear();
                self.ids.extend(f.keys.iter().map(|k| k.0));
                codec.decode_many(&self.spec.key_prefix, &self.ids, buf, &mut self.found)
            }
            None => codec.decode(queue.front().expect("front exists").r.op, buf),
        };
        match decoded {
            Ok(Decoded::Incomplete) => Break(io.may_hold(s, codec.declared_len(buf))),
            Ok(Decoded::Frame { len, reply }) => Continue(Whole { len, reply, at: 0 }),
            Ok(Decoded::Tagged { len, reply, tag }) => {
                match queue.iter().position(|f| f.tag & C::TAG_MASK == tag) {
                    Some(at) => Continue(Whole { len, reply, at }),
                    None => Break(false), // a reply nobody asked for
                }
            }
            Err(_) => {
                let f = queue.pop_front().expect("front exists");
                c.inflight -= 1;
                Self::end_failed(io, &mut c.batches, f, ErrorKind::Protocol, now);
                Break(false)
            }
        }
    }

    /// Ends batch read `f` with its reply `w` on socket `s`: each key's
    /// value verified and counted, one latency.
    #[inline]
    fn batch_read(
        &mut self,
        io: &mut Io<'_>,
        batches: &mut Batches,
        s: usize,
        f: InFlight,
        w: Whole,
        now: Instant,
    ) {
        let error = match w.reply {
            Reply::Batch => {
                let buf = io.buffered(s);
                batch::judge(&self.spec.values, &f.keys, &self.found, buf, &mut self.got).err()
            }
            Reply::ServerError => Some(ErrorKind::Server),
            _ => Some(ErrorKind::Protocol),
        };
        io.consume(s, w.len);
        if error.is_none() {
            io.served(s);
        }
        self.end_batch(io, batches, f, error, now);
    }

    /// Ends request `f` with its reply `w` on socket `s`: verified and
    /// counted (a batch read's keys each), or sent where a redirect says.
    #[inline]
    fn answered(
        &mut self,
        io: &mut Io<'_>,
        c: &mut PlainConn<C>,
        s: usize,
        f: InFlight,
        w: Whole,
        now: Instant,
    ) {
        if !f.keys.is_empty() && !matches!(w.reply, Reply::Redirect { .. }) {
            return self.batch_read(io, &mut c.batches, s, f, w, now);
        }
        let filled = match (&w.reply, self.near.is_some()) {
            (Reply::Value(v), true) => Some(v.clone()),
            _ => None,
        };
        let then = self.meaning(&f.r, w.reply, io.buffered(s));
        if let (Some(v), Then::Count(Outcome::Hit, Some(version)), Some(near)) =
            (filled, &then, self.near.as_mut())
        {
            near.fill_from(io, s, (f.r.key, *version), v, now);
        }
        io.consume(s, w.len);
        if let Then::Count(Outcome::Hit | Outcome::Miss | Outcome::Stored, _) = then {
            io.served(s);
        }
        match then {
            Then::Count(outcome, got) => {
                let stale = io.tally.finish(&f.r, outcome, now, got);
                if self.router.replicated() {
                    io.tally.served_by(s, &f.r, stale);
                }
            }
            Then::Redirect(hop) => self.redirect(io, c, f, hop, now),
        }
    }

    /// What `reply` (decoded from `buf`) means for request `r`.
    #[inline]
    fn meaning(&self, r: &Request, reply: Reply, buf: &[u8]) -> Then {
        match (r.op, reply) {
            (OpKind::Get, Reply::Value(v)) => match self.spec.values.verify(r.key, &buf[v]) {
                Some(v) => Then::Count(Outcome::Hit, Some(v)),
                None => Then::Count(Outcome::Error(ErrorKind::WrongValue), None),
            },
            (OpKind::Get, Reply::Nil) => Then::Count(Outcome::Miss, None),
            (OpKind::Set, Reply::Stored) => Then::Count(Outcome::Stored, None),
            (_, Reply::ServerError) => Then::Count(Outcome::Error(ErrorKind::Server), None),
            (_, Reply::Redirect { slot, to, ask }) => match parse_addr(&buf[to]) {
                Some(to) => Then::Redirect(Hop {
                    slot,
                    to,
                    moved: !ask,
                }),
                None => Then::Count(Outcome::Error(ErrorKind::Protocol), None),
            },
            _ => Then::Count(Outcome::Error(ErrorKind::Protocol), None),
        }
    }
}
