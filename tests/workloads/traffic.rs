//! Traffic shaped like production, on real managed servers of every protocol
//! that runs here without a JVM: values whose size differs by key
//! (`--value-size 100:80,1000:20`, a range, a Pareto tail) loaded, read back
//! and verified, written again, counted in bytes, with the servers' own
//! counters agreeing; a value of the wrong size is a `wrong_value`; a table of
//! other sizes is loaded again, not reused. Keys with a TTL expire, and the
//! misses after it are counted as expired. `replay`: traces replayed.

use crate::common;
mod replay;

use common::{measure, server};
use kvlab::plan::{Ratio, RunPlan, Stop, TargetKind};
use kvlab::results::RunResult;
use kvlab::workload::{SizeDist, Values};

/// A plan of `kind` started by the run, values sized by `sizes`, 1 write in 5.
fn sized(kind: TargetKind, sizes: &str) -> RunPlan {
    let mut p = common::managed_plan(kind);
    set_sizes(&mut p, sizes);
    p.workload.ratio = Ratio { set: 1, get: 4 };
    p.load.stop = Stop::Requests(6_000);
    p
}

fn set_sizes(p: &mut RunPlan, sizes: &str) {
    p.workload.set_sizes(sizes.parse::<SizeDist>().unwrap());
}

/// Every read verified at its key's size, the bytes counted, the counters agree.
fn all_sizes_verified(r: &RunResult, values: &Values, counted: bool) {
    common::every_request_clean(r);
    let per = r.totals.value_bytes as f64 / (r.totals.hits + r.totals.sets) as f64;
    assert!(
        (per - values.mean()).abs() < 0.25 * values.mean(),
        "{per} B per request, mean {}",
        values.mean()
    );
    if counted {
        let cc = r.server_counters.as_ref().expect("counters read");
        assert!(cc.agrees(), "{cc:?}");
    }
}

#[test]
fn mixed_sizes_are_verified_on_every_protocol() {
    for (kind, sizes) in [
        (TargetKind::Redis, "100:80,1000:15,10000:5"),
        (TargetKind::Memcached, "64-4096"),
        (TargetKind::Postgres, "100:80,1000:15,10000:5"),
        (TargetKind::Mariadb, "pareto:40-20000"),
        (TargetKind::Tarantool, "64-4096"),
    ] {
        let p = sized(kind, sizes);
        let r = measure(&p);
        all_sizes_verified(&r, &p.workload.values(), true);
        let text = kvlab::report::summary::summary(&r);
        assert!(
            text.contains(&format!("x {} B (mean", p.workload.value_sizes_text())),
            "{text}"
        );
        assert!(text.contains("MB/s of values"), "{text}");
    }
}

#[test]
fn mixed_sizes_go_through_every_postgres_query_mode() {
    for mode in ["simple", "extended"] {
        let mut p = sized(TargetKind::Postgres, "pareto:32-8000");
        p.target.query_mode =
            Some(kvlab::plan::query_mode_of(p.target.kind, mode, "--query-mode").unwrap());
        let r = measure(&p);
        all_sizes_verified(&r, &p.workload.values(), true);
    }
}

#[test]
fn a_value_of_another_size_is_a_wrong_value() {
    let s = server(TargetKind::Redis);
    let mut p = common::plan(TargetKind::Redis, s.endpoint());
    set_sizes(&mut p, "100:50,200:50");
    p.workload.keys = 20;
    measure(&p);
    // Key 3's value, written again one byte short.
    let values = p.workload.values();
    let mut v = Vec::new();
    values.write(3, &mut v);
    v.pop();
    let mut req = format!("*3\r\n$3\r\nSET\r\n$7\r\nkvlab:3\r\n${}\r\n", v.len()).into_bytes();
    req.extend_from_slice(&v);
    req.extend_from_slice(b"\r\n");
    let reply = common::raw(s.endpoint().port, &req, |b| b.ends_with(b"\r\n"));
    assert_eq!(reply, b"+OK\r\n");
    p.workload.load = false;
    p.load.stop = Stop::Requests(2_000);
    common::catches_wrong_values(&p);
}

#[test]
fn a_table_of_other_sizes_is_loaded_again() {
    let s = server(TargetKind::Postgres);
    let mut p = common::plan(TargetKind::Postgres, s.endpoint());
    set_sizes(&mut p, "100-400");
    assert!(measure(&p).load.is_some(), "loaded");
    assert!(measure(&p).load.is_none(), "the same sizes: reused");
    // Same smallest and largest size, other weights: loaded again.
    set_sizes(&mut p, "100:1,400:1");
    p.workload.ratio = Ratio { set: 1, get: 4 };
    let r = measure(&p);
    assert!(r.load.is_some(), "other sizes: loaded again");
    // (A server the test started itself: kvlab reads no counters of it.)
    all_sizes_verified(&r, &p.workload.values(), false);
}

/// Keys given a TTL of 1 s, read for 3 s after the load: they expire, the
/// misses after the TTL are counted as expired, and the counters agree.
fn keys_expire(kind: TargetKind) {
    let mut p = sized(kind, "64-512");
    p.workload.ttl_s = 1;
    p.workload.ratio = Ratio { set: 0, get: 1 };
    p.load.warmup_s = 0.0;
    p.load.stop = Stop::Duration(3.0);
    p.load.rate = Some(3000.0);
    let r = measure(&p);
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(r.totals.errors, 0, "{:?}", r.totals.errors_by_kind);
    let expired = r
        .totals
        .expired_misses
        .expect("known for a run that only reads");
    // After the first second (or two, memcached's clock) nearly every read misses.
    assert!(
        r.totals.misses * 2 > r.totals.gets,
        "{} of {}",
        r.totals.misses,
        r.totals.gets
    );
    assert!(
        expired > 0 && expired <= r.totals.misses,
        "{expired} of {}",
        r.totals.misses
    );
    assert!(r.totals.hits > 0, "read before the TTL ran out");
    let cc = r.server_counters.as_ref().expect("counters read");
    assert!(cc.agrees(), "{cc:?}");
    let text = kvlab::report::summary::summary(&r);
    assert!(text.contains("read a key after its TTL ran out"), "{text}");
}

#[test]
fn redis_keys_expire_and_their_misses_are_counted_as_expired() {
    keys_expire(TargetKind::Redis);
}

#[test]
fn memcached_keys_expire_and_their_misses_are_counted_as_expired() {
    keys_expire(TargetKind::Memcached);
}

#[test]
fn a_ttl_is_refused_where_keys_do_not_expire() {
    let e = common::fails(&["run", "--target", "postgres", "--ttl", "5"]);
    assert!(e.contains("--ttl") && e.contains("does not expire"), "{e}");
    let e = common::fails(&[
        "run", "--target", "postgres", "--cache", "redis", "--ttl", "5",
    ]);
    assert!(e.contains("--cache-ttl"), "{e}");
    let e = common::fails(&["run", "--target", "redis", "--value-size", "100:x"]);
    assert!(e.contains("--value-size") && e.lines().count() == 1, "{e}");
}

#[test]
fn a_profile_sets_the_workload_and_flags_beside_it_win() {
    let run = |extra: &[&str]| -> kvlab::results::RunResult {
        let mut args = vec![
            "run",
            "--target",
            "redis",
            "--profile",
            "twitter-c29",
            "--keys",
            "2000",
            "--duration",
            "1",
            "--warmup",
            "0",
            "--connections",
            "4",
            "--json",
            "-",
        ];
        args.extend_from_slice(extra);
        let out = common::kvlab().args(&args).output().unwrap();
        common::succeeds(&out);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let r = run(&[]);
    assert!(r.valid, "{:?}", r.problems);
    let w = &r.config.workload;
    assert_eq!(w.profile.as_deref(), Some("twitter-c29"));
    assert_eq!((w.ratio.set, w.ratio.get), (13, 86));
    assert_eq!(w.ttl_s, 3600);
    assert!(
        w.value_sizes.is_some() && w.value_size > 700 && w.value_size < 900,
        "{w:?}"
    );
    assert!(r.totals.sets > 0 && r.totals.hits > 0);
    // A flag beside the profile wins over it.
    let r = run(&["--ratio", "0:1", "--value-size", "100"]);
    let w = &r.config.workload;
    assert_eq!((w.ratio.set, w.value_size, r.totals.sets), (0, 100, 0));
    assert!(w.value_sizes.is_none());
    // A preset of the figures across clusters: the median cluster with a
    // 5-minute TTL, said as a preset in the result.
    let r = run(&["--profile", "twitter-short-ttl"]);
    let w = &r.config.workload;
    assert_eq!(w.profile.as_deref(), Some("twitter-short-ttl"));
    assert_eq!((w.ratio.set, w.ratio.get, w.ttl_s), (13, 87, 300));
    assert!(
        matches!(w.distribution, kvlab::workload::KeyDistribution::Zipf { theta } if theta == 1.21),
        "{w:?}"
    );
    let note = r.profile.as_ref().expect("the profile's note");
    assert!(note.not_reproduced.contains("a preset"), "{note:?}");
    let e = common::fails(&["run", "--target", "redis", "--profile", "twitter-c99"]);
    assert!(
        e.contains("--profile") && e.contains("twitter-c29") && e.lines().count() == 1,
        "{e}"
    );
    // In front of a database the preset's TTL is the cache's, unless
    // --cache-ttl says otherwise (0: never).
    let aside = |extra: &[&str]| -> u32 {
        let mut args = vec![
            "run",
            "--target",
            "postgres",
            "--cache",
            "redis",
            "--profile",
            "twitter-short-ttl",
            "--keys",
            "500",
            "--requests",
            "200",
            "--warmup",
            "0",
            "--connections",
            "2",
            "--json",
            "-",
        ];
        args.extend_from_slice(extra);
        let out = common::kvlab().args(&args).output().unwrap();
        common::succeeds(&out);
        let r: kvlab::results::RunResult = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            r.config.workload.ttl_s, 0,
            "keys in the database do not expire"
        );
        r.config.cache.expect("a cache").ttl_s
    };
    assert_eq!(aside(&[]), 300);
    assert_eq!(aside(&["--cache-ttl", "0"]), 0);
}

#[test]
fn batch_reads_are_refused_where_they_cannot_run() {
    let e = common::fails(&["run", "--target", "redis", "--batch", "0"]);
    assert!(e.contains("--batch") && e.lines().count() == 1, "{e}");
    let e = common::fails(&["run", "--target", "redis", "--batch", "10:x"]);
    assert!(e.contains("--batch") && e.contains("weight"), "{e}");
    let e = common::fails(&["run", "--target", "redis", "--batch", "50", "--keys", "20"]);
    assert!(e.contains("--batch") && e.contains("--keys"), "{e}");
    let e = common::fails(&[
        "run", "--target", "postgres", "--cache", "redis", "--batch", "10",
    ]);
    assert!(e.contains("--batch") && e.contains("cache"), "{e}");
}

#[test]
fn a_batch_mix_with_expiry_counts_keys_and_expired_keys() {
    // Keys live 1 s; reads 2 s later find them gone, key by key.
    let mut p = sized(TargetKind::Redis, "100");
    p.workload.ttl_s = 1;
    p.workload.ratio = Ratio { set: 0, get: 1 };
    p.workload.batch = Some("1:50,8:50".parse().unwrap());
    p.workload.keys = 500;
    p.load.warmup_s = 2.0;
    p.load.stop = kvlab::plan::Stop::Duration(1.0);
    let r = common::measure(&p);
    let keys = r.totals.keys_read.unwrap();
    assert!(
        keys > r.totals.gets * 3 && keys < r.totals.gets * 6,
        "{keys} / {}",
        r.totals.gets
    );
    assert_eq!((r.totals.hits, r.totals.misses), (0, keys));
    assert_eq!(r.totals.expired_misses, Some(keys));
}
