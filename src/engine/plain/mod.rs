//! The plain client: each request is one command on one socket, up to P in
//! flight per socket (pipelined), every reply verified. On a plain target a
//! connection is one socket; on a sharded one a socket to each node, each
//! request going to the node that serves its key's slot (redirects followed,
//! see `route`). The request loop ([`super::request_loop`]) does the rest.
//!
//! # Layout
//! - `requests`: encoding a request onto its node's socket, redirects.
//! - `replies`: decoding, matching (in order or by tag), verifying, counting.
//! - `route`: the node of each request on a sharded target.
//! - `batch`: batch reads (`--batch`): one request reading several keys.

mod batch;
mod replies;
mod requests;
mod route;

use std::collections::VecDeque;
use std::time::Instant;

use super::request_loop::{Client, Io, Request};
use super::spec::Spec;
use crate::driver::Connector;
use crate::driver::wire::{Codec, Session};
use crate::results::stats::ErrorKind;
use route::Router;

/// A request in flight on a socket.
struct InFlight {
    r: Request,
    /// The tag it was sent with (matches out-of-order replies).
    tag: u32,
    /// Sent after an ASKING-like request whose reply comes first.
    asking: bool,
    /// Times it was redirected.
    hops: u8,
    /// A batch read's keys with their versions, the first being `r`'s
    /// (empty for other requests); the vector comes from the connection's spares.
    keys: Vec<(u64, u64)>,
    /// On a sharded target, the batch read this is a part of (its keys of
    /// one slot): an index into the connection's parents.
    parent: Option<u32>,
}

/// One connection of the plain client: a codec bound to each socket's session
/// and the requests in flight on it.
pub struct PlainConn<C> {
    codecs: Vec<C>,
    queues: Vec<VecDeque<InFlight>>,
    /// Requests in flight over all sockets.
    inflight: usize,
    /// Number of the next request on this connection (its tag).
    next: u32,
    /// Batch reads' key lists and, on a sharded target, their parts.
    batches: batch::Batches,
}

/// The plain client of one worker, generic over the protocol codec.
pub struct Plain<'a, C> {
    codec: C,
    spec: &'a Spec,
    router: Router,
    /// The key name being encoded.
    key: Vec<u8>,
    /// The value being written.
    value: Vec<u8>,
    /// A batch read's key names (end to end), where each ends, and the keys'
    /// ids; and the versions its values carried.
    names: Vec<u8>,
    ends: Vec<u32>,
    ids: Vec<u64>,
    found: Vec<(u64, std::ops::Range<usize>)>,
    got: Vec<Option<u64>>,
    /// The near cache (`--near-cache`): reads it holds end in the worker;
    /// hits fill it; writes and the server's invalidations empty it.
    near: Option<crate::engine::near::Near>,
}

impl<'a, C: Codec> Plain<'a, C> {
    /// The client of one worker running `spec` with `codec`.
    pub fn new(codec: C, spec: &'a Spec) -> Plain<'a, C> {
        Plain {
            codec,
            spec,
            router: Router::new(
                &spec.connector,
                spec.topology.as_deref(),
                &spec.replicas,
                spec.read_from,
            ),
            key: Vec::with_capacity(spec.key_prefix.len() + 24),
            value: Vec::with_capacity(spec.values.typical()),
            names: Vec::new(),
            ends: Vec::new(),
            ids: Vec::new(),
            found: Vec::new(),
            got: Vec::new(),
            near: crate::engine::near::Near::of(spec),
        }
    }

    /// Grows `c`'s per-socket state to `n` sockets.
    fn grow(&self, c: &mut PlainConn<C>, n: usize) {
        while c.codecs.len() < n {
            c.codecs.push(self.codec.clone());
            c.queues
                .push(VecDeque::with_capacity(self.spec.pipeline * 2));
        }
    }
}

impl<C: Codec> Client for Plain<'_, C> {
    type Conn = PlainConn<C>;

    fn conn(&self) -> PlainConn<C> {
        let mut c = PlainConn {
            codecs: Vec::new(),
            queues: Vec::new(),
            inflight: 0,
            next: 0,
            batches: batch::Batches::default(),
        };
        self.grow(&mut c, self.router.nodes());
        c
    }

    fn sockets(&self) -> usize {
        self.router.nodes()
    }

    fn connector(&self, s: usize) -> &Connector {
        self.router.connector(s)
    }

    fn link(&self, _: usize) -> Option<crate::workload::LinkDelay> {
        self.spec.link
    }

    /// On a sharded target a node may die (a primary killed, its replica
    /// taking over): the connection goes on with the others, and a request
    /// for the dead node's slots asks another node where they went.
    /// So may a server with read replicas: reads go on to those up, and
    /// requests for a dead one fail (no failover is promised).
    fn optional(&self, _: usize) -> bool {
        self.router.sharded() || self.router.replicated()
    }

    fn buffers(&self) -> (usize, usize) {
        // Room for two pipelines of replies, at least 64 KiB, at most 4 MiB unless
        // one reply alone needs more (the buffer also grows if a reply does not fit).
        let frame = self.spec.values.typical() + 128;
        let p = self.spec.pipeline;
        let read = (p * frame * 2).clamp(64 * 1024, (4 << 20).max(2 * frame));
        ((p * frame).min(4 << 20), read)
    }

    fn opened(&self, c: &mut Self::Conn, s: usize, session: &Session) {
        self.grow(c, s + 1);
        c.codecs[s] = self.codec.bind(session);
    }

    /// `--pipeline` per node a connection reaches (one on a plain target), as
    /// a cluster client pipelines to each node (memtier_benchmark's cluster
    /// mode does the same).
    #[inline]
    fn depth(&self, _: &Self::Conn, sockets: usize) -> usize {
        self.spec.pipeline * sockets.max(1)
    }

    #[inline]
    fn inflight(&self, c: &Self::Conn) -> usize {
        c.inflight
    }

    #[inline]
    fn start(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, r: Request) {
        if let Some(near) = self.near.as_mut()
            && near.answer(io, &r, &self.spec.values)
        {
            return;
        }
        self.issue(io, c, r);
    }

    #[inline]
    fn replies(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, s: usize, now: Instant) -> bool {
        self.parse(io, c, s, now)
    }

    fn oldest(&self, c: &Self::Conn, s: usize) -> Option<Instant> {
        c.queues.get(s)?.front().map(|f| f.r.sent)
    }

    fn fail(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, s: usize, kind: ErrorKind) {
        let Some(q) = c.queues.get_mut(s) else { return };
        let now = Instant::now();
        while let Some(f) = q.pop_front() {
            c.inflight -= 1;
            Self::end_failed(io, &mut c.batches, f, kind, now);
        }
    }
}
