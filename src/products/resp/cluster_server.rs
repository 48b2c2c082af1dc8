//! A managed Redis/Valkey Cluster: `--server-opt shards=N` (default 3) primaries
//! and `replicas=0|1` replica each, every other setting passed to every node as
//! for a single server. kvlab starts the nodes (cluster mode, bus on a second
//! free port), joins them (`CLUSTER MEET`), gives each primary an equal range
//! of the 16384 slots (`CLUSTER ADDSLOTSRANGE`), attaches the replicas, and
//! waits until every replica is in sync and every node reports
//! `cluster_state:ok` with every slot served.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::cluster::{ClusterProduct, cluster_nodes, node_lines};
use super::codec::{SLOTS, bulk_payload, command, info_field};
use super::open;
use crate::driver::settings::refuse_own;
use crate::driver::{Config, Connector, Launch, Login, Server, Sizing};
use crate::transport::Stream;

/// Settings kvlab sets itself on a cluster node.
const OWN: &[&str] = &["cluster-enabled", "cluster-config-file", "cluster-port"];
/// The most primaries a managed cluster may have.
const MAX_SHARDS: usize = 64;

impl Server for ClusterProduct {
    /// Not yet: its nodes would have to meet over a TLS cluster bus.
    fn serves_tls(&self) -> Result<(), &'static str> {
        Err(
            "a managed cluster runs plain for now (an external cluster with TLS: redis-cluster:// with --tls)",
        )
    }

    fn nodes(&self, opts: &BTreeMap<String, String>) -> usize {
        shards(opts).unwrap_or(1)
    }

    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config> {
        let shards = shards(opts)?;
        let mut rest = opts.clone();
        rest.remove("shards");
        let replicas = match rest.remove("replicas").as_deref() {
            None | Some("0") => 0,
            Some("1") => 1,
            Some(v) => bail!("--server-opt replicas={v}: use 0 or 1 (replicas per primary)"),
        };
        for k in rest.keys() {
            let key = k.trim_start_matches("--");
            refuse_own(k, key, OWN)?;
        }
        // Replicas log in to their primary with the same password.
        if replicas > 0
            && let Some(pw) = rest.get("requirepass").cloned()
        {
            rest.entry("masterauth".into()).or_insert(pw);
        }
        let mut config = self.base.configure(&rest, sizing)?;
        config.settings.insert("shards".into(), shards.to_string());
        config
            .settings
            .insert("replicas".into(), replicas.to_string());
        Ok(config)
    }

    fn processes(&self, config: &Config) -> usize {
        let (shards, replicas) = layout(config);
        shards * (1 + replicas)
    }

    fn command(&self, l: &Launch<'_>) -> Result<(Command, Login)> {
        let (mut cmd, login) = self.base.command(l)?;
        cmd.args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ])
        .arg("--cluster-port")
        .arg(l.aux_port.to_string());
        // How long a node may be silent before the others mark it failed and
        // its replica takes over; `--server-opt cluster-node-timeout=MS`.
        // A replica's first sync starts at once rather than after 5 s, so
        // that the cluster is ready (every replica in sync) sooner.
        for (k, v) in [
            ("--cluster-node-timeout", "5000"),
            ("--repl-diskless-sync-delay", "0"),
        ] {
            if !l.config.args.iter().any(|a| a == k) {
                cmd.args([k, v]);
            }
        }
        Ok((cmd, login))
    }

    fn join(&self, nodes: &[Connector], config: &Config, deadline: Instant) -> Result<()> {
        let (shards, _) = layout(config);
        let first = &nodes[0];
        for n in &nodes[1..] {
            let (ip, port) = (n.addr.ip().to_string(), n.addr.port().to_string());
            let bus = bus_port(n)?;
            let meet: [&[u8]; 5] = [
                b"CLUSTER",
                b"MEET",
                ip.as_bytes(),
                port.as_bytes(),
                bus.as_bytes(),
            ];
            ok(first, &meet)?;
        }
        for (i, n) in nodes.iter().take(shards).enumerate() {
            let (a, b) = (i * SLOTS / shards, (i + 1) * SLOTS / shards - 1);
            let (a, b) = (a.to_string(), b.to_string());
            ok(
                n,
                &[b"CLUSTER", b"ADDSLOTSRANGE", a.as_bytes(), b.as_bytes()],
            )?;
        }
        // Every node must know every other before a replica can follow its primary.
        wait(deadline, "every node to know the others", || {
            for n in nodes {
                let text = cluster_nodes(n)?;
                let lines = node_lines(&text, n.addr)?;
                if lines.len() < nodes.len() || text.contains("handshake") {
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
        for (j, r) in nodes.iter().enumerate().skip(shards) {
            let primary = &nodes[j % shards];
            let id = reply_text(primary, &[b"CLUSTER", b"MYID"])?;
            ok(r, &[b"CLUSTER", b"REPLICATE", id.trim().as_bytes()])?;
        }
        // A replica that never synced could not take over from its primary.
        wait(deadline, "every replica to sync with its primary", || {
            for r in &nodes[shards..] {
                let info = reply_text(r, &[b"INFO", b"replication"])?;
                if info_field(&info, "master_link_status").as_deref() != Some("up") {
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
        wait(deadline, "cluster_state:ok on every node", || {
            for n in nodes {
                let info = reply_text(n, &[b"CLUSTER", b"INFO"])?;
                if info_field(&info, "cluster_state").as_deref() != Some("ok")
                    || info_field(&info, "cluster_slots_ok").as_deref() != Some("16384")
                {
                    return Ok(false);
                }
                if super::cluster::read_topology(n)?.unassigned() > 0 {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }
}

/// The primaries `--server-opt shards` asks for (3 unless given).
fn shards(opts: &BTreeMap<String, String>) -> Result<usize> {
    let Some(v) = opts.get("shards") else {
        return Ok(3);
    };
    v.parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_SHARDS).contains(n))
        .with_context(|| {
            format!("--server-opt shards={v}: use a number of primaries from 1 to {MAX_SHARDS}")
        })
}

/// Primaries and replicas per primary, as [`Server::configure`] recorded them.
fn layout(config: &Config) -> (usize, usize) {
    let get = |k: &str, d: usize| {
        config
            .settings
            .get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    (get("shards", 3).max(1), get("replicas", 0))
}

fn connect(n: &Connector) -> Result<Stream> {
    let s = open(n, Duration::from_secs(5))
        .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", n.display))?;
    s.set_timeout(Some(Duration::from_secs(5)))?;
    Ok(s)
}

/// The cluster bus port of node `n` (`CONFIG GET cluster-port`).
fn bus_port(n: &Connector) -> Result<String> {
    let reply = command(&mut connect(n)?, &[b"CONFIG", b"GET", b"cluster-port"])?;
    // *2 $12 cluster-port $N port
    let text = String::from_utf8_lossy(&reply).into_owned();
    text.split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with(['*', '$']))
        .nth(1)
        .filter(|p| p.parse::<u16>().is_ok_and(|p| p > 0))
        .map(str::to_string)
        .with_context(|| format!("{}: no cluster-port in CONFIG GET", n.display))
}

/// Sends `args` to node `n` and fails unless it answers `+OK`.
fn ok(n: &Connector, args: &[&[u8]]) -> Result<()> {
    let reply = command(&mut connect(n)?, args)?;
    if !reply.starts_with(b"+OK") {
        bail!(
            "{} {}: {}",
            n.display,
            String::from_utf8_lossy(&args.join(&b' ')),
            String::from_utf8_lossy(reply.trim_ascii())
        );
    }
    Ok(())
}

/// The text of a bulk-string reply to `args` on node `n`.
fn reply_text(n: &Connector, args: &[&[u8]]) -> Result<String> {
    let frame = command(&mut connect(n)?, args)?;
    Ok(String::from_utf8_lossy(bulk_payload(&frame)?).into_owned())
}

/// Polls `done` until it holds or `deadline` passes.
fn wait(deadline: Instant, what: &str, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
    loop {
        if done()? {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("gave up waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::super::REDIS_CLUSTER;
    use super::*;

    #[test]
    fn configures_shards_and_replicas() {
        let mut o = BTreeMap::new();
        let c = REDIS_CLUSTER.configure(&o, Sizing::default()).unwrap();
        assert_eq!(REDIS_CLUSTER.processes(&c), 3);
        o.insert("shards".to_string(), "2".to_string());
        o.insert("replicas".to_string(), "1".to_string());
        o.insert("requirepass".to_string(), "pw".to_string());
        o.insert("io-threads".to_string(), "2".to_string());
        let c = REDIS_CLUSTER.configure(&o, Sizing::default()).unwrap();
        assert_eq!(REDIS_CLUSTER.processes(&c), 4);
        assert!(c.args.windows(2).any(|w| w == ["--masterauth", "pw"]));
        assert!(c.args.windows(2).any(|w| w == ["--io-threads", "2"]));
        assert_eq!(c.settings["masterauth"], "***");
        for (k, v) in [("shards", "0"), ("shards", "x"), ("replicas", "2")] {
            let mut o = BTreeMap::new();
            o.insert(k.to_string(), v.to_string());
            let e = REDIS_CLUSTER.configure(&o, Sizing::default()).unwrap_err();
            assert!(
                e.to_string().contains(&format!("--server-opt {k}={v}")),
                "{e}"
            );
        }
        let mut o = BTreeMap::new();
        o.insert("cluster-enabled".to_string(), "no".to_string());
        assert!(REDIS_CLUSTER.configure(&o, Sizing::default()).is_err());
    }
}
