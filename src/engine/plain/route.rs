//! Routing requests on a sharded target: a worker's own copy of the slot map
//! ([`Topology`]) and a connector per node; on a database with read replicas,
//! reads to the replicas in turn and writes to the primary (node 0). A plain
//! target has one node and routes nothing. Updated only when a node redirects a request (rare), so
//! routing a request is one slot computation and one table lookup.

use std::net::SocketAddr;

use crate::driver::topology::UNASSIGNED;
use crate::driver::wire::Codec;
use crate::driver::{Connector, Topology};
use crate::plan::reads::ReadFrom;

/// The nodes a worker's connections reach, and which serves each slot.
pub(crate) struct Router {
    topology: Option<Topology>,
    connectors: Vec<Connector>,
    /// With read replicas (nodes 1..): the nodes reads go to, and the next.
    reads: std::ops::Range<usize>,
    next_read: usize,
}

impl Router {
    /// Routes by `topology` (sharded), to `base` and its read `replicas`
    /// (reads to those `read_from` names, writes to `base`), or to `base`
    /// alone.
    pub(crate) fn new(
        base: &Connector,
        topology: Option<&Topology>,
        replicas: &[Connector],
        read_from: ReadFrom,
    ) -> Router {
        let connectors = match topology {
            Some(t) => t.nodes.iter().map(|&a| base.at(a)).collect(),
            None => std::iter::once(base).chain(replicas).cloned().collect(),
        };
        let reads = read_from.servers(replicas.len());
        Router {
            topology: topology.cloned(),
            connectors,
            next_read: reads.start,
            reads,
        }
    }

    /// Whether requests are routed by slot.
    pub(crate) fn sharded(&self) -> bool {
        self.topology.is_some()
    }

    /// Whether the target has read replicas (reads and writes go apart).
    #[inline]
    pub(crate) fn replicated(&self) -> bool {
        self.topology.is_none() && self.connectors.len() > 1
    }

    /// The next node reads go to, in turn, among those `up` says are open
    /// (the next in turn when none is).
    #[inline]
    pub(crate) fn read_node(&mut self, up: impl Fn(usize) -> bool) -> usize {
        for _ in 0..self.reads.len() {
            let n = self.next_read;
            self.next_read = if n + 1 >= self.reads.end {
                self.reads.start
            } else {
                n + 1
            };
            if up(n) {
                return n;
            }
        }
        self.next_read
    }

    /// Nodes known now.
    pub(crate) fn nodes(&self) -> usize {
        self.connectors.len()
    }

    /// The node serving key `name` (node 0 for a slot nobody serves: it
    /// redirects).
    #[inline]
    pub(crate) fn route<C: Codec>(&self, codec: &C, name: &[u8]) -> usize {
        let Some(t) = &self.topology else { return 0 };
        match t.slots.get(usize::from(codec.slot(name))) {
            Some(&n) if n != UNASSIGNED => usize::from(n),
            _ => 0,
        }
    }

    /// The node at `addr` (added if new); `moved`: it now serves `slot`.
    pub(crate) fn redirected(&mut self, slot: u16, addr: SocketAddr, moved: bool) -> usize {
        let Some(t) = self.topology.as_mut() else {
            return 0;
        };
        let node = t.node(addr);
        if node == self.connectors.len() {
            let c = self.connectors[0].at(addr);
            self.connectors.push(c);
        }
        if moved && let Some(s) = t.slots.get_mut(usize::from(slot)) {
            *s = node as u16;
        }
        node
    }

    /// How to connect to node `node`.
    pub(crate) fn connector(&self, node: usize) -> &Connector {
        &self.connectors[node]
    }
}

/// The address in a redirect (`host:port` as the server wrote it; a host name
/// is resolved, which happens only when a node names itself so).
pub(crate) fn parse_addr(text: &[u8]) -> Option<SocketAddr> {
    let (host, port) = std::str::from_utf8(text).ok()?.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Some(SocketAddr::new(ip, port));
    }
    std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()?
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_redirect_addresses() {
        assert_eq!(
            parse_addr(b"127.0.0.1:7001"),
            Some("127.0.0.1:7001".parse().unwrap())
        );
        assert_eq!(parse_addr(b"::1:7001"), Some("[::1]:7001".parse().unwrap()));
        assert_eq!(parse_addr(b"localhost:7001").map(|a| a.port()), Some(7001));
        assert_eq!(parse_addr(b"nonsense"), None);
    }
}
