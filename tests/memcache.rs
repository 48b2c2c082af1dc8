//! Memcached, started through kvlab's managed-server code: kvlab's counts agree
//! with `stats` exactly, misses and corrupt values are detected.

mod common;

use common::{alive, measure, plan, server};
use kvlab::plan::{Ratio, TargetKind};

#[test]
fn counts_agree_with_stats() {
    let s = server(TargetKind::Memcached);
    let mut p = plan(TargetKind::Memcached, s.endpoint());
    p.workload.ratio = Ratio { set: 1, get: 4 };
    let connector = kvlab::driver::Connector::new(TargetKind::Memcached, &s.endpoint()).unwrap();
    let before = connector.counters().unwrap();
    let r = measure(&p);
    let d = connector.counters().unwrap().since(&before);
    assert_eq!(d.sets, 2_000 + r.warmup.sets + r.sets);
    assert_eq!(d.gets, r.warmup.gets + r.gets);
    assert_eq!(d.hits, r.warmup.hits + r.hits);
    assert_eq!(r.requests, 20_000);
    assert_eq!((r.errors, r.misses), (0, 0));
    assert!(r.valid);
    // A server kvlab did not start: its CPU as memcached reports it.
    assert_eq!(
        r.server_cpu_source.as_deref(),
        Some("stats rusage_user + rusage_system")
    );
    let pid = s.pid();
    drop(s);
    assert!(!alive(pid));
}

#[test]
fn misses_and_corruption_are_detected() {
    let s = server(TargetKind::Memcached);
    let mut p = plan(TargetKind::Memcached, s.endpoint());
    p.workload.load = false;
    let r = measure(&p);
    assert_eq!((r.hits, r.misses), (0, r.gets));
    assert_eq!(
        r.server_counters.unwrap().server.misses,
        r.gets + r.warmup.gets
    );

    common::measure_with_corrupt_key(
        TargetKind::Memcached,
        &s,
        b"set kvlab:3 0 0 100\r\n",
        b"STORED\r\n",
    );
}

#[test]
fn a_full_memcached_fails_the_load_clearly() {
    let mut opts = std::collections::BTreeMap::new();
    opts.insert("memory-mb".to_string(), "2".to_string());
    let s = kvlab::servers::ManagedServer::start(TargetKind::Memcached, &opts, Default::default())
        .unwrap();
    let mut p = plan(TargetKind::Memcached, s.endpoint());
    p.workload.keys = 100_000;
    p.workload.value_size = 1000;
    // memcached evicts rather than refuses: the evictions during the load fail it,
    // naming the setting of a server kvlab did not start.
    let e = common::measure_err(&p);
    assert!(
        e.contains("evicted") && e.contains("while kvlab stored 100000"),
        "{e}"
    );
    assert!(e.contains("-m MEGABYTES"), "{e}");
    // Without loading, the misses make the run invalid.
    p.workload.load = false;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let r = kvlab::runner::run(&p, kvlab::runner::RunOptions::default(), &stop).unwrap();
    assert!(r.misses > 0 && !r.valid);
}

#[test]
fn an_external_memcached_reports_its_own_cpu_as_proc_sees_it() {
    let s = server(TargetKind::Memcached);
    common::cpu_sources_agree(TargetKind::Memcached, &s);
}

#[test]
fn memcached_over_tls_counts_agree() {
    common::transport_counts_agree(TargetKind::Memcached, &[("tls", "on")], |_, _| {});
}

#[test]
fn memcached_over_a_unix_socket_counts_agree() {
    common::transport_counts_agree(TargetKind::Memcached, &[("socket", "on")], |_, _| {});
}
