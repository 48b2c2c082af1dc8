//! Cassandra's own checks, on the contract's one node (a JVM takes seconds to
//! start, so the suite starts one): PasswordAuthenticator on and TLS on
//! (kvlab's throwaway CA; the `optional` native port serves plain clients
//! too). Every write lands (pipelined, with writes answered out of order), a
//! plain client is served beside TLS ones, an unmeetable consistency level
//! fails every request honestly, a fill sizes the table, and every reply no
//! server should send (the hostile proxy of `tests/hostile.rs`, in front of
//! the plain port) ends a run with a one-line error.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use kvlab::driver::Connector;
use kvlab::plan::{Endpoint, Ratio, Stop, TargetKind};
use kvlab::products::cql::{self, conn::bigint};

use crate::common::{measure, plan};
use crate::served::Served;

const KIND: TargetKind = TargetKind::Cassandra;

/// Run by the contract on its node, after the contract's checks.
pub fn checks(node: &Served) {
    let e = &node.endpoint;
    assert_eq!(e.user.as_deref(), Some("cassandra"));
    assert!(e.tls.is_some());
    every_write_lands_over_tls(e);
    a_plain_client_is_served_too(e);
    an_unmet_consistency_level_fails_every_request(e);
    a_fill_sizes_the_table(e);
    every_hostile_reply_is_a_one_line_error(e);
}

fn session(e: &Endpoint) -> cql::CqlConn {
    let c = Connector::new(KIND, e).unwrap();
    cql::open(&c, Duration::from_secs(10)).unwrap()
}

fn every_write_lands_over_tls(e: &Endpoint) {
    let mut p = plan(KIND, e.clone());
    p.target.consistency =
        Some(kvlab::plan::consistency_of(p.target.kind, "QUORUM", "--consistency").unwrap());
    p.workload.ratio = Ratio { set: 1, get: 4 };
    p.load.pipeline = 16;
    let r = measure(&p);
    assert_eq!(
        (r.totals.errors, r.totals.misses),
        (0, 0),
        "{:?}",
        r.problems
    );
    let cc = r.server_counters.as_ref().expect("system_views counters");
    assert!(cc.agrees(), "{cc:?}");
    let t = r.target.transport.clone().unwrap();
    assert!(
        t.tls.is_some_and(|i| i.version.starts_with("TLS 1.")),
        "over TLS"
    );
    // Every write made one version: the versions in the table add up
    // (this run's and the contract's earlier runs' writes of the same table),
    // but for writes to one key that overlapped and landed out of order (each
    // is sent to the key drawn): a key then keeps a version below its writes.
    let rows = session(e).query("SELECT v FROM kvlab.kvlab_kv").unwrap();
    assert_eq!(rows.len(), 2_000);
    let sum: u64 = rows
        .iter()
        .map(|row| {
            let v = row[0].as_deref().unwrap();
            u64::from_str_radix(std::str::from_utf8(&v[16..32]).unwrap(), 16).unwrap()
        })
        .sum();
    let n = session(e)
        .query("SELECT count(*) FROM kvlab.kvlab_kv")
        .unwrap();
    assert_eq!(bigint(n[0].first()), Some(2_000));
    let sets = r.warmup.sets + r.totals.sets;
    assert!(
        sum <= sets && sets - sum <= sets / 100,
        "versions in the table: {sum} of {sets} writes"
    );
}

fn a_plain_client_is_served_too(e: &Endpoint) {
    let mut plain = e.clone();
    plain.tls = None;
    let mut p = plan(KIND, plain);
    p.workload.load = false;
    p.load.stop = Stop::Requests(2_000);
    let r = measure(&p);
    assert_eq!(
        (r.totals.errors, r.totals.misses),
        (0, 0),
        "{:?}",
        r.problems
    );
    let t = r.target.transport.unwrap();
    assert!(t.tls.is_none(), "{t:?}");
}

fn an_unmet_consistency_level_fails_every_request(e: &Endpoint) {
    let mut p = plan(KIND, e.clone());
    p.target.consistency =
        Some(kvlab::plan::consistency_of(p.target.kind, "two", "--consistency").unwrap()); // one node, replication factor 1
    p.load.stop = Stop::Requests(200);
    let r = measure(&p);
    assert_eq!(
        r.totals.errors, r.totals.requests,
        "{:?}",
        r.totals.errors_by_kind
    );
    assert_eq!(r.totals.errors_by_kind["server_error"], r.totals.requests);
    assert!(!r.valid);
}

fn a_fill_sizes_the_table(e: &Endpoint) {
    let mut p = plan(KIND, e.clone());
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

fn every_hostile_reply_is_a_one_line_error(e: &Endpoint) {
    let mut plain = e.clone();
    plain.tls = None;
    crate::common::hostile::every_act(KIND, std::slice::from_ref(&plain));
}
