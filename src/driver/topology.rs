//! Sharded targets: which node serves which slot of the key space, as the
//! servers reported it when the run began, and a key's slot by the cluster's
//! hash ([`hash_slot`]: Redis and Valkey Cluster, the sharded products). The engine routes every request by
//! its key's slot ([`crate::driver::wire::Codec::slot`]), keeps its own copy of this map
//! per worker and updates it when a node redirects a request.

use std::net::SocketAddr;

/// Hash slots of a Redis/Valkey Cluster.
pub const SLOTS: usize = 16384;

const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);

/// The cluster hash slot of `key`: CRC16 (XMODEM) of the key, or of its hash
/// tag (the bytes between the first `{` and the next `}`, when not empty),
/// modulo 16384.
#[inline]
pub fn hash_slot(key: &[u8]) -> u16 {
    let mut k = key;
    if let Some(open) = key.iter().position(|&b| b == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&b| b == b'}')
        && len > 0
    {
        k = &key[open + 1..open + 1 + len];
    }
    CRC16.checksum(k) & (SLOTS as u16 - 1)
}

/// A slot nobody serves yet.
pub const UNASSIGNED: u16 = u16::MAX;

/// The nodes of a sharded target and the node serving each slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// The nodes requests go to (primaries), by index.
    pub nodes: Vec<SocketAddr>,
    /// For each slot, the index in `nodes` of the node serving it, or
    /// [`UNASSIGNED`].
    pub slots: Vec<u16>,
}

impl Topology {
    /// An empty map of `slots` slots.
    pub fn new(slots: usize) -> Topology {
        Topology {
            nodes: Vec::new(),
            slots: vec![UNASSIGNED; slots],
        }
    }

    /// The index of node `addr`, added if new.
    pub fn node(&mut self, addr: SocketAddr) -> usize {
        match self.nodes.iter().position(|n| *n == addr) {
            Some(i) => i,
            None => {
                self.nodes.push(addr);
                self.nodes.len() - 1
            }
        }
    }

    /// Marks slots `from..=to` as served by `addr`.
    pub fn assign(&mut self, from: usize, to: usize, addr: SocketAddr) {
        let n = self.node(addr) as u16;
        let last = to.min(self.slots.len().saturating_sub(1));
        for s in self.slots.iter_mut().take(last + 1).skip(from) {
            *s = n;
        }
    }

    /// How many slots no node serves.
    pub fn unassigned(&self) -> usize {
        self.slots.iter().filter(|&&s| s == UNASSIGNED).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assigns_slot_ranges_to_nodes() {
        let a: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:7001".parse().unwrap();
        let mut t = Topology::new(16);
        t.assign(0, 7, a);
        assert_eq!(t.unassigned(), 8);
        t.assign(8, 99, b);
        assert_eq!(t.unassigned(), 0);
        assert_eq!(t.slots[7], 0);
        assert_eq!(t.slots[8], 1);
        assert_eq!(t.node(a), 0);
        assert_eq!(t.nodes.len(), 2);
    }
}
