//! Memcached, started through kvlab's managed-server code, beyond the contract
//! every product passes (tests/contract): a full memcached fails the load
//! clearly, its own CPU report agrees with /proc, TLS and unix sockets work.

mod common;

use common::{plan, server};
use kvlab::plan::TargetKind;

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
