//! A near cache (`--near-cache`) in front of real managed Redis and Valkey:
//! the reads it answers never reach the server (the server's counters say
//! so), every invalidation the server sends is counted (broadcast tracking:
//! one per write per connection), a read after the invalidation of a write
//! reached it is never stale (a stale read is younger than the slowest
//! invalidation), a TTL alone gives stale reads bounded by the TTL, and the
//! memory it holds stays within its bound.

use crate::common;

use kvlab::plan::near::{Invalidation, NearBound, NearCache};
use kvlab::plan::{Ratio, RunPlan, Stop, TargetKind};
use kvlab::results::RunResult;
use kvlab::results::near::NearReport;

/// A run of `kind` with `near`: 1,000 keys, one write in five, 4
/// connections on 2 threads, for `secs` seconds.
fn plan(kind: TargetKind, near: NearCache, secs: f64) -> RunPlan {
    let mut p = common::managed_plan(kind);
    p.near = Some(near);
    p.workload.keys = 1_000;
    p.workload.ratio = Ratio { set: 1, get: 4 };
    p.load.stop = Stop::Duration(secs);
    p.load.warmup_s = 0.5;
    p
}

/// The run's near cache report, after the checks every run passes: no
/// errors or misses, and the server's GETs are exactly the reads the near
/// caches did not answer.
fn checked(r: &RunResult) -> &NearReport {
    common::every_request_clean(r);
    let c = r.server_counters.as_ref().expect("server counters");
    assert!(c.agrees(), "{c:?}");
    let n = r.near_cache.as_ref().expect("a near cache report");
    assert!(n.hits > 0 && n.misses > 0, "{n:?}");
    assert_eq!(n.hits + n.misses, r.totals.gets, "{n:?}");
    let reads_sent = r.warmup.gets + r.totals.gets - n.hits_all;
    assert_eq!(c.server.gets, reads_sent, "{c:?} {n:?}");
    n
}

fn near(bound: NearBound, invalidation: Invalidation) -> NearCache {
    NearCache {
        bound,
        invalidation,
    }
}

#[test]
fn tracking_leaves_no_read_stale_once_its_invalidation_came() {
    let r = common::measure(&plan(
        TargetKind::Redis,
        near(NearBound::Items(10_000), Invalidation::Tracking),
        2.0,
    ));
    let n = checked(&r);
    assert!(
        n.invalidation_messages > 0 && n.entries_invalidated > 0,
        "{n:?}"
    );
    assert_eq!(n.evictions, 0, "{n:?}");
    let c = r.consistency.as_ref().expect("writes are versioned");
    if c.stale_reads > 0 {
        // A stale read came from an entry whose invalidation had not come:
        // it is younger than that invalidation's delay.
        let slowest = n.delay_max_us.expect("invalidations were timed");
        assert!(c.stale_age_us.max <= slowest + 1_000.0, "{c:?} {n:?}");
    }
}

#[test]
fn broadcast_tracking_counts_every_invalidation_the_server_sends() {
    let r = common::measure(&plan(
        TargetKind::Valkey,
        near(NearBound::Bytes(1 << 20), Invalidation::Bcast),
        2.0,
    ));
    let n = checked(&r);
    // Every write under the prefix is sent to each of the 4 connections
    // (the writer's own included); a few may still be on their way when
    // the run stops reading.
    let sets = r.server_counters.as_ref().unwrap().server.sets;
    let sent = sets * r.connections.established as u64;
    assert!(
        n.keys_invalidated <= sent,
        "{} > {sent}",
        n.keys_invalidated
    );
    assert!(
        n.keys_invalidated as f64 >= 0.98 * sent as f64,
        "{} of {sent}",
        n.keys_invalidated
    );
    assert!(n.peak_bytes <= 2 << 20, "{n:?}");
}

#[test]
fn a_ttl_alone_gives_stale_reads_bounded_by_it() {
    let mut p = plan(
        TargetKind::Redis,
        near(NearBound::Items(5_000), Invalidation::Ttl(1)),
        3.0,
    );
    // Each key written about every 2.5 s: entries live to their TTL, and
    // another thread's write often comes within it.
    p.load.rate = Some(2_000.0);
    let r = common::measure(&p);
    let n = checked(&r);
    assert_eq!(n.invalidation_messages, 0, "{n:?}");
    assert!(n.expired > 0, "{n:?}");
    let c = r.consistency.as_ref().expect("writes are versioned");
    assert!(c.stale_reads > 0, "{c:?}");
    assert!(c.stale_age_us.max <= 1_100_000.0, "{c:?}");
}

/// In front of a cache-aside run's cache: the near caches answer reads
/// that never reach the cache or the database, every server's counters
/// still agree with what kvlab sent it, and the cache's invalidations come.
#[test]
fn in_front_of_cache_aside_the_servers_see_only_what_it_missed() {
    let mut p = plan(
        TargetKind::Postgres,
        near(NearBound::Items(10_000), Invalidation::Tracking),
        2.0,
    );
    p.cache = Some(kvlab::plan::CacheAside {
        cache: "redis".parse().unwrap(),
        policy: kvlab::plan::WritePolicy::Invalidate,
        ttl_s: 0,
        start: Default::default(),
    });
    let r = common::measure(&p);
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!((r.totals.errors, r.totals.misses), (0, 0));
    let c = r.server_counters.as_ref().expect("the database's counters");
    assert!(c.agrees(), "{c:?}");
    let a = r.cache_aside.as_ref().expect("a cache-aside report");
    let n = r.near_cache.as_ref().expect("a near cache report");
    assert!(n.hits > 0 && n.invalidation_messages > 0, "{n:?}");
    // Every measured read went to the near cache first, those it missed to
    // the cache; the caching layer's hits are both caches' (one hit ratio).
    let reads = n.hits + n.misses;
    assert_eq!(reads, a.cache_hits + a.cache_misses, "{n:?} {a:?}");
    assert!(a.cache_hits >= n.hits, "{n:?} {a:?}");
    let ratio = a.cache_hits as f64 / reads as f64;
    assert!((a.hit_ratio - ratio).abs() < 1e-9, "{a:?}");
}

#[test]
fn a_near_cache_it_cannot_serve_is_refused_in_a_line() {
    common::each_fails_in_one_line(&[
        (
            "run --target memcached --near-cache 100",
            "--near-invalidation: memcached cannot tell a client of changed keys",
        ),
        ("run --target redis --near-cache lots", "--near-cache:"),
        (
            "run --target redis --near-cache 100 --near-invalidation ttl=0",
            "--near-invalidation:",
        ),
        (
            "run --target redis-cluster --near-cache 100",
            "--near-cache: kvlab's near cache fronts one server",
        ),
        ("run --target redis --near-cache 100 --batch 4", "--batch:"),
        (
            "run --target redis --near-invalidation bcast",
            "--near-invalidation: it is how a near cache hears of writes, and --near-cache is not given",
        ),
    ]);
}
