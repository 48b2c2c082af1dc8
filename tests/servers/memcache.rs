//! Memcached, started through kvlab's managed-server code, beyond the contract
//! every product passes (tests/contract): a full memcached fails the load
//! clearly, its own CPU report agrees with /proc, TLS and unix sockets work,
//! and the meta protocol (plain and as a cache-aside cache) counts agree.

use crate::common;

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
    assert!(r.totals.misses > 0 && !r.valid);
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

/// A managed memcached driven over the meta protocol (`mg`, `ms`).
#[test]
fn the_meta_protocol_reads_writes_and_agrees_with_the_counters() {
    let s = server(TargetKind::Memcached);
    let mut p = plan(TargetKind::Memcached, s.endpoint());
    p.target.query_mode =
        Some(kvlab::plan::query_mode_of(p.target.kind, "meta", "--query-mode").unwrap());
    p.workload.ratio = kvlab::plan::Ratio { set: 1, get: 4 };
    p.workload.value_sizes = Some("64-2048".parse().unwrap());
    let r = common::measure(&p);
    common::every_request_clean(&r);
    assert_eq!(r.query_mode.as_deref(), Some("meta"));
    let cc = r.server_counters.as_ref().expect("counters read");
    assert!(cc.agrees(), "{cc:?}");
    let text = kvlab::report::summary::summary(&r);
    assert!(text.contains("query mode: meta"), "{text}");
}

/// Memcached as the cache in front of PostgreSQL, over the meta protocol:
/// fills (`ms`) and invalidations (`md`) counted by both servers.
#[test]
fn a_meta_protocol_cache_in_front_of_a_database_agrees_with_both_counters() {
    let out = common::kvlab()
        .args([
            "run",
            "--target",
            "postgres",
            "--cache",
            "memcached",
            "--cache-query-mode",
            "meta",
            "--keys",
            "5000",
            "--ratio",
            "1:9",
            "--requests",
            "20000",
            "--connections",
            "8",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    common::succeeds(&out);
    let r: kvlab::results::RunResult = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r.valid, "{:?}", r.problems);
    let a = r.cache_aside.as_ref().unwrap();
    assert_eq!(a.cache_query_mode.as_deref(), Some("meta"));
    assert!(a.cache_hits > 0);
    let cc = a.cache_counters.as_ref().expect("cache counters read");
    assert!(cc.agrees(), "{cc:?}");
    let sc = r.server_counters.as_ref();
    assert!(sc.is_some_and(|c| c.agrees()), "{sc:?}: {:?}", r.problems);
    common::fails_saying(
        &[
            "run",
            "--target",
            "postgres",
            "--cache",
            "redis",
            "--cache-query-mode",
            "meta",
        ],
        &["--cache-query-mode", "redis"],
    );
}

#[test]
fn memcacheds_segmented_lru_is_read_from_its_settings() {
    use kvlab::workload::trace::policy::Policy;
    let s = server(TargetKind::Memcached);
    let cache = kvlab::plan::CacheAside {
        cache: format!("memcached://127.0.0.1:{}", s.endpoint().port)
            .parse()
            .unwrap(),
        policy: kvlab::plan::WritePolicy::Invalidate,
        ttl_s: 0,
        start: Default::default(),
    };
    let e = kvlab::modes::eviction::of_cache(&cache).unwrap();
    assert_eq!(e.policy, Policy::SegmentedLru, "{e:?}");
    assert!(e.source.starts_with("read from the cache at"), "{e:?}");
}
