//! Replies: decoding every whole reply buffered on a socket, matching it to
//! its request (in order, or by tag), verifying the value, following a
//! redirect, and counting the outcome in the worker's tally.

use std::time::Instant;

use super::batch;
use super::requests::Hop;
use super::route::parse_addr;
use super::{Plain, PlainConn};
use crate::driver::wire::{Codec, Decoded, Reply};
use crate::engine::request_loop::Io;
use crate::results::stats::{ErrorKind, Outcome};
use crate::workload::OpKind;

/// What to do with the request a reply answered, once the buffer is released.
enum Then {
    Count(Outcome, Option<u64>),
    Redirect(Hop),
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
        while let Some(buf) = io.pending(s) {
            let queue = &mut c.queues[s];
            let codec = &c.codecs[s];
            let Some(front) = queue.front_mut() else {
                return false; // a reply nobody asked for
            };
            if front.asking {
                // The reply to the request that let this one be served first.
                match codec.decode(OpKind::Set, buf) {
                    Ok(Decoded::Incomplete) => return io.may_hold(s, codec.declared_len(buf)),
                    Ok(Decoded::Frame {
                        len,
                        reply: Reply::Stored,
                    }) => {
                        front.asking = false;
                        io.consume(s, len);
                        continue;
                    }
                    _ => {
                        let f = queue.pop_front().expect("front exists");
                        c.inflight -= 1;
                        io.tally
                            .finish(&f.r, Outcome::Error(ErrorKind::Protocol), now, None);
                        return false;
                    }
                }
            }
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
            let (len, reply, at) = match decoded {
                Ok(Decoded::Incomplete) => return io.may_hold(s, codec.declared_len(buf)),
                Ok(Decoded::Frame { len, reply }) => (len, reply, 0),
                Ok(Decoded::Tagged { len, reply, tag }) => {
                    match queue.iter().position(|f| f.tag & C::TAG_MASK == tag) {
                        Some(at) => (len, reply, at),
                        None => return false, // a reply nobody asked for
                    }
                }
                Err(_) => {
                    let f = queue.pop_front().expect("front exists");
                    c.inflight -= 1;
                    Self::end_failed(io, &mut c.batches, f, ErrorKind::Protocol, now);
                    return false;
                }
            };
            let f = if at == 0 {
                queue.pop_front()
            } else {
                queue.remove(at)
            }
            .expect("in flight");
            if !f.keys.is_empty() && !matches!(reply, Reply::Redirect { .. }) {
                let error = match reply {
                    Reply::Batch => {
                        batch::judge(&self.spec.values, &f.keys, &self.found, buf, &mut self.got)
                            .err()
                    }
                    Reply::ServerError => Some(ErrorKind::Server),
                    _ => Some(ErrorKind::Protocol),
                };
                io.consume(s, len);
                if error.is_none() {
                    io.served(s);
                }
                c.inflight -= 1;
                self.end_batch(io, &mut c.batches, f, error, now);
                continue;
            }
            let then = match (f.r.op, reply) {
                (OpKind::Get, Reply::Value(r)) => match self.spec.values.verify(f.r.key, &buf[r]) {
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
            };
            io.consume(s, len);
            if let Then::Count(Outcome::Hit | Outcome::Miss | Outcome::Stored, _) = then {
                io.served(s);
            }
            c.inflight -= 1;
            match then {
                Then::Count(outcome, got) => io.tally.finish(&f.r, outcome, now, got),
                Then::Redirect(hop) => self.redirect(io, c, f, hop, now),
            }
        }
        true
    }
}
