//! Redis and Valkey, started through kvlab's managed-server code: kvlab's counts
//! agree with the server's own, misses and corrupt values are detected, faults
//! are counted, and paced latency shows a stalled server.

use crate::common;

use std::time::Duration;

use common::{measure, plan, raw, server};
use kvlab::plan::{Ratio, Stop, TargetKind};

#[test]
fn paced_latency_shows_a_stalled_server() {
    let s = server(TargetKind::Redis);
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.load.connections = 10;
    p.load.pipeline = 1;
    p.load.rate = Some(2_000.0);
    p.load.stop = Stop::Duration(4.0);
    p.load.warmup_s = 0.0;
    let stall = common::signals(s.pid(), &[(1500, libc::SIGSTOP), (1000, libc::SIGCONT)]);
    let r = measure(&p);
    stall.join().unwrap();
    assert_eq!(r.latency.latency_start, "intended");
    assert_eq!(r.totals.errors, 0, "a 1 s stall is under the 5 s timeout");
    let svc = r.latency.service_time_us.unwrap();
    // A quarter of the requests were due during the stall: the intended-start
    // latency must show it, the service time (from the actual send) hides most of it.
    assert!(
        r.latency.latency_us.p90 > 300_000.0,
        "p90 {:?}",
        r.latency.latency_us
    );
    assert!(
        r.latency.latency_us.p99 > 800_000.0,
        "p99 {:?}",
        r.latency.latency_us
    );
    assert!(
        svc.p90 < r.latency.latency_us.p90 / 10.0,
        "service {svc:?} vs {:?}",
        r.latency.latency_us
    );
    let sched = r.latency.schedule.clone().unwrap();
    assert!(
        sched.late_requests > 1_000 && sched.max_lag_ms > 800.0,
        "{sched:?}"
    );
    // ~8,000 requests scheduled; each sent once.
    assert!(
        (7_500..=8_100).contains(&r.totals.requests),
        "{}",
        r.totals.requests
    );
    // The summary shows both, the service time labelled as such.
    let text = kvlab::report::summary::summary(&r);
    assert!(text.contains("latency µs (from intended start)"), "{text}");
    assert!(text.contains("service time µs (from actual send"), "{text}");
}

#[test]
fn a_server_that_dies_mid_run_gives_counted_errors_not_a_hang() {
    let mut s = server(TargetKind::Redis);
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.load.stop = Stop::Duration(3.0);
    p.load.warmup_s = 0.0;
    p.load.timeout_s = 1.0;
    p.workload.load = false;
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1000));
        s.stop();
        s
    });
    let started = std::time::Instant::now();
    let r = measure(&p);
    let _s = killer.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "ended near its deadline"
    );
    assert!(
        r.totals.errors_by_kind["disconnect"] > 0,
        "{:?}",
        r.totals.errors_by_kind
    );
    assert!(r.connections.failures > 0);
    assert!(r.timeline.iter().any(|s| s.errors > 0));
    assert!(!r.valid);
}

#[test]
fn a_full_external_redis_names_its_own_setting() {
    let mut opts = std::collections::BTreeMap::new();
    opts.insert("memory-mb".to_string(), "3".to_string());
    let s =
        kvlab::servers::ManagedServer::start(TargetKind::Redis, &opts, Default::default()).unwrap();
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.workload.keys = 20_000;
    p.workload.value_size = 1000;
    let e = common::measure_err(&p);
    assert!(e.contains("keys stored (server_error"), "{e}");
    assert!(e.contains("CONFIG SET maxmemory"), "{e}");
    assert!(
        !e.contains("--server-opt"),
        "not for a server kvlab did not start: {e}"
    );
}

#[test]
fn a_stall_longer_than_the_timeout_counts_timeouts_and_reconnects() {
    let s = server(TargetKind::Redis);
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.load.stop = Stop::Duration(3.0);
    p.load.warmup_s = 0.0;
    p.load.timeout_s = 0.5;
    let stall = common::signals(s.pid(), &[(800, libc::SIGSTOP), (1200, libc::SIGCONT)]);
    let r = measure(&p);
    stall.join().unwrap();
    assert!(
        r.totals.errors_by_kind["timeout"] > 0,
        "{:?}",
        r.totals.errors_by_kind
    );
    assert!(r.connections.reconnects > 0);
    assert!(r.timeline.iter().any(|s| s.timeouts > 0));
    // It recovered: the last second served requests again.
    assert!(r.timeline.last().unwrap().requests > 0, "{:?}", r.timeline);
}

#[test]
fn an_external_server_keeps_foreign_keys_and_gets_only_prefixed_ones() {
    let s = server(TargetKind::Redis);
    let port = s.endpoint().port;
    let ok = |b: &[u8]| b.ends_with(b"\r\n");
    raw(
        port,
        b"*3\r\n$3\r\nSET\r\n$7\r\nforeign\r\n$4\r\nkeep\r\n",
        ok,
    );
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.workload.key_prefix = "bench:".into();
    p.workload.ratio = Ratio { set: 1, get: 1 };
    let r = measure(&p);
    assert_eq!(r.totals.errors, 0);
    let dbsize = raw(port, b"*1\r\n$6\r\nDBSIZE\r\n", ok);
    assert_eq!(dbsize, b":2001\r\n", "2000 bench: keys + the foreign one");
    let v = raw(port, b"*2\r\n$3\r\nGET\r\n$7\r\nforeign\r\n", |b| {
        b.ends_with(b"keep\r\n")
    });
    assert_eq!(v, b"$4\r\nkeep\r\n");
    let whole =
        |b: &[u8]| matches!(kvlab::products::resp::frame_len(b), Ok(Some(n)) if n == b.len());
    let keys = raw(port, b"*2\r\n$4\r\nKEYS\r\n$1\r\n*\r\n", whole);
    let text = String::from_utf8_lossy(&keys);
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('*') && !l.starts_with('$'))
        .collect();
    assert_eq!(names.len(), 2001);
    assert!(
        names
            .iter()
            .all(|k| k.starts_with("bench:") || *k == "foreign")
    );
}

#[test]
fn an_external_redis_reports_its_own_cpu_as_proc_sees_it() {
    let s = server(TargetKind::Redis);
    common::cpu_sources_agree(TargetKind::Redis, &s);
}

#[test]
fn redis_over_tls_counts_agree_and_the_result_names_the_cipher() {
    let r = common::transport_counts_agree(TargetKind::Redis, &[("tls", "on")], |_, _| {});
    assert!(r.target.url.starts_with("rediss://"), "{}", r.target.url);
    // TLS runs over epoll, and the result says so.
    assert_eq!(r.client.client_io.as_deref(), Some("epoll"));
    assert_eq!(
        r.client.client_io_why.as_deref(),
        Some("TLS runs over epoll")
    );
}

#[test]
fn an_external_rediss_url_with_its_ca_counts_agree() {
    common::transport_counts_agree(TargetKind::Valkey, &[("tls", "on")], |ep, s| {
        // As a user gives it: valkeys://127.0.0.1:PORT --tls-ca FILE.
        let url = format!("valkeys://127.0.0.1:{}", ep.port);
        let mut t: kvlab::plan::TargetSpec = url.parse().unwrap();
        let mut e = t.external.take().unwrap();
        e.tls.as_mut().unwrap().ca = Some(s.tls_files().unwrap().ca.clone());
        *ep = e;
    });
}

#[test]
fn redis_over_a_unix_socket_counts_agree() {
    let r = common::transport_counts_agree(TargetKind::Redis, &[("socket", "on")], |_, _| {});
    if kvlab::engine::reactor::uring_refused().is_none() {
        common::ran_over(&r, kvlab::plan::io::IoChoice::Uring);
    }
}

#[test]
fn a_certificate_of_an_unknown_ca_is_refused_naming_tls_ca() {
    let s = common::server_with(TargetKind::Redis, &[("tls", "on")], 10);
    let other = tempfile::tempdir().unwrap();
    let stranger = kvlab::transport::certs::TlsFiles::generate(other.path(), "another CA").unwrap();
    let mut ep = s.endpoint();
    ep.tls.as_mut().unwrap().ca = Some(stranger.ca.clone());
    let e = common::measure_err(&plan(TargetKind::Redis, ep));
    assert!(e.contains("--tls-ca"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
}

#[test]
fn plain_and_tls_mix_ups_fail_within_5_s_and_say_so() {
    let tls = common::server_with(TargetKind::Redis, &[("tls", "on")], 10);
    let plain = server(TargetKind::Redis);
    // A plain client on the TLS port.
    let mut ep = tls.endpoint();
    ep.tls = None;
    let t0 = std::time::Instant::now();
    let e = common::measure_err(&plan(TargetKind::Redis, ep));
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(e.contains("add --tls"), "{e}");
    // A TLS client on the plain port.
    let mut ep = plain.endpoint();
    ep.tls = Some(Default::default());
    let t0 = std::time::Instant::now();
    let e = common::measure_err(&plan(TargetKind::Redis, ep));
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(e.contains("drop --tls"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
}

#[test]
fn a_server_that_asks_for_a_client_certificate_gets_one_or_says_so() {
    let opts = [("tls", "on"), ("tls-auth-clients", "yes")];
    // kvlab's endpoint of its managed server carries its client certificate.
    common::transport_counts_agree(TargetKind::Redis, &opts, |_, _| {});
    let s = common::server_with(TargetKind::Redis, &opts, 10);
    let mut ep = s.endpoint();
    let tls = ep.tls.as_mut().unwrap();
    (tls.cert, tls.key) = (None, None);
    let e = common::measure_err(&plan(TargetKind::Redis, ep));
    assert!(e.contains("--tls-cert"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
}

#[test]
fn a_requests_run_against_a_server_that_keeps_refusing_connections_ends() {
    // Once the server is gone every attempt to reconnect is refused: a
    // connection is given up after 8 failed attempts in a row, so a
    // --requests run ends on its own instead of waiting for it.
    let s = server(TargetKind::Redis);
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.load.pipeline = 1;
    common::ends_when_its_server_is_killed(&mut p, s.pid());
}

/// An open loop offered more than the server carries: the throughput is what
/// completed in the window (it agrees with the server's own count), and the
/// run says it was not sustained and is not valid.
#[test]
fn an_offered_rate_beyond_the_server_is_reported_as_not_sustained() {
    let s = server(TargetKind::Redis);
    for rate in [300_000.0, 10_000_000.0] {
        let mut p = plan(TargetKind::Redis, s.endpoint());
        p.load.connections = 50;
        p.load.pipeline = 1;
        p.load.rate = Some(rate);
        p.load.stop = Stop::Duration(2.0);
        p.load.warmup_s = 0.0;
        let r = measure(&p);
        let served = r.server_counters.as_ref().unwrap().server.gets as f64;
        let completed = r.totals.throughput_rps * r.totals.duration_s;
        assert!(
            (completed - served).abs() <= 0.05 * served,
            "rate {rate}: kvlab {completed} completed in its window, the server counted {served}"
        );
        assert!(!r.valid, "rate {rate}: {:?}", r.problems);
        let line = r.latency.schedule.as_ref().unwrap().not_sustained.clone();
        let line = line.unwrap_or_else(|| panic!("rate {rate}: no shortfall noted"));
        assert!(line.starts_with("not sustained: offered"), "{line}");
        assert!(r.problems.contains(&line), "{:?}", r.problems);
    }
    // A rate well within reach is carried and valid.
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.load.rate = Some(2_000.0);
    p.load.stop = Stop::Duration(1.0);
    let r = measure(&p);
    assert!(r.valid, "{:?}", r.problems);
    assert!(r.latency.schedule.unwrap().not_sustained.is_none());
}

/// The cache-aside of a cache given by `url`.
fn aside_of(url: &str) -> kvlab::plan::CacheAside {
    kvlab::plan::CacheAside {
        cache: url.parse().unwrap(),
        policy: kvlab::plan::WritePolicy::Invalidate,
        ttl_s: 0,
        start: Default::default(),
    }
}

#[test]
fn a_caches_eviction_policy_is_read_from_it_and_a_full_cache_that_cannot_evict_is_said() {
    use kvlab::modes::eviction::of_cache;
    use kvlab::workload::trace::policy::Policy;
    let opts = [
        ("maxmemory-policy", "allkeys-lfu"),
        ("maxmemory-samples", "7"),
        ("lfu-log-factor", "3"),
    ];
    let s = common::server_with(TargetKind::Redis, &opts, 4);
    let url = format!("redis://127.0.0.1:{}", s.endpoint().port);
    let e = of_cache(&aside_of(&url)).unwrap();
    let lfu = Policy::RedisLfu {
        samples: 7,
        log_factor: 3,
        decay_time_min: 1,
    };
    assert_eq!(e.policy, lfu, "{e:?}");
    assert!(e.source.starts_with("read from the cache at"), "{e:?}");
    // Read, not changed.
    let reply = raw(s.endpoint().port, b"CONFIG GET maxmemory-policy\r\n", |b| {
        b.ends_with(b"lfu\r\n")
    });
    assert!(String::from_utf8_lossy(&reply).contains("allkeys-lfu"));
    // A cache that refuses writes when full is drawn for the evicting
    // default, said; a managed one asked to is refused in one line.
    let s = common::server_with(
        TargetKind::Redis,
        &[("maxmemory-policy", "volatile-lru")],
        4,
    );
    let url = format!("redis://127.0.0.1:{}", s.endpoint().port);
    let e = of_cache(&aside_of(&url)).unwrap();
    assert_eq!(e.policy, Policy::REDIS_LRU, "{e:?}");
    assert!(e.source.contains("only keys with a TTL"), "{e:?}");
    let mut managed = aside_of("redis");
    managed
        .cache
        .server_opts
        .insert("maxmemory-policy".into(), "noeviction".into());
    let err = of_cache(&managed).unwrap_err().to_string();
    assert!(
        err.contains("--cache-opt") && err.contains("noeviction"),
        "{err}"
    );
    // Without a setting, the redis kvlab starts evicts by allkeys-lru (the
    // plan's own evicting setting is not said as given).
    for cache in [aside_of("redis"), aside_of("redis").evict_by_default()] {
        let e = of_cache(&cache).unwrap();
        assert_eq!(e.policy, Policy::REDIS_LRU, "{e:?}");
        assert!(e.source.contains("full and evicting"), "{e:?}");
    }
}
