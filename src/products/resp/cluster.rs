//! Redis/Valkey Cluster as a target: `redis-cluster://host:port` names one
//! seed node; kvlab reads the slot map from it (`CLUSTER NODES`), routes every
//! request to the primary serving its key's hash slot (the engine follows
//! MOVED and ASK), and sums the server counters and memory over the primaries.
//! The managed cluster is in [`super::cluster_server`].

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::codec::{SLOTS, bulk_payload, command, hash_slot, info_field};
use super::{
    REDIS, REDIS_FACTS, RespProduct, VALKEY, VALKEY_FACTS, node_counters, node_memory, open,
};
use crate::driver::product::declares;
use crate::driver::wire::Session;
use crate::driver::{
    Cache, CacheMemory, Connector, Facts, OwnKeys, Product, ReportedUsage, Server, ServerCounters,
    ServerInfo, Topology,
};
use crate::transport::Stream;

/// A cluster's batch read.
const BATCH: &str = "an MGET per hash slot the keys fall in, each to its slot's node, as a cluster client does: the nodes count a command per slot, a keyspace hit or miss per key";

/// A RESP product in cluster mode.
pub struct ClusterProduct {
    pub(super) base: &'static RespProduct,
    facts: &'static Facts,
}

/// What Redis Cluster declares: Redis's server, nodes reached at the TCP
/// addresses the cluster reports (no unix sockets), keys spread by slot.
const REDIS_CLUSTER_FACTS: Facts = Facts {
    name: "redis-cluster",
    title: "Redis/Valkey Cluster",
    schemes: &["redis-cluster"],
    tls_schemes: &[],
    example_url: "redis-cluster://127.0.0.1:7000",
    unix_sockets: false,
    unix_url_example: None,
    sharded: true,
    batch_reads: Some(BATCH),
    ..REDIS_FACTS
};

/// What Valkey Cluster declares (as Redis Cluster, with Valkey's server).
const VALKEY_CLUSTER_FACTS: Facts = Facts {
    name: "valkey-cluster",
    schemes: &["valkey-cluster"],
    example_url: "valkey-cluster://127.0.0.1:7000",
    server: VALKEY_FACTS.server,
    ..REDIS_CLUSTER_FACTS
};

/// Redis Cluster (`redis-server` nodes with `cluster-enabled yes`).
pub static REDIS_CLUSTER: ClusterProduct = ClusterProduct {
    base: &REDIS,
    facts: &REDIS_CLUSTER_FACTS,
};

/// Valkey Cluster (`valkey-server` nodes with `cluster-enabled yes`).
pub static VALKEY_CLUSTER: ClusterProduct = ClusterProduct {
    base: &VALKEY,
    facts: &VALKEY_CLUSTER_FACTS,
};

impl Product for ClusterProduct {
    declares!(self.facts, Cache);

    /// A node's connection, as to a single server.
    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(Stream, Session)> {
        self.base.connect(c, timeout)
    }

    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo> {
        super::probe(c, timeout, true, self.base.facts.name)
    }

    fn counters(&self, c: &Connector) -> Result<ServerCounters> {
        let zero = ServerCounters::requests(0, 0);
        primaries(c)?
            .iter()
            .try_fold(zero, |sum, node| Ok(sum.plus(&node_counters(node)?)))
    }

    fn reported_usage(&self, c: &Connector) -> Result<ReportedUsage> {
        // Every node's process, replicas included, as for a managed cluster.
        let text = cluster_nodes(c)?;
        let mut sum = ReportedUsage {
            cpu_s: 0.0,
            memory_bytes: Some(0),
        };
        for n in node_lines(&text, c.addr)? {
            let u = super::node_usage(&c.at(n.addr))?;
            sum.cpu_s += u.cpu_s;
            sum.memory_bytes = sum.memory_bytes.zip(u.memory_bytes).map(|(a, b)| a + b);
        }
        Ok(sum)
    }

    fn topology(&self, c: &Connector) -> Result<Option<Topology>> {
        let t = read_topology(c)?;
        let missing = t.unassigned();
        if missing > 0 {
            bail!(
                "{}: the cluster serves {} of {SLOTS} slots; assign the rest (CLUSTER ADDSLOTS) or wait for cluster_state:ok",
                c.display,
                SLOTS - missing
            );
        }
        Ok(Some(t))
    }

    fn server(&self) -> &dyn Server {
        self
    }
}

impl Cache for ClusterProduct {
    fn eviction_defaults(&self) -> &'static [(&'static str, &'static str)] {
        &super::EVICTION_DEFAULTS
    }
    /// The first primary's (a cluster's nodes are set alike).
    fn eviction_settings(&self, c: &Connector) -> Option<BTreeMap<String, String>> {
        super::eviction_settings(primaries(c).ok()?.first()?)
    }
    fn memory(&self, c: &Connector) -> Result<CacheMemory> {
        primaries(c)?
            .iter()
            .try_fold(CacheMemory::default(), |sum, node| {
                Ok(sum.plus(&node_memory(node)?))
            })
    }
    /// A `DEL` per hash slot, on the primary serving it.
    fn delete_keys(&self, c: &Connector, keys: OwnKeys<'_>) -> Result<u64> {
        let OwnKeys {
            prefix,
            numbers: keys,
        } = keys;
        let t = read_topology(c)?;
        let mut streams: Vec<Option<crate::transport::Stream>> =
            t.nodes.iter().map(|_| None).collect();
        let mut deleted = 0;
        loop {
            let mut by_slot: std::collections::BTreeMap<u16, Vec<Vec<u8>>> = Default::default();
            for k in (&mut *keys).take(100_000) {
                let mut n = Vec::new();
                crate::workload::write_key(prefix, k, &mut n);
                by_slot.entry(hash_slot(&n)).or_default().push(n);
            }
            if by_slot.is_empty() {
                return Ok(deleted);
            }
            for (slot, names) in by_slot {
                let node = t.slots[slot as usize];
                let Some(addr) = t.nodes.get(node as usize) else {
                    bail!("no node serves slot {slot} of {}", c.display);
                };
                let s = match &mut streams[node as usize] {
                    Some(s) => s,
                    none => {
                        let s = open(&c.at(*addr), Duration::from_secs(5))?;
                        s.set_timeout(Some(Duration::from_secs(10)))?;
                        none.insert(s)
                    }
                };
                deleted += super::del(s, &names)?;
            }
        }
    }
    fn flush(&self, c: &Connector) -> Result<()> {
        for node in primaries(c)? {
            super::RespProduct::flush_node(&node)?;
        }
        Ok(())
    }
    fn load_hint(&self, value_size: usize, managed: bool) -> String {
        super::load_hint(value_size, managed)
    }
}

/// Whether the server on `s` runs in cluster mode (`INFO cluster`).
pub(crate) fn cluster_enabled(s: &mut Stream) -> Result<bool> {
    let frame = command(s, &[b"INFO", b"cluster"])?;
    let text = String::from_utf8_lossy(bulk_payload(&frame)?).into_owned();
    Ok(info_field(&text, "cluster_enabled").as_deref() == Some("1"))
}

/// Connectors to every primary serving slots.
fn primaries(c: &Connector) -> Result<Vec<Connector>> {
    Ok(read_topology(c)?.nodes.iter().map(|&a| c.at(a)).collect())
}

/// The slot map as the seed node `c` reports it.
pub(crate) fn read_topology(c: &Connector) -> Result<Topology> {
    let text = cluster_nodes(c)?;
    parse_nodes(&text, c.addr)
}

/// `CLUSTER NODES` of the node `c` names.
pub(crate) fn cluster_nodes(c: &Connector) -> Result<String> {
    let s = open(c, Duration::from_secs(5))
        .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", c.display))?;
    let mut s = s;
    s.set_timeout(Some(Duration::from_secs(5)))?;
    let frame = command(&mut s, &[b"CLUSTER", b"NODES"])?;
    let payload = bulk_payload(&frame).with_context(|| format!("{}: CLUSTER NODES", c.display))?;
    Ok(String::from_utf8_lossy(payload).into_owned())
}

/// One line of `CLUSTER NODES`.
pub(crate) struct NodeLine {
    /// Its address (`seed`'s host when the node does not know its own yet).
    pub addr: SocketAddr,
    /// A primary (not a replica), not failed.
    pub primary: bool,
    /// Slot ranges it serves (migrations in brackets skipped).
    pub slots: Vec<(usize, usize)>,
}

/// Parses `CLUSTER NODES` lines.
pub(crate) fn node_lines(text: &str, seed: SocketAddr) -> Result<Vec<NodeLine>> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            bail!("unexpected CLUSTER NODES line: {line}");
        }
        let hostport = f[1].split(['@', ',']).next().unwrap_or_default();
        let (host, port) = hostport
            .rsplit_once(':')
            .with_context(|| format!("no address in CLUSTER NODES line: {line}"))?;
        let port: u16 = port
            .parse()
            .with_context(|| format!("bad port in CLUSTER NODES line: {line}"))?;
        let ip = if host.is_empty() {
            seed.ip()
        } else {
            host.parse()
                .with_context(|| format!("bad address in CLUSTER NODES line: {line}"))?
        };
        let flags: Vec<&str> = f[2].split(',').collect();
        let primary = flags.contains(&"master")
            && !flags
                .iter()
                .any(|x| matches!(*x, "fail" | "handshake" | "noaddr"));
        let mut slots = Vec::new();
        for s in f[8..].iter().filter(|s| !s.starts_with('[')) {
            let (a, b) = s.split_once('-').unwrap_or((s, s));
            match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if a <= b && b < SLOTS => slots.push((a, b)),
                _ => bail!("bad slot range '{s}' in CLUSTER NODES"),
            }
        }
        out.push(NodeLine {
            addr: SocketAddr::new(ip, port),
            primary,
            slots,
        });
    }
    Ok(out)
}

fn parse_nodes(text: &str, seed: SocketAddr) -> Result<Topology> {
    let mut t = Topology::new(SLOTS);
    for n in node_lines(text, seed)? {
        if n.primary {
            for (a, b) in n.slots {
                t.assign(a, b, n.addr);
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_slot_map_from_cluster_nodes() {
        let text = "\
07c3 127.0.0.1:30004@31004 slave e7d1 0 1426238317239 4 connected
67ed 127.0.0.1:30002@31002,node-2 master - 0 1426238316232 2 connected 5461-10922
292f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383 [10922-<-67ed]
e7d1 :30001@31001 myself,master - 0 0 1 connected 0-5459 5460
";
        let seed: SocketAddr = "127.0.0.1:30001".parse().unwrap();
        let t = parse_nodes(text, seed).unwrap();
        assert_eq!(t.unassigned(), 0);
        assert_eq!(t.nodes.len(), 3);
        assert_eq!(t.nodes[usize::from(t.slots[0])], seed);
        assert_eq!(t.nodes[usize::from(t.slots[5460])], seed);
        assert_eq!(t.nodes[usize::from(t.slots[5461])].port(), 30002);
        assert_eq!(t.nodes[usize::from(t.slots[16383])].port(), 30003);
        assert!(parse_nodes("x y", seed).is_err());
        let failed = "a 127.0.0.1:1@2 master,fail - 0 0 1 connected 0-16383\n";
        assert_eq!(parse_nodes(failed, seed).unwrap().unassigned(), SLOTS);
    }
}
