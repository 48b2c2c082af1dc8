//! Cache-aside and stale reads against real servers: a constructed race the
//! detector must count (and its absence it must not), and whole cache-aside runs
//! whose counts agree with both servers and whose versions agree with the writes.

use crate::common;

use std::time::{Duration, Instant};

use common::{measure, plan, raw, server};
use kvlab::plan::{CacheAside, Ratio, Stop, TargetKind, TargetSpec, WritePolicy};
use kvlab::products::sql::SqlConn;
use kvlab::servers::ManagedServer;
use kvlab::workload::Values;
use kvlab::workload::consistency::VersionBoard;
use kvlab::workload::{KeyDistribution, LinkDelay};

/// One blocking RESP command on `port`, its whole reply.
fn redis(port: u16, args: &[&[u8]]) -> Vec<u8> {
    let mut req = Vec::new();
    kvlab::products::resp::encode_command(args, &mut req);
    raw(port, &req, |b| {
        kvlab::products::resp::frame_len(b).ok().flatten().is_some()
    })
}

/// GET through RESP: the value, or `None` for nil.
fn get(port: u16, key: &str) -> Option<Vec<u8>> {
    let r = redis(port, &[b"GET", key.as_bytes()]);
    if r.starts_with(b"$-1") {
        return None;
    }
    Some(
        kvlab::products::resp::bulk_payload(&r)
            .expect("a bulk string")
            .to_vec(),
    )
}

/// The cache-aside steps by hand, with the "cache" under `c:` and the
/// "database" under `d:` of one real redis-server: a slow reader's fill either
/// lands after a writer's update+delete (the race) or before it (no race).
fn interleave(race: bool) -> (Option<kvlab::workload::consistency::Staleness>, u64) {
    let s = server(TargetKind::Redis);
    let port = s.endpoint().port;
    let values = Values::new(64);
    let board = VersionBoard::new(1);
    let value = |v: u64| {
        let mut out = Vec::new();
        values.write_version(0, v, &mut out);
        out
    };
    assert_eq!(redis(port, &[b"SET", b"d:0", &value(0)]), b"+OK\r\n");

    // Reader 1 misses the cache and reads version 0 from the database.
    let snap1 = board.snapshot(0);
    let began1 = Instant::now();
    assert_eq!(get(port, "c:0"), None);
    let old = get(port, "d:0").unwrap();
    assert_eq!(values.verify(0, &old), Some(0));
    let writer = |board: &VersionBoard| {
        let v = board.begin_write(0);
        assert_eq!(redis(port, &[b"SET", b"d:0", &value(v)]), b"+OK\r\n");
        assert!(redis(port, &[b"DEL", b"c:0"]).starts_with(b":"));
        board.end_write(0, v, true, Instant::now());
    };
    if race {
        writer(&board); // the writer updates the database and invalidates...
    }
    // ...before (race) or after (no race) the reader fills the cache.
    assert_eq!(redis(port, &[b"SET", b"c:0", &old]), b"+OK\r\n");
    assert_eq!(
        board.judge(0, snap1, 0, began1),
        None,
        "reader 1 began before the write completed: its old value is not stale"
    );
    if !race {
        writer(&board);
    }
    std::thread::sleep(Duration::from_millis(30));

    // Reader 2 begins after the write completed and reads through the cache.
    let snap2 = board.snapshot(0);
    assert_eq!(snap2, 1, "one completed write");
    let began2 = Instant::now();
    let got = match get(port, "c:0") {
        Some(v) => v,
        None => get(port, "d:0").unwrap(),
    };
    let version = values.verify(0, &got).expect("a value of key 0");
    (board.judge(0, snap2, version, began2), version)
}

#[test]
fn the_detector_counts_a_late_fill_after_a_write_and_delete() {
    let (stale, version) = interleave(true);
    assert_eq!(
        version, 0,
        "the cache serves the old value the reader filled"
    );
    let st = stale.expect("a stale read");
    assert_eq!(st.versions, 1);
    assert!(
        st.age_ns >= 25_000_000,
        "outdated since the write completed ~30 ms earlier: {st:?}"
    );
}

#[test]
fn the_detector_counts_nothing_without_the_race() {
    let (stale, version) = interleave(false);
    assert_eq!(
        version, 1,
        "the delete came after the fill: the next read gets the new value"
    );
    assert_eq!(stale, None);
}

/// A managed PostgreSQL with exact statement counters.
fn pg() -> ManagedServer {
    let s = common::server_with(
        TargetKind::Postgres,
        &[("shared_preload_libraries", "pg_stat_statements")],
        30,
    );
    let c = kvlab::driver::Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap();
    kvlab::products::postgres::open(&c, Duration::from_secs(5))
        .unwrap()
        .query("CREATE EXTENSION pg_stat_statements")
        .unwrap();
    s
}

/// Sum of the versions in kvlab's PostgreSQL table: each write of a key bumps
/// its version by one, so after a run without errors it equals the writes.
fn version_sum(db: &ManagedServer) -> u64 {
    let c = kvlab::driver::Connector::new(TargetKind::Postgres, &db.endpoint()).unwrap();
    let mut pg = kvlab::products::postgres::open(&c, Duration::from_secs(5)).unwrap();
    pg.query_one(
        "SELECT coalesce(sum(('x' || convert_from(substring(v from 17 for 16), 'UTF8'))::bit(64)::bigint), 0) FROM kvlab_kv",
    )
    .unwrap()
    .unwrap()
    .parse()
    .unwrap()
}

fn aside_plan(db: &ManagedServer, cache: TargetKind, policy: WritePolicy) -> kvlab::plan::RunPlan {
    let mut p = plan(TargetKind::Postgres, db.endpoint());
    p.workload.ratio = Ratio { set: 1, get: 4 };
    p.load.pipeline = 1;
    p.load.connections = 8;
    p.load.stop = Stop::Requests(8_000);
    p.cache = Some(CacheAside {
        cache: cache.name().parse::<TargetSpec>().unwrap(),
        policy,
        ttl_s: 0,
        start: Default::default(),
    });
    p
}

fn check_aside_run(cache: TargetKind, policy: WritePolicy, io: kvlab::plan::io::IoChoice) {
    let db = pg();
    let mut p = aside_plan(&db, cache, policy);
    p.load.io = io;
    let r = measure(&p);
    common::ran_over(&r, io);
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(r.totals.errors, 0);
    let a = r.cache_aside.as_ref().expect("a cache-aside report");
    assert_eq!(a.write_policy, policy.name());
    assert_eq!(a.cache.kind, cache.name());
    // Every read asked the cache; only its misses reached the database.
    assert_eq!(a.cache_hits + a.cache_misses, r.totals.gets);
    assert_eq!(a.legs["cache_get"].replies, r.totals.gets);
    assert_eq!(a.legs["db_get"].replies, a.cache_misses);
    assert_eq!(a.legs["cache_fill"].replies, a.cache_misses);
    assert_eq!(a.legs["db_set"].replies, r.totals.sets);
    assert_eq!(a.legs["cache_write"].replies, r.totals.sets);
    assert!(a.hit_ratio > 0.5, "{a:?}");
    if policy == WritePolicy::Invalidate {
        assert!(a.cache_misses > 0, "writes invalidate: {a:?}");
    } else {
        // The cache starts with every key and writes update it: nothing misses.
        assert_eq!(a.cache_misses, 0, "{a:?}");
    }
    // Both servers counted exactly what kvlab sent them.
    let db_cc = r.server_counters.as_ref().expect("database counters");
    assert!(db_cc.server.exact && db_cc.agrees(), "{db_cc:?}");
    let cc = a.cache_counters.as_ref().expect("cache counters");
    assert!(cc.agrees(), "{cc:?}");
    // Versions agree with the writes that reached the database.
    // (writes to one key may overlap and land out of order: a key then keeps
    // a version below its writes)
    let (sum, sets) = (version_sum(&db), db_cc.kvlab_sets);
    assert!(sum <= sets && sets - sum <= sets / 100, "{sum} of {sets}");
    let c = r.consistency.as_ref().expect("stale reads measured");
    assert_eq!(c.checked_reads, r.totals.hits);
    assert!(c.stale_reads <= c.checked_reads);
    assert!(kvlab::report::summary::summary(&r).contains("cache hit ratio"));
}

#[test]
fn cache_aside_with_redis_invalidate_agrees_with_both_servers() {
    // Stale reads and both servers' counters, over each I/O interface.
    for io in common::transports() {
        check_aside_run(TargetKind::Redis, WritePolicy::Invalidate, io);
    }
}

#[test]
fn cache_aside_with_memcached_update_agrees_with_both_servers() {
    check_aside_run(
        TargetKind::Memcached,
        WritePolicy::Update,
        Default::default(),
    );
}

#[test]
fn the_database_alone_serves_no_stale_reads_and_its_versions_add_up() {
    let db = pg();
    let mut p = plan(TargetKind::Postgres, db.endpoint());
    p.workload.ratio = Ratio { set: 1, get: 1 };
    p.workload.keys = 200; // hot keys: many reads of recently written values
    p.load.pipeline = 1;
    p.load.connections = 8;
    let before = {
        let _ = measure(&{
            let mut q = p.clone();
            q.workload.ratio = Ratio { set: 0, get: 1 };
            q.load.stop = Stop::Requests(100);
            q
        });
        version_sum(&db)
    };
    let r = measure(&p);
    assert!(r.valid, "{:?}", r.problems);
    let c = r.consistency.as_ref().expect("stale reads measured");
    assert_eq!(c.checked_reads, r.totals.hits);
    assert!(c.checked_reads > 5_000);
    assert_eq!(c.stale_reads, 0, "{c:?}");
    let cc = r.server_counters.as_ref().unwrap();
    // Writes to one key may overlap and commit out of their versions' order.
    let (sum, sets) = (version_sum(&db) - before, cc.kvlab_sets);
    assert!(sum <= sets && sets - sum <= sets / 50, "{sum} of {sets}");
}

#[test]
fn a_cache_that_dies_mid_run_is_gone_around_and_said_not_a_hang() {
    // As applications do, reads go around a dead cache to the database; the
    // run ends on time, counts them, and is not a measurement of the cache.
    let db = server(TargetKind::Postgres);
    let mut cache = server(TargetKind::Redis);
    let mut p = aside_plan(&db, TargetKind::Redis, WritePolicy::Invalidate);
    p.cache.as_mut().unwrap().cache = format!("redis://127.0.0.1:{}", cache.endpoint().port)
        .parse()
        .unwrap();
    p.load.stop = Stop::Duration(3.0);
    p.load.warmup_s = 0.0;
    p.load.timeout_s = 1.0;
    let killer = common::kill_when_redis_has_served(cache.endpoint().port, cache.pid(), 5_000);
    let started = Instant::now();
    let r = measure(&p);
    killer.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(12), "no hang");
    let a = r.cache_aside.as_ref().unwrap();
    assert!(a.cache_bypassed > 0, "{a:?}");
    assert_eq!(r.totals.errors_by_kind["wrong_value"], 0);
    assert!(
        r.totals.hits > a.cache_hits,
        "the database served reads too"
    );
    assert!(!r.valid);
    assert!(
        r.problems.iter().any(|m| m.contains("unreachable")),
        "{:?}",
        r.problems
    );
    assert!(r.connections.failures > 0);
    assert!(!cache.running());
}

#[test]
fn a_requests_run_goes_on_around_a_cache_that_stays_down_and_ends() {
    // A cache that keeps refusing connections is retried, never given up:
    // the database serves the rest of the --requests, and the run ends.
    let db = server(TargetKind::Postgres);
    let cache = server(TargetKind::Redis);
    let mut p = aside_plan(&db, TargetKind::Redis, WritePolicy::Invalidate);
    p.cache.as_mut().unwrap().cache = format!("redis://127.0.0.1:{}", cache.endpoint().port)
        .parse()
        .unwrap();
    p.load.warmup_s = 0.0;
    p.load.stop = Stop::Requests(30_000);
    // Killed once the run is under way (the cache has answered 5,000
    // commands, its preparation about 2,000), never while connections open:
    // a connection refused at the start makes none of its share, and a slow
    // host once landed the kill there.
    let killer = common::kill_when_redis_has_served(cache.endpoint().port, cache.pid(), 5_000);
    let r = common::measure_within(&p, Duration::from_secs(60));
    killer.join().unwrap();
    assert_eq!(r.totals.requests, 30_000);
    assert!(r.cache_aside.as_ref().unwrap().cache_bypassed > 0);
    assert!(!r.valid);
}

/// Cache-aside on zipf keys with 30% writes at a fixed rate, database writes
/// slowed by an emulated round trip of `db_rtt_ms` (so writes to a hot key
/// overlap) and cache steps by `cache_rtt_ms` with jitter (so invalidations
/// and fills land out of order).
fn slow_writes_run(
    cache: TargetKind,
    db_rtt_ms: f64,
    cache_rtt_ms: f64,
) -> kvlab::results::RunResult {
    let db = pg();
    let mut p = aside_plan(&db, cache, WritePolicy::Invalidate);
    p.workload.ratio = Ratio { set: 3, get: 7 };
    p.workload.keys = 20_000;
    p.workload.distribution = KeyDistribution::Zipf { theta: 0.99 };
    p.load.connections = 32;
    p.load.rate = Some(1500.0);
    p.load.warmup_s = 1.0;
    p.load.stop = Stop::Duration(4.0);
    let link = |ms: f64, jitter_ms: f64| {
        (ms > 0.0).then_some(LinkDelay {
            rtt_ms: ms,
            jitter_ms,
        })
    };
    p.load.rtt = link(db_rtt_ms, 0.0);
    // Jitter on the cache's steps: a reader's fill may land after a
    // writer's delete that was sent later.
    p.load.cache_rtt = link(cache_rtt_ms, 4.0 * cache_rtt_ms);
    let r = measure(&p);
    // What these runs check is the cache's hits and stale reads, not the
    // rate: a host too busy to keep 1,500 req/s (a CI machine running the
    // other tests beside) still gives them.
    assert!(
        r.problems.iter().all(|m| m.starts_with("not sustained")),
        "{:?}",
        r.problems
    );
    assert_eq!(r.totals.errors, 0);
    r
}

/// A read hits a cache invalidated on write only when the previous access
/// to its key was a read: with 30% writes drawn like the reads, at most 70%.
/// Slow writes once drifted to cold keys (a key with a write in flight drew
/// another), and the cache hit 79%.
fn check_hit_ratio_within_its_ceiling(cache: TargetKind) {
    let r = slow_writes_run(cache, 5.0, 0.0);
    let a = r.cache_aside.as_ref().expect("a cache-aside report");
    let ceiling = a.hit_ratio_ceiling.expect("the run's ceiling");
    assert_eq!(Some(ceiling), r.totals.hit_ratio_ceiling());
    assert!(ceiling < 0.72, "the load's ceiling is ~0.70: {ceiling}");
    assert!(
        a.hit_ratio <= ceiling + 0.002,
        "hit ratio {} over its ceiling {ceiling}",
        a.hit_ratio
    );
    assert!(
        a.hit_ratio > 0.5,
        "a cache of every key hits most allowed reads: {a:?}"
    );
    let summary = kvlab::report::summary::summary(&r);
    assert!(summary.contains("of at most"), "{summary}");
}

#[test]
fn memcached_hits_no_more_than_the_load_allows_with_slow_writes() {
    check_hit_ratio_within_its_ceiling(TargetKind::Memcached);
}

#[test]
fn redis_hits_no_more_than_the_load_allows_with_slow_writes() {
    check_hit_ratio_within_its_ceiling(TargetKind::Redis);
}

#[test]
fn late_invalidations_still_count_stale_reads() {
    // Cache steps ~1 ms away with jitter: a reader's fill lands after a
    // writer's delete now and then.
    let r = slow_writes_run(TargetKind::Redis, 2.0, 1.0);
    let c = r.consistency.as_ref().expect("stale reads measured");
    assert!(c.stale_reads > 0, "{c:?}");
    assert!(c.stale_reads < c.checked_reads / 10, "{c:?}");
}

#[test]
fn a_cache_kvlab_did_not_start_reports_its_own_cpu_and_memory() {
    // Redis reports its CPU and resident memory (INFO), memcached its CPU
    // (stats rusage) but no resident memory: not known, never 0.
    let db = server(TargetKind::Postgres);
    for kind in [TargetKind::Redis, TargetKind::Memcached] {
        let cache = server(kind);
        let mut p = aside_plan(&db, kind, WritePolicy::Invalidate);
        let url = format!("{}://127.0.0.1:{}", kind.name(), cache.endpoint().port);
        p.cache.as_mut().unwrap().cache = url.parse().unwrap();
        p.load.stop = Stop::Duration(2.0);
        let r = measure(&p);
        let a = r.cache_aside.as_ref().unwrap();
        assert!(!a.cache.managed);
        assert!(a.cache_cpu_s.is_some_and(|c| c > 0.0), "{kind:?}: {a:?}");
        let u = kvlab::results::usage::of(&r.server.servers, kvlab::results::usage::Role::Cache)
            .unwrap();
        assert_eq!(u.cpu_s, a.cache_cpu_s);
        let report = kind.product().facts().usage_report.unwrap();
        assert_eq!(u.cpu_source.as_deref(), Some(report.cpu), "{kind:?}");
        let text = kvlab::report::summary::summary(&r);
        assert!(
            text.contains(&format!("(from the server's {})", report.cpu)),
            "{text}"
        );
        if report.resident {
            let (peak, hwm) = (u.peak_rss_kb.unwrap(), cache.usage().unwrap().peak_rss_kb);
            assert!(
                peak > 0 && peak <= 2 * hwm && 4 * peak >= hwm,
                "{peak} KiB, /proc {hwm} KiB"
            );
            assert_eq!(u.rss_source.as_deref(), report.memory);
            // The database, PostgreSQL given by URL, reports neither: no sums.
            let sv = &r.server;
            assert_eq!((sv.server_cpu_s, sv.server_peak_rss_kb), (None, None));
        } else {
            assert_eq!((u.peak_rss_kb, u.rss_source.as_deref()), (None, None));
            assert!(text.contains("peak RSS not known"), "{text}");
        }
    }
}
