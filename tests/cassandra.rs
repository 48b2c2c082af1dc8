//! Cassandra, started once for this whole binary through kvlab's managed-server
//! code (a JVM takes seconds to start, so every check shares one node, with
//! PasswordAuthenticator on): kvlab's counts agree with the node's own
//! `system_views` counts exactly (pipelined, with writes answered out of
//! order), every write lands, misses and corrupt values are detected, an
//! unmeetable consistency level fails every request honestly, a bad password
//! and the wrong protocol fail fast with one line, and a fill sizes the table.
//! The node speaks TLS (`tls=on`: kvlab's throwaway CA; Cassandra's
//! `optional` native port serves plain clients too), so the checks run over
//! TLS, and one plain client is served beside them.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::{measure, measure_err, plan, server, server_with};
use kvlab::driver::Connector;
use kvlab::plan::{Endpoint, Ratio, Secret, TargetKind};
use kvlab::products::cql::{self, conn::bigint};
use kvlab::servers::ManagedServer;

const KIND: TargetKind = TargetKind::Cassandra;

#[test]
fn cassandra_node() {
    let opts = [("authenticator", "PasswordAuthenticator"), ("tls", "on")];
    let node = server_with(KIND, &opts, 20);
    let e = node.endpoint();
    assert_eq!(e.user.as_deref(), Some("cassandra"));
    assert!(e.tls.is_some());
    counts_agree_with_the_node_and_every_write_lands(&e);
    a_plain_client_is_served_too(&e);
    misses_and_corruption_are_detected(&e);
    an_unmet_consistency_level_fails_every_request(&e);
    a_bad_password_and_the_wrong_protocol_fail_fast(&node);
    a_fill_sizes_the_table(&node);
}

fn a_plain_client_is_served_too(e: &Endpoint) {
    let mut plain = e.clone();
    plain.tls = None;
    let mut p = plan(KIND, plain);
    p.workload.load = false;
    p.load.stop = kvlab::plan::Stop::Requests(2_000);
    let r = measure(&p);
    assert_eq!((r.errors, r.misses), (0, 0), "{:?}", r.problems);
    let t = r.target.transport.unwrap();
    assert!(t.tls.is_none(), "{t:?}");
}

fn session(e: &Endpoint) -> cql::CqlConn {
    let c = Connector::new(KIND, e).unwrap();
    cql::open(&c, Duration::from_secs(10)).unwrap()
}

fn counts_agree_with_the_node_and_every_write_lands(e: &Endpoint) {
    let mut p = plan(KIND, e.clone());
    p.target.consistency = Some("QUORUM".into());
    p.workload.ratio = Ratio { set: 1, get: 4 };
    p.load.pipeline = 16;
    let r = measure(&p);
    assert_eq!((r.errors, r.misses), (0, 0), "{:?}", r.problems);
    assert_eq!(r.requests, 20_000);
    assert!(r.sets > 0 && r.gets > 0);
    let cc = r.server_counters.as_ref().expect("system_views counters");
    assert!(cc.agrees(), "{cc:?}");
    assert_eq!(cc.server.gets, r.warmup.gets + r.gets);
    assert_eq!(cc.server.sets, r.warmup.sets + r.sets);
    assert!(r.valid, "{:?}", r.problems);
    let t = r.target.transport.clone().unwrap();
    assert!(
        t.tls.is_some_and(|i| i.version.starts_with("TLS 1.")),
        "over TLS"
    );
    // Every write made one version: the versions in the table add up.
    let rows = session(e).query("SELECT v FROM kvlab.kvlab_kv").unwrap();
    assert_eq!(rows.len(), 2_000);
    let sum: u64 = rows
        .iter()
        .map(|row| {
            let v = row[0].as_deref().unwrap();
            u64::from_str_radix(std::str::from_utf8(&v[16..32]).unwrap(), 16).unwrap()
        })
        .sum();
    assert_eq!(sum, r.warmup.sets + r.sets, "versions in the table");
    let n = session(e)
        .query("SELECT count(*) FROM kvlab.kvlab_kv")
        .unwrap();
    assert_eq!(bigint(n[0].first()), Some(2_000));
}

fn misses_and_corruption_are_detected(e: &Endpoint) {
    let mut p = plan(KIND, e.clone());
    p.workload.load = false;
    p.workload.value_size = 120; // another size: kvlab makes a new, empty table
    let r = measure(&p);
    assert_eq!((r.hits, r.misses), (0, r.gets));
    assert!(!r.valid);

    let mut p = plan(KIND, e.clone());
    p.workload.keys = 10;
    let _ = measure(&p);
    let bad = "78".repeat(100);
    session(e)
        .query(&format!(
            "INSERT INTO kvlab.kvlab_kv (k, v) VALUES (3, 0x{bad})"
        ))
        .unwrap();
    p.workload.load = false;
    let r = measure(&p);
    let wrong = r.errors_by_kind["wrong_value"];
    assert!(wrong > 500, "about a tenth of 20k GETs hit key 3: {wrong}");
    assert_eq!(wrong + r.hits, r.gets);
    assert!(!r.valid);
}

fn an_unmet_consistency_level_fails_every_request(e: &Endpoint) {
    let mut p = plan(KIND, e.clone());
    p.target.consistency = Some("two".into()); // one node, replication factor 1
    p.load.stop = kvlab::plan::Stop::Requests(200);
    let r = measure(&p);
    assert_eq!(r.errors, r.requests, "{:?}", r.errors_by_kind);
    assert_eq!(r.errors_by_kind["server_error"], r.requests);
    assert!(!r.valid);
}

fn a_bad_password_and_the_wrong_protocol_fail_fast(node: &ManagedServer) {
    let mut e = node.endpoint();
    e.password = Some(Secret("wrong".into()));
    let started = Instant::now();
    let err = measure_err(&plan(KIND, e.clone()));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        err.contains("check the user and password") && !err.contains("wrong"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    e.user = None;
    e.password = None;
    let err = measure_err(&plan(KIND, e));
    assert!(err.contains("needs a user and password"), "{err}");

    let redis = server(TargetKind::Redis);
    let mut e = redis.endpoint();
    e.password = None;
    let started = Instant::now();
    let err = measure_err(&plan(KIND, e));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.contains("Cassandra/CQL server"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let err = measure_err(&plan(TargetKind::Redis, node.endpoint()));
    assert!(err.contains("Redis/Valkey"), "{err}");
}

fn a_fill_sizes_the_table(node: &ManagedServer) {
    let mut p = plan(KIND, node.endpoint());
    p.workload.keys = 20_000;
    p.workload.value_size = 1000;
    let stop = AtomicBool::new(false);
    let f = kvlab::modes::fill::fill(&p, None, Default::default(), &stop).expect("fill");
    assert_eq!(f.items, 20_000);
    let per_item = f.bytes_per_item;
    assert!(
        (1000.0..3000.0).contains(&per_item),
        "a 1000-byte row takes {per_item} B on disk"
    );
}
