//! Redis/Valkey Cluster, started through kvlab's managed-server code, beyond
//! the contract every product passes (tests/contract): requests are routed by
//! slot to every primary, whose CPU adds up; a slot migrated while a run is going is followed (ASK, then
//! MOVED) with no error; a cluster node addressed as a single server, and a
//! single server addressed as a cluster, are refused with one line; a
//! cluster given by URL has its eviction policy read from its primaries.

use crate::common;

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::{alive, measure, measure_err, plan, server, server_with};
use kvlab::driver::Connector;
use kvlab::plan::{Ratio, Stop, TargetKind};
use kvlab::products::resp::{bulk_payload, command, hash_slot};
use kvlab::runner::{RunOptions, run};

/// Sends one command to the node at `addr` and returns its raw reply.
fn cmd(addr: SocketAddr, args: &[&[u8]]) -> Vec<u8> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    command(&mut &s, args).unwrap()
}

fn ok(addr: SocketAddr, args: &[&[u8]]) {
    let r = cmd(addr, args);
    assert!(r.starts_with(b"+OK"), "{}", String::from_utf8_lossy(&r));
}

fn node_id(addr: SocketAddr) -> String {
    let r = cmd(addr, &[b"CLUSTER", b"MYID"]);
    String::from_utf8_lossy(bulk_payload(&r).unwrap()).into_owned()
}

#[test]
fn every_primary_serves_its_share_and_is_counted_and_stopped() {
    let s = server(TargetKind::RedisCluster);
    let pids = s.pids();
    assert_eq!(pids.len(), 3, "three primaries by default");
    let mut p = plan(TargetKind::RedisCluster, s.endpoint());
    p.workload.ratio = Ratio { set: 1, get: 3 };
    p.load.pipeline = 8;
    let r = measure(&p);
    assert_eq!((r.totals.errors, r.totals.misses), (0, 0), "{r:#?}");
    let sh = r.connections.sharded.as_ref().unwrap();
    assert_eq!((sh.nodes, sh.moved, sh.ask), (3, 0, 0));
    // Every primary served its share of the keys.
    let c = Connector::new(TargetKind::RedisCluster, &s.endpoint()).unwrap();
    let t = c.topology().unwrap().unwrap();
    for node in &t.nodes {
        let info = cmd(*node, &[b"INFO", b"keyspace"]);
        let text = String::from_utf8_lossy(bulk_payload(&info).unwrap()).into_owned();
        let keys: u64 = text
            .split("keys=")
            .nth(1)
            .and_then(|x| x.split(',').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        assert!((500..=850).contains(&keys), "{node}: {keys} of 2000 keys");
    }
    assert!(s.usage().unwrap().cpu_s > 0.0, "CPU summed over the nodes");
    drop(s);
    for pid in pids {
        assert!(!alive(pid), "node {pid} still running");
    }
}

#[test]
fn a_slot_migrated_during_the_run_is_followed() {
    let s = server_with(
        TargetKind::ValkeyCluster,
        &[("shards", "2"), ("replicas", "1")],
        100,
    );
    assert_eq!(s.pids().len(), 4);
    let mut p = plan(TargetKind::ValkeyCluster, s.endpoint());
    // A hash tag puts every key in one slot, so that migrating it moves them all.
    p.workload.key_prefix = "{mig}:".into();
    p.workload.ratio = Ratio { set: 1, get: 4 };
    let _ = measure(&p);
    p.workload.load = false;
    p.load.warmup_s = 0.0;
    p.load.stop = Stop::Duration(4.0);
    p.load.connections = 8;
    let runner = std::thread::spawn(move || {
        let stop = AtomicBool::new(false);
        run(&p, RunOptions::default(), &stop).unwrap()
    });

    let c = Connector::new(TargetKind::ValkeyCluster, &s.endpoint()).unwrap();
    let t = c.topology().unwrap().unwrap();
    let slot = hash_slot(b"mig");
    let from = t.nodes[usize::from(t.slots[usize::from(slot)])];
    let to = *t.nodes.iter().find(|n| **n != from).unwrap();
    let (from_id, to_id) = (node_id(from), node_id(to));
    let slot_s = slot.to_string();
    let sl = slot_s.as_bytes();
    std::thread::sleep(Duration::from_millis(1200));
    ok(
        to,
        &[b"CLUSTER", b"SETSLOT", sl, b"IMPORTING", from_id.as_bytes()],
    );
    ok(
        from,
        &[b"CLUSTER", b"SETSLOT", sl, b"MIGRATING", to_id.as_bytes()],
    );
    let port = to.port().to_string();
    let mut moved_keys = 0;
    loop {
        let r = cmd(from, &[b"CLUSTER", b"GETKEYSINSLOT", sl, b"50"]);
        let text = String::from_utf8_lossy(&r).into_owned();
        let keys: Vec<&str> = text
            .split("\r\n")
            .skip(1)
            .filter(|l| !l.starts_with('$') && !l.is_empty())
            .collect();
        if keys.is_empty() {
            break;
        }
        let mut args: Vec<&[u8]> = vec![b"MIGRATE", b"127.0.0.1", port.as_bytes(), b"", b"0"];
        args.extend([b"5000".as_slice(), b"KEYS"]);
        args.extend(keys.iter().map(|k| k.as_bytes()));
        ok(from, &args);
        moved_keys += keys.len();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(moved_keys, 2_000);
    // The target first, then the source (as the cluster specification says):
    // the other order leaves a window where the source sends clients to a
    // target that still sends them back.
    for n in [to, from] {
        ok(n, &[b"CLUSTER", b"SETSLOT", sl, b"NODE", to_id.as_bytes()]);
    }

    let r = runner.join().unwrap();
    assert_eq!(r.totals.errors, 0, "{:?}", r.totals.errors_by_kind);
    assert_eq!(r.totals.misses, 0);
    assert!(r.valid, "{:?}", r.problems);
    let sh = r.connections.sharded.as_ref().unwrap();
    assert!(sh.ask > 0 && sh.moved > 0, "{sh:?}");
    let cc = r.server_counters.as_ref().unwrap();
    assert!(cc.agrees(), "{cc:#?}");
    assert_eq!(cc.server.gets + cc.server.sets, r.totals.requests);
    let c = r.consistency.as_ref().unwrap();
    assert_eq!(c.stale_reads, 0, "{c:?}");
}

#[test]
fn single_servers_and_cluster_nodes_are_not_confused() {
    let opts = [("shards", "1"), ("maxmemory-policy", "allkeys-lfu")];
    let cluster = server_with(TargetKind::RedisCluster, &opts, 10);
    // Its eviction policy, read (not changed) from its primaries by URL.
    let url = format!("redis-cluster://127.0.0.1:{}", cluster.endpoint().port);
    let aside = kvlab::plan::CacheAside {
        cache: url.parse().unwrap(),
        policy: kvlab::plan::WritePolicy::Invalidate,
        ttl_s: 0,
        start: Default::default(),
    };
    let e = kvlab::modes::eviction::of_cache(&aside).unwrap();
    assert_eq!(
        e.policy,
        kvlab::workload::trace::policy::Policy::REDIS_LFU,
        "{e:?}"
    );
    assert!(e.source.starts_with("read from the cache at"), "{e:?}");
    let r = measure(&plan(TargetKind::RedisCluster, cluster.endpoint()));
    assert_eq!(
        (r.totals.errors, r.connections.sharded.unwrap().nodes),
        (0, 1)
    );
    let e = measure_err(&plan(TargetKind::Redis, cluster.endpoint()));
    assert!(e.contains("redis-cluster://"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let single = server(TargetKind::Redis);
    let e = measure_err(&plan(TargetKind::RedisCluster, single.endpoint()));
    assert!(e.contains("not in cluster mode"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

/// A cluster given by URL holding another application's keys: kvlab makes
/// room, runs, and removes its own keys from every primary, theirs untouched
/// and counted in the result.
#[test]
fn kvlabs_keys_are_removed_from_every_primary_of_a_cluster_it_did_not_start() {
    let s = server(TargetKind::RedisCluster);
    let c = Connector::new(TargetKind::RedisCluster, &s.endpoint()).unwrap();
    let t = c.topology().unwrap().unwrap();
    let node_of = |key: &[u8]| t.nodes[t.slots[hash_slot(key) as usize] as usize];
    for i in 0..300 {
        let k = format!("team:{i}");
        ok(node_of(k.as_bytes()), &[b"SET", k.as_bytes(), b"theirs"]);
    }
    let p = plan(TargetKind::RedisCluster, s.endpoint());
    let (opts, stop) = (RunOptions::default(), AtomicBool::new(false));
    let (r, cleaned) =
        kvlab::runner::foreign::guarded(&p, p.workload.keys, opts, || run(&p, opts, &stop))
            .unwrap();
    assert_eq!(
        (r.totals.errors, r.totals.misses),
        (0, 0),
        "{:?}",
        r.problems
    );
    assert_eq!(cleaned.len(), 1, "{cleaned:?}");
    let cl = &cleaned[0];
    assert_eq!(cl.keys_removed, Some(p.workload.keys), "{cl:?}");
    assert_eq!((cl.others_before, cl.others_after), (Some(300), Some(300)));
    let held: u64 = t
        .nodes
        .iter()
        .map(|n| {
            let r = cmd(*n, &[b"DBSIZE"]);
            String::from_utf8_lossy(&r[1..])
                .trim()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(held, 300, "only the other application's keys are left");
}

/// GETs the node at `addr` has served since it started (`INFO commandstats`).
fn gets_served(addr: SocketAddr) -> u64 {
    let info = cmd(addr, &[b"INFO", b"commandstats"]);
    let text = String::from_utf8_lossy(bulk_payload(&info).unwrap()).into_owned();
    text.split("cmdstat_get:calls=")
        .nth(1)
        .and_then(|x| x.split(',').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(0)
}

/// `--hot-keys` in a cluster: half the reads go to one key; the result names
/// the node of its slot, and that node served about that many GETs more than
/// the others did.
#[test]
fn a_hot_key_burst_lands_on_the_node_the_result_names() {
    let s = server(TargetKind::RedisCluster);
    let mut p = plan(TargetKind::RedisCluster, s.endpoint());
    p.workload.ratio = Ratio { set: 0, get: 1 };
    p.workload.keys = 3_000;
    p.load.hot_keys = Some(
        kvlab::workload::HotKeys::parse("share=0.5")
            .unwrap()
            .settled(None, 3_000)
            .unwrap(),
    );
    let r = measure(&p);
    let t = &r.totals;
    assert!(t.errors + t.misses == 0, "{:?}", r.problems);
    let (hot, node) = r.totals.hot_reads.clone().expect("hot reads counted");
    let share = hot as f64 / r.totals.gets as f64;
    assert!(
        (0.47..0.53).contains(&share),
        "{hot} of {} GETs",
        r.totals.gets
    );
    let c = Connector::new(TargetKind::RedisCluster, &s.endpoint()).unwrap();
    let t = c.topology().unwrap().unwrap();
    let slot = hash_slot(b"kvlab:1500");
    let addr = t.nodes[usize::from(t.slots[usize::from(slot)])];
    assert_eq!(
        node.as_deref(),
        Some(format!("{addr} (slot {slot})").as_str())
    );
    let others: Vec<u64> = t
        .nodes
        .iter()
        .filter(|n| **n != addr)
        .map(|n| gets_served(*n))
        .collect();
    let extra = gets_served(addr) as f64 - others.iter().sum::<u64>() as f64 / others.len() as f64;
    assert!(
        (extra / hot as f64 - 1.0).abs() < 0.1,
        "{extra} GETs more on {addr}, {hot} hot reads"
    );
    let summary = kvlab::report::summary::summary(&r);
    assert!(summary.contains(&format!("served by {addr}")), "{summary}");
}
