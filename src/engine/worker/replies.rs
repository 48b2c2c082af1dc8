//! Replies: reading a leg's socket, decoding every whole reply, matching it to
//! its request (in order, or by tag), verifying the value, following a
//! redirect, and counting the outcome and its latency into the worker's
//! recorder, handed over once a second.

use std::io;
use std::sync::mpsc::Sender;
use std::time::Instant;

use super::requests::Hop;
use super::{Conn, Ctx, InFlight};
use crate::engine::route::parse_addr;
use crate::engine::spec::Tick;
use crate::stats::{ErrorKind, Outcome};
use crate::wire::{Codec, Decoded, Reply};
use crate::workload::OpKind;

/// What to do with the request a reply answered, once the buffer is released.
enum Then {
    Count(Outcome, Option<u64>),
    Redirect(Hop),
}

impl<C: Codec> Ctx<'_, C> {
    /// Reads what leg `l` of connection `i` has, handles every whole reply,
    /// then issues what the loop allows.
    pub(super) fn on_readable(&mut self, c: &mut Conn<C>, i: usize, l: usize, now: Instant) {
        loop {
            let link = &mut c.legs[l].link;
            if link.stream.is_none() {
                return;
            }
            match link.read_some() {
                Ok((0, _)) => return self.close(c, l, now),
                Ok((_, more)) => {
                    if !self.parse(c, i, l, now) {
                        return self.close(c, l, now);
                    }
                    if !more {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.close(c, l, now),
            }
        }
        if self.pacer.is_none() {
            let now = Instant::now();
            self.refill(c, i, now);
            self.flush(c, now);
        } else if let Some(p) = self.pacer
            && c.due <= now
            && !self.draining
            && c.ready()
        {
            let now = Instant::now();
            self.issue_due(c, i, p, now);
            self.flush(c, now);
        }
    }

    /// Decodes every whole reply buffered on leg `l`; `false` when the stream
    /// is broken.
    #[inline]
    fn parse(&mut self, c: &mut Conn<C>, i: usize, l: usize, now: Instant) -> bool {
        loop {
            let leg = &mut c.legs[l];
            let buf = &leg.link.rbuf[leg.link.rstart..leg.link.rend];
            if buf.is_empty() {
                leg.link.rstart = 0;
                leg.link.rend = 0;
                return true;
            }
            let Some(front) = leg.inflight.front_mut() else {
                return false; // a reply nobody asked for
            };
            if front.asking {
                // The reply to the request that let this one be served first.
                match leg.link.codec.decode(OpKind::Set, buf) {
                    Ok(Decoded::Incomplete) => return true,
                    Ok(Decoded::Frame {
                        len,
                        reply: Reply::Stored,
                    }) => {
                        front.asking = false;
                        leg.link.rstart += len;
                        continue;
                    }
                    _ => {
                        let f = leg.inflight.pop_front().expect("front exists");
                        c.inflight -= 1;
                        self.inflight -= 1;
                        self.count(&f, Outcome::Error(ErrorKind::Protocol), None, None);
                        return false;
                    }
                }
            }
            let (len, reply, at) = match leg.link.codec.decode(front.op, buf) {
                Ok(Decoded::Incomplete) => return true,
                Ok(Decoded::Frame { len, reply }) => (len, reply, 0),
                Ok(Decoded::Tagged { len, reply, tag }) => {
                    match leg.inflight.iter().position(|f| f.tag & C::TAG_MASK == tag) {
                        Some(at) => (len, reply, at),
                        None => return false, // a reply nobody asked for
                    }
                }
                Err(_) => {
                    let f = leg.inflight.pop_front().expect("front exists");
                    c.inflight -= 1;
                    self.inflight -= 1;
                    self.count(&f, Outcome::Error(ErrorKind::Protocol), None, None);
                    return false;
                }
            };
            let f = if at == 0 {
                leg.inflight.pop_front()
            } else {
                leg.inflight.remove(at)
            }
            .expect("in flight");
            let then = match (f.op, reply) {
                (OpKind::Get, Reply::Value(r)) => match self.values.verify(f.key, &buf[r]) {
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
            leg.link.rstart += len;
            if let Then::Count(Outcome::Hit | Outcome::Miss | Outcome::Stored, _) = then {
                leg.served = true;
            }
            c.inflight -= 1;
            self.inflight -= 1;
            match then {
                Then::Count(outcome, got) => self.count(&f, outcome, Some(now), got),
                Then::Redirect(hop) => self.redirect(c, i, f, hop, now),
            }
        }
    }

    /// Counts a finished request (`got`: the version a GET returned) and, when
    /// versions are tracked, ends its write or judges its read.
    #[inline]
    pub(super) fn count(
        &mut self,
        f: &InFlight,
        outcome: Outcome,
        done: Option<Instant>,
        got: Option<u64>,
    ) {
        let get = f.op == OpKind::Get;
        let mut stale = None;
        if let Some(b) = &self.spec.board {
            if get {
                stale = got.map(|v| b.judge(f.key, f.version, v, f.sent));
            } else {
                let ok = outcome == Outcome::Stored;
                b.end_write(f.key, f.version, ok, done.unwrap_or_else(Instant::now));
            }
        }
        if !f.measured {
            self.interval_warm.count(get, outcome);
            return;
        }
        self.interval.counts.count(get, outcome);
        if let Some(s) = stale {
            self.interval.checked_read(s);
        }
        if let (Some(done), false) = (done, matches!(outcome, Outcome::Error(_))) {
            let lat = done.saturating_duration_since(f.intended).as_nanos() as u64;
            self.interval.latency.saturating_record(lat.max(1));
            if self.pacer.is_some() {
                let svc = done.saturating_duration_since(f.sent).as_nanos() as u64;
                self.interval.service.saturating_record(svc.max(1));
            }
        }
    }

    pub(super) fn send_tick(&mut self, ticks: &Sender<Tick>, second: i64) {
        let rec = std::mem::take(&mut self.interval);
        let warm = std::mem::take(&mut self.interval_warm);
        self.total.add(&rec);
        self.warm.add(&warm);
        let _ = ticks.send(Tick {
            second,
            measured: rec,
            warmup: warm,
        });
    }
}
