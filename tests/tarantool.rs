//! Tarantool, started through kvlab's managed-server code: kvlab's counts agree
//! with `box.stat()` exactly (also pipelined with writes, whose replies come out
//! of order), misses and corrupt values are detected, and a bad password or the
//! wrong protocol fail fast with one line.

mod common;

use std::time::{Duration, Instant};

use common::{measure, measure_err, plan, server, server_with};
use kvlab::driver::Connector;
use kvlab::plan::{Ratio, TargetKind};

#[test]
fn counts_agree_with_box_stat_also_out_of_order() {
    for engine in ["memtx", "vinyl"] {
        let s = server(TargetKind::Tarantool);
        let mut p = plan(TargetKind::Tarantool, s.endpoint());
        p.target.schema.table_engine = Some(engine.into());
        p.workload.ratio = Ratio { set: 1, get: 4 };
        p.load.pipeline = 16;
        let r = measure(&p);
        assert_eq!((r.errors, r.misses), (0, 0), "{engine}: {:?}", r.problems);
        assert_eq!(r.requests, 20_000);
        assert!(r.sets > 0 && r.gets > 0);
        let cc = r.server_counters.as_ref().expect("box.stat counters");
        assert!(cc.agrees(), "{engine}: {cc:?}");
        assert_eq!(cc.server.gets, r.warmup.gets + r.gets);
        assert_eq!(cc.server.sets, r.warmup.sets + r.sets);
        assert!(r.valid, "{:?}", r.problems);
        // Every write made one version: the versions in the space add up.
        let c = Connector::new(TargetKind::Tarantool, &s.endpoint()).unwrap();
        let mut conn = kvlab::products::tarantool::open(&c, Duration::from_secs(5)).unwrap();
        let sum = conn
            .eval(
                "local n = 0 for _, t in box.space.kvlab_kv:pairs() do n = n + tonumber(string.sub(t[2], 17, 32), 16) end return n",
                vec![],
            )
            .unwrap();
        assert_eq!(
            sum[0].as_u64(),
            Some(r.warmup.sets + r.sets),
            "{engine}: versions in the space"
        );
    }
}

#[test]
fn misses_and_corruption_are_detected() {
    let s = server(TargetKind::Tarantool);
    let mut p = plan(TargetKind::Tarantool, s.endpoint());
    p.workload.load = false;
    let r = measure(&p);
    assert_eq!((r.hits, r.misses), (0, r.gets));
    assert!(!r.valid);

    let mut p = plan(TargetKind::Tarantool, s.endpoint());
    p.workload.keys = 10;
    let _ = measure(&p);
    let c = Connector::new(TargetKind::Tarantool, &s.endpoint()).unwrap();
    kvlab::products::tarantool::open(&c, Duration::from_secs(5))
        .unwrap()
        .eval(
            "box.space.kvlab_kv:replace{3, string.rep('x', 100)}",
            vec![],
        )
        .unwrap();
    p.workload.load = false;
    let r = measure(&p);
    let wrong = r.errors_by_kind["wrong_value"];
    assert!(wrong > 500, "about a tenth of 20k GETs hit key 3: {wrong}");
    assert_eq!(wrong + r.hits, r.gets);
    assert!(!r.valid);
}

#[test]
fn a_bad_password_and_the_wrong_protocol_fail_fast() {
    let s = server_with(TargetKind::Tarantool, &[("password", "s3cret")], 10);
    let mut e = s.endpoint();
    assert_eq!(e.user.as_deref(), Some("kvlab"));
    let p = plan(TargetKind::Tarantool, e.clone());
    let r = measure(&p);
    assert_eq!(r.errors, 0, "the right password works");
    e.password = Some(kvlab::plan::Secret("wrong".into()));
    let started = Instant::now();
    let err = measure_err(&plan(TargetKind::Tarantool, e));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        err.contains("check the user and password") && !err.contains("wrong"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let redis = server(TargetKind::Redis);
    let mut e = redis.endpoint();
    e.password = None;
    let started = Instant::now();
    let err = measure_err(&plan(TargetKind::Tarantool, e));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.contains("Tarantool server"), "{err}");
    let err = measure_err(&plan(TargetKind::Redis, s.endpoint()));
    assert!(err.contains("Redis/Valkey"), "{err}");
}

#[test]
fn an_external_tarantool_reports_its_own_cpu_as_proc_sees_it() {
    let s = common::server(TargetKind::Tarantool);
    common::cpu_sources_agree(TargetKind::Tarantool, &s);
}

#[test]
fn tarantool_over_a_unix_socket_counts_agree() {
    common::transport_counts_agree(TargetKind::Tarantool, &[("socket", "on")], |_, _| {});
}
