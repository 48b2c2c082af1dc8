//! The round trip kvlab emulates between the application and its servers
//! (`--rtt`, `--cache-rtt`), and the open loop's arrivals, against real
//! servers: a round trip adds itself to every request and bounds what one
//! connection carries; an open loop keeps its rate across it and says how
//! close its sends came to their times; a cache-aside hit costs one round
//! trip and a miss three; the servers' counters still agree with kvlab's.

use crate::common;

use common::{managed_plan, measure, plan, server};
use kvlab::plan::{CacheAside, CacheStart, Ratio, RunPlan, Stop, TargetKind, TargetSpec};
use kvlab::results::RunResult;
use kvlab::workload::{Arrivals, LinkDelay};

fn rtt(ms: f64) -> Option<LinkDelay> {
    Some(LinkDelay {
        rtt_ms: ms,
        jitter_ms: 0.0,
    })
}

/// Valid (or, on a host other processes kept busy, said not sustained)
/// and counted alike by the server.
fn agrees(r: &RunResult) {
    common::valid_unless_host_busy(r);
    let cc = r.server_counters.as_ref().expect("server counters read");
    assert!(cc.agrees(), "{cc:?}");
}

/// Each of `r`'s `connections` carried `pipeline` requests per mean latency
/// (Little's law, within 15%), and fewer than `pipeline` per millisecond,
/// the round trip.
fn in_flight_per_round_trip(r: &RunResult, connections: usize, pipeline: usize) {
    let per_conn = r.totals.throughput_rps / connections as f64;
    let expected = pipeline as f64 * 1e6 / r.latency.latency_us.mean;
    assert!(
        (per_conn / expected - 1.0).abs() < 0.15,
        "{per_conn} req/s per connection at pipeline {pipeline}, the round trip predicts {expected}"
    );
    assert!(per_conn < pipeline as f64 * 1000.0, "{per_conn}");
}

#[test]
fn a_round_trip_adds_itself_to_each_request_and_bounds_a_connection() {
    let _shared = common::shared();
    let s = server(TargetKind::Redis);
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.load.pipeline = 1;
    p.load.stop = Stop::Requests(3_000);
    let base = measure(&p);
    agrees(&base);
    p.load.rtt = rtt(1.0);
    let one = measure(&p);
    agrees(&one);
    // p50 rises by the round trip: never less than the link adds, and no
    // more than a busy 2-core host's scheduling adds to it.
    let added = one.latency.latency_us.p50 - base.latency.latency_us.p50;
    assert!((950.0..=1500.0).contains(&added), "p50 rose by {added} µs");
    // A connection carries one request per round trip and service time.
    in_flight_per_round_trip(&one, p.load.connections, 1);
    // At pipeline 4 a connection has four in flight across the link: four
    // per round trip and service time (Little's law, within the run itself,
    // since two runs on a busy 2-core host differ by more than the link).
    p.load.pipeline = 4;
    p.load.stop = Stop::Requests(12_000);
    let four = measure(&p);
    agrees(&four);
    in_flight_per_round_trip(&four, p.load.connections, 4);
    let ratio = four.totals.throughput_rps / one.totals.throughput_rps;
    assert!(ratio > 2.5, "pipeline 4 carried {ratio}x");
}

#[test]
fn an_open_loop_keeps_its_rate_across_a_round_trip_and_reports_its_sends() {
    let _shared = common::shared();
    let s = server(TargetKind::Redis);
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.load.connections = 20;
    p.load.pipeline = 1;
    p.load.rate = Some(2_000.0);
    p.load.stop = Stop::Duration(2.0);
    p.load.warmup_s = 0.5;
    p.load.rtt = rtt(1.0);
    let ios = common::transports();
    for (arrivals, io) in [Arrivals::Poisson, Arrivals::Uniform]
        .into_iter()
        .flat_map(|a| ios.iter().map(move |&io| (a, io)))
    {
        p.load.arrivals = arrivals;
        p.load.io = io;
        let r = measure(&p);
        common::ran_over(&r, io);
        agrees(&r);
        assert!(
            (r.totals.throughput_rps / 2_000.0 - 1.0).abs() < 0.05,
            "{arrivals:?}: {} req/s",
            r.totals.throughput_rps
        );
        let sc = r.latency.schedule.as_ref().expect("a schedule");
        assert_eq!(sc.arrivals.as_deref(), Some(arrivals.name()));
        // 2,000 req/s: the automatic send slack is at its cap.
        assert_eq!(sc.batch_window_us, 300.0);
        let e = sc.send_error_us.as_ref().expect("send errors measured");
        // The slack and kvlab's timer, not the server, set these.
        assert!(e.p50 < 500.0, "{arrivals:?}: send error {e:?}");
        assert!(sc.send_error_histogram.is_some());
        // What waiting cost: counted, each at most a few per request.
        let c = &r.client;
        let per = |n: Option<u64>| n.expect("counted") as f64 / r.totals.requests as f64;
        assert_eq!(c.client_wakes_per_request, Some(per(c.client_wakes)));
        assert!(
            per(c.client_wakes) > 0.0 && per(c.client_wakes) < 10.0,
            "{c:?}"
        );
        assert!(per(c.client_context_switches) < 10.0, "{c:?}");
        // Latency from the intended start includes the round trip.
        assert!(
            r.latency.latency_us.p50 >= 1000.0,
            "{:?}",
            r.latency.latency_us
        );
    }
    // --send-slack 0: each request within the 20 µs tolerance of its time.
    p.load.send_slack = kvlab::workload::SendSlack::Fixed(std::time::Duration::ZERO);
    let r = measure(&p);
    agrees(&r);
    let sc = r.latency.schedule.as_ref().expect("a schedule");
    assert_eq!(sc.batch_window_us, 20.0);
    let e = sc.send_error_us.as_ref().expect("send errors measured");
    assert!(e.p50 < 200.0, "send error {e:?}");
}

/// Cache-aside (invalidating writes, one in ten) in front of a managed
/// PostgreSQL, 8 connections at pipeline 1, a round trip of 1 ms on each link.
fn aside_over_links() -> RunPlan {
    let mut p = managed_plan(TargetKind::Postgres);
    p.cache = Some(CacheAside {
        cache: TargetKind::Redis.name().parse::<TargetSpec>().unwrap(),
        policy: kvlab::plan::WritePolicy::Invalidate,
        ttl_s: 0,
        start: CacheStart::Warm,
    });
    p.workload.ratio = Ratio { set: 1, get: 9 };
    p.load.pipeline = 1;
    p.load.connections = 8;
    p.load.rtt = rtt(1.0);
    p.load.cache_rtt = rtt(1.0);
    p
}

/// Each step of `r`'s cache-aside (cache GET, database GET, cache fill)
/// answered without error, at one round trip and the server's time (at
/// least the round trip where the run says other processes kept the host
/// busy: their CPU is queueing no link adds).
fn each_step_one_round_trip(r: &RunResult) {
    let a = r.cache_aside.as_ref().expect("a cache-aside report");
    let most = match common::host_busy(r) {
        None => 1600.0,
        Some(_) => f64::INFINITY,
    };
    for name in ["cache_get", "db_get", "cache_fill"] {
        let l = &a.legs[name];
        assert!(l.replies > 0 && l.errors == 0, "{name}: {l:?}");
        let p50 = l.latency_us.p50;
        assert!((1000.0..=most).contains(&p50), "{name}: p50 {p50} µs");
    }
}

#[test]
fn a_cache_aside_hit_costs_one_round_trip_and_a_miss_three() {
    let _shared = common::shared();
    let mut p = aside_over_links();
    p.load.stop = Stop::Requests(4_000);
    let r = measure(&p);
    agrees(&r);
    let a = r.cache_aside.as_ref().expect("a cache-aside report");
    let cc = a.cache_counters.as_ref().expect("cache counters read");
    assert!(cc.agrees(), "{cc:?}");
    let leg = |name: &str| a.legs[name].latency_us.p50;
    each_step_one_round_trip(&r);
    // Writes invalidate, so reads miss: a miss is three steps, a hit one.
    assert!(a.cache_misses > 0 && a.cache_hits > 0, "{a:?}");
    let hit = leg("cache_get");
    let miss = hit + leg("db_get") + leg("cache_fill");
    assert!(miss > 2.5 * hit, "miss {miss} µs, hit {hit} µs");
    // Most reads hit: the run's median is one round trip (at least one
    // where other processes kept the host busy, as each step's is).
    let most = common::host_busy(&r).map_or(1600.0, |_| f64::INFINITY);
    let p50 = r.latency.latency_us.p50;
    assert!((1000.0..most).contains(&p50), "p50 {p50} µs");
}

/// An open loop asking more of a connection than its round trip allows:
/// each request waits for room and still crosses the whole link, so a
/// connection carries fewer than one request per millisecond; what waited
/// is counted as held, not as kvlab's send error.
#[test]
fn an_open_loop_past_what_a_round_trip_allows_waits_for_room_and_crosses_the_link() {
    let _shared = common::shared();
    let s = server(TargetKind::Redis);
    let mut p = plan(TargetKind::Redis, s.endpoint());
    p.load.connections = 2;
    p.load.pipeline = 1;
    p.load.rate = Some(4_000.0);
    p.load.stop = Stop::Duration(1.5);
    p.load.warmup_s = 0.3;
    p.load.rtt = rtt(1.0);
    let r = measure(&p);
    // Twice what the connections carry: not sustained, and said so.
    assert!(
        !r.valid && r.problems.iter().any(|p| p.starts_with("not sustained")),
        "{:?}",
        r.problems
    );
    let cc = r.server_counters.as_ref().expect("server counters read");
    assert!(cc.agrees(), "{cc:?}");
    let per_conn = r.totals.throughput_rps / 2.0;
    assert!((500.0..1000.0).contains(&per_conn), "{per_conn} req/s");
    let sc = r.latency.schedule.as_ref().expect("a schedule");
    assert!(sc.held_sends > r.totals.requests / 2, "{sc:?}");
    // Each request's own round trip: its service time, from when the
    // application wrote it, is never under the link's.
    let svc = r.latency.service_time_us.as_ref().expect("service time");
    let most = common::host_busy(&r).map_or(1600.0, |_| f64::INFINITY);
    assert!((1000.0..most).contains(&svc.p50), "{svc:?}");
}

/// Cache-aside at a fixed rate, a round trip on each link: a hit costs one
/// round trip and each step of a miss one more, timed from when the
/// application wrote it (the schedule's folded outbound half included).
#[test]
fn cache_aside_at_a_fixed_rate_costs_a_round_trip_per_step() {
    let _shared = common::shared();
    let mut p = aside_over_links();
    p.load.rate = Some(1_000.0);
    p.load.stop = Stop::Duration(2.0);
    p.load.warmup_s = 0.5;
    let r = measure(&p);
    agrees(&r);
    each_step_one_round_trip(&r);
    assert!(
        r.latency.latency_us.p50 >= 1000.0,
        "{:?}",
        r.latency.latency_us
    );
}
