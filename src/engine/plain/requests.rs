//! Issuing a plain request: its encoding onto the socket of the node that
//! serves its key, and a redirected request's resend.

use std::net::SocketAddr;
use std::time::Instant;

use super::{InFlight, Plain, PlainConn};
use crate::driver::wire::{Codec, Key, tag_of};
use crate::engine::request_loop::{Io, MAX_SOCKETS, Request};
use crate::results::stats::ErrorKind;
use crate::workload::{OpKind, write_key};

/// Redirects after which a request counts as a server error (a loop).
const MAX_HOPS: u8 = 5;

/// Where a node sent a request.
pub(super) struct Hop {
    /// The key's slot.
    pub slot: u16,
    /// The node to ask.
    pub to: SocketAddr,
    /// For good (the slot moved), not just for this request.
    pub moved: bool,
}

impl<C: Codec> Plain<'_, C> {
    /// Tags `r` and sends it to the node that serves its key.
    #[inline]
    pub(super) fn issue(&mut self, io: &mut Io<'_>, c: &mut PlainConn<C>, r: Request) {
        write_key(&self.spec.key_prefix, r.key, &mut self.key);
        let tag = tag_of(c.next, r.op);
        c.next = c.next.wrapping_add(1) & (u32::MAX >> 1);
        let mut keys = Vec::new();
        if r.op == OpKind::Get && self.spec.batch.is_some() {
            keys = c.batches.spare();
            keys.push((r.key, r.version));
            keys.extend_from_slice(io.extra);
        }
        let f = InFlight {
            r,
            tag,
            asking: false,
            hops: 0,
            keys,
            parent: None,
        };
        if !f.keys.is_empty() && self.router.sharded() {
            return self.issue_parts(io, c, f);
        }
        let node = match (self.router.replicated(), r.op) {
            (true, OpKind::Get) => self.router.read_node(|n| io.is_open(n)),
            (true, OpKind::Set) => 0,
            (false, _) => self.node_of(io, &self.key),
        };
        self.send(io, c, node, f, r.sent);
    }

    /// The node a request for key `name` goes to.
    #[inline]
    pub(super) fn node_of(&self, io: &mut Io<'_>, name: &[u8]) -> usize {
        let node = self.router.route(&self.codec, name);
        if io.out(node).is_none()
            && let Some(other) = (0..io.sockets()).find(|&s| io.out(s).is_some())
        {
            // The key's node is down (a sharded target: only there may a
            // socket be down while requests go out). Another node redirects
            // the request to whoever serves the slot now: once a replica has
            // taken over, the slot map learns it; until then the redirect
            // leads back to the dead node and the request fails.
            return other;
        }
        node
    }

    /// Encodes `f` (its key name already in `self.key`) onto the socket of
    /// `node` and puts it in flight; counts it as failed when that socket is
    /// down.
    #[inline]
    pub(super) fn send(
        &mut self,
        io: &mut Io<'_>,
        c: &mut PlainConn<C>,
        node: usize,
        f: InFlight,
        now: Instant,
    ) {
        if node >= io.sockets() && !self.reach(io, c, node, now) {
            return Self::end_failed(io, &mut c.batches, f, ErrorKind::Server, now);
        }
        let Some(out) = io.out(node) else {
            return Self::end_failed(io, &mut c.batches, f, ErrorKind::Disconnect, now);
        };
        let codec = &c.codecs[node];
        if f.asking {
            codec.encode_asking(out);
        }
        let k = Key {
            id: f.r.key,
            name: &self.key,
            tag: f.tag,
        };
        match f.r.op {
            OpKind::Get if !f.keys.is_empty() => {
                let b = super::batch::names(
                    &self.spec.key_prefix,
                    &f.keys,
                    f.tag,
                    (&mut self.names, &mut self.ends, &mut self.ids),
                );
                codec.encode_get_many(&b, out);
            }
            OpKind::Get => codec.encode_get(k, out),
            OpKind::Set => {
                self.value.clear();
                self.spec
                    .values
                    .write_version(f.r.key, f.r.version, &mut self.value);
                codec.encode_set_ttl(k, &self.value, self.spec.ttl_s, out);
            }
        }
        c.queues[node].push_back(f);
        c.inflight += 1;
    }

    /// Adds sockets to `c` up to `node`'s, opening the new ones (a redirect to
    /// a node the connection has not reached yet); `false` when `node` is
    /// beyond what a connection may reach.
    fn reach(&mut self, io: &mut Io<'_>, c: &mut PlainConn<C>, node: usize, now: Instant) -> bool {
        if node >= MAX_SOCKETS {
            return false;
        }
        while io.sockets() <= node {
            let s = io.sockets();
            self.grow(c, s + 1);
            if let Some(session) = io.add_socket(self.router.connector(s), self.spec.link, now) {
                c.codecs[s] = self.codec.bind(&session);
            }
        }
        true
    }

    /// A node said another one serves `f`'s slot: learn it (`moved`) and send
    /// `f` there, keeping its intended start (the redirect is part of its
    /// latency). Rare: only while the slot map changes.
    pub(super) fn redirect(
        &mut self,
        io: &mut Io<'_>,
        c: &mut PlainConn<C>,
        mut f: InFlight,
        hop: Hop,
        now: Instant,
    ) {
        if f.r.measured {
            io.tally.redirects[usize::from(!hop.moved)] += 1;
        }
        // A target that is not sharded answers a redirect only when it is a
        // cluster node addressed as a single server: an error, not a route.
        if f.hops >= MAX_HOPS || !self.router.sharded() {
            return Self::end_failed(io, &mut c.batches, f, ErrorKind::Server, now);
        }
        let node = self.router.redirected(hop.slot, hop.to, hop.moved);
        f.hops += 1;
        f.asking = !hop.moved;
        write_key(&self.spec.key_prefix, f.r.key, &mut self.key);
        self.send(io, c, node, f, now);
    }
}
