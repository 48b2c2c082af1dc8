//! `kvlab compare`'s judging: per-second tests, verdicts mirrored when A and B
//! swap, and the runs' labels.

use super::evidence::{has_minutes, per_second};
use super::*;
use crate::results::Second;

/// A run whose timeline has `seconds` (requests each), then minutes of
/// `minutes` requests per second each.
fn run(seconds: &[u64], minutes: &[u64]) -> RunResult {
    let mut r: RunResult =
        serde_json::from_str(include_str!("../../../tests/fixtures/client-result.json")).unwrap();
    let n = seconds.len() as i64;
    let entry = |second, span_s, requests| Second {
        second,
        span_s,
        requests,
        p99_us: 100.0,
        ..Second::default()
    };
    r.timeline = (0..n)
        .map(|i| entry(i, 1, seconds[i as usize]))
        .chain((0..minutes.len()).map(|i| entry(n + 60 * i as i64, 60, minutes[i] * 60)))
        .collect();
    r.totals.duration_s = (n + 60 * minutes.len() as i64) as f64;
    r
}

#[test]
fn the_per_second_test_reads_the_per_second_entries_only() {
    let r = run(&[1000, 1010, 990, 1000, 1005, 995], &[2000, 2000]);
    let s = per_second(&r, 0).unwrap();
    assert_eq!((s.n, s.mean), (6, 1000.0));
    assert_eq!(per_second(&r, 2).unwrap().n, 6);
    // The evidence says what the test covered.
    let p = point("x", &[&r], &[&r], Rules::default());
    let e = &p.figures[0].evidence;
    assert!(e.contains("per-second part"), "{e}");
    let plain = run(&[1000, 1010, 990], &[]);
    assert!(!has_minutes(&plain) && has_minutes(&r));
}

/// Seconds of about 1000 requests, jittered.
const RPS: [u64; 8] = [1000, 1010, 990, 1005, 995, 1000, 1008, 992];

/// A run of `RPS` × `scale` requests a second, its p50 × `p50` and p99
/// and p99.9 × `tail` (jittered with the requests), whole-run figures the
/// seconds' means.
fn steady(scale: f64, p50: f64, tail: f64) -> RunResult {
    let rps: Vec<u64> = RPS.iter().map(|&q| (q as f64 * scale) as u64).collect();
    let mut r = run(&rps, &[]);
    for (s, q) in r.timeline.iter_mut().zip(RPS) {
        let j = q as f64 / 1000.0;
        (s.p50_us, s.p99_us, s.p999_us) = (50.0 * p50 * j, 100.0 * tail * j, 200.0 * tail * j);
    }
    let m = |f: fn(&Second) -> f64| mean(&r.timeline.iter().map(f).collect::<Vec<_>>());
    r.totals.throughput_rps = m(|s| s.requests as f64);
    r.latency.latency_us.p50 = m(|s| s.p50_us);
    r.latency.latency_us.p99 = m(|s| s.p99_us);
    r.latency.latency_us.p999 = m(|s| s.p999_us);
    r
}

/// `compare a b` and `compare b a` under the default rules.
fn both_ways(a: RunResult, b: RunResult) -> (Comparison, Comparison) {
    let (a, b) = (Results::Run(Box::new(a)), Results::Run(Box::new(b)));
    let rules = Rules::default();
    (
        compare(&a, "a", &b, "b", rules),
        compare(&b, "b", &a, "a", rules),
    )
}

fn verdicts(c: &Comparison) -> Vec<(&'static str, Verdict)> {
    c.points[0]
        .figures
        .iter()
        .map(|f| (f.name, f.verdict))
        .collect()
}

#[test]
fn swapping_a_and_b_mirrors_every_verdict() {
    // Throughput +50.9% (−33.7% back), p50 ×1.2, the tail ×1.6.
    let (ab, ba) = both_ways(steady(1.0, 1.0, 1.0), steady(1.509, 1.2, 1.6));
    let back: Vec<_> = verdicts(&ba)
        .into_iter()
        .map(|(n, v)| (n, v.mirrored()))
        .collect();
    assert_eq!(verdicts(&ab), back);
    let v = verdicts(&ab);
    assert_eq!(v[0], ("throughput req/s", Verdict::Better), "{v:?}");
    assert_eq!(v[1], ("p50 µs", Verdict::BelowThreshold), "{v:?}");
    assert_eq!(v[2], ("p99 µs", Verdict::Worse), "{v:?}");
    assert_eq!(verdicts(&ba)[0].1, Verdict::Worse);
    // The change shown stays (B − A) / A; the rule tested says either way.
    let (up, down) = (
        ab.points[0].figures[0].change_pct,
        ba.points[0].figures[0].change_pct,
    );
    assert!(
        (up - 50.9).abs() < 0.1 && (down + 33.7).abs() < 0.1,
        "{up} {down}"
    );
    assert_eq!((ab.tally(), ba.tally()), ([1, 2, 1, 2, 0], [2, 1, 1, 2, 0]));
    let head = &render::headline(&ba)[0];
    assert!(
        head.contains("1 figures worse, 2 better, 1 below threshold, 2 within noise")
            && head.contains("a change counts from 50% either way: B/A ≥ 1.5 or ≤ 1/1.5"),
        "{head}"
    );
}

#[test]
fn a_significant_change_under_the_threshold_is_below_it_not_noise() {
    let (ab, ba) = both_ways(steady(1.0, 1.0, 1.0), steady(1.1, 1.0, 1.0));
    for c in [&ab, &ba] {
        let f = &c.points[0].figures[0];
        assert_eq!(f.verdict, Verdict::BelowThreshold, "{f:?}");
        assert!(f.evidence.starts_with("p = < 0.0001"), "{f:?}");
    }
    let text = render::text(&ab);
    assert!(text.contains("below threshold  p = "), "{text}");
    assert!(
        text.contains("0 figures worse, 0 better, 1 below threshold"),
        "{text}"
    );
    // Not significant at all: within noise.
    let mut shuffled = steady(1.0, 1.0, 1.0);
    shuffled.timeline.reverse();
    for (i, s) in shuffled.timeline.iter_mut().enumerate() {
        s.second = i as i64;
    }
    let (same, _) = both_ways(steady(1.0, 1.0, 1.0), shuffled);
    let f = &same.points[0].figures[0];
    assert_eq!(f.verdict, Verdict::Noise, "{f:?}");
    assert_eq!(Verdict::Noise.name(), "within noise");
}

#[test]
fn the_size_of_a_change_is_judged_either_way() {
    assert_eq!(ratio(1000.0, 1500.0), ratio(1500.0, 1000.0));
    assert_eq!((ratio(0.0, 0.0), ratio(0.0, 5.0)), (1.0, f64::INFINITY));
    assert!(ratio(f64::NAN, 1.0).is_nan());
    for (a, b) in [
        (0.0, 5.0),
        (1000.0, 1500.0),
        (1000.0, 1499.0),
        (3.0, f64::NAN),
    ] {
        for apart in [None, Some(true), Some(false)] {
            for better in [Better::Higher, Better::Lower] {
                let (ab, ba) = (
                    judge(a, b, apart, 50.0, better),
                    judge(b, a, apart, 50.0, better),
                );
                assert_eq!(ab, ba.mirrored(), "{a} {b} {apart:?}");
            }
        }
    }
    assert_eq!(judge(0.0, 5.0, None, 50.0, Better::Lower), Verdict::Worse);
    assert_eq!(pct(0.0, 5.0), f64::INFINITY);
}

#[test]
fn a_cache_aside_run_is_not_labelled_as_its_database() {
    let mut plain = run(&RPS, &[]);
    plain.target.product = "postgres".into();
    let mut aside = plain.clone();
    let mut cache = serde_json::to_value(&plain.target).unwrap();
    cache["product"] = "redis".into();
    aside.cache_aside = Some(
        serde_json::from_value(serde_json::json!({
            "cache": cache, "write_policy": "invalidate", "ttl_s": 0,
            "cache_hits": 1, "cache_misses": 1, "hit_ratio": 0.5,
            "db_reads_saved_per_s": 1.0, "db_reads_per_s": 1.0, "legs": {},
        }))
        .unwrap(),
    );
    let (ab, ba) = both_ways(plain, aside);
    assert_eq!(ab.points[0].label, "postgres → redis in front of postgres");
    assert_eq!(ba.points[0].label, "redis in front of postgres → postgres");
    let mut same = run(&RPS, &[]);
    same.target.product = "postgres".into();
    let (c, _) = both_ways(same.clone(), same);
    assert_eq!(c.points[0].label, "postgres");
}

#[test]
fn a_host_busy_on_one_side_only_is_said_and_no_figure_is_called_worse_on_it() {
    let load = |others_cores| crate::results::host_load::HostLoad {
        others_cores,
        steal_share: 0.0,
        load_avg: 0.5,
        cores: 2.0,
        seconds: 8.0,
    };
    let (mut a, mut b) = (steady(1.0, 1.0, 1.0), steady(1.509, 1.2, 1.6));
    a.host.host_load = Some(load(0.05));
    b.host.host_load = Some(load(1.4));
    let (ab, ba) = both_ways(a.clone(), b.clone());
    for c in [&ab, &ba] {
        let v = verdicts(c);
        assert_eq!(v[0], ("throughput req/s", Verdict::HostBusier), "{v:?}");
        assert_eq!(v[2], ("p99 µs", Verdict::HostBusier), "{v:?}");
        assert!(c.worse().is_empty());
        let said = c.points[0].notes.join("; ");
        assert!(
            said.contains("busy during") && said.contains("other processes used 1.40 cores"),
            "{said}"
        );
    }
    // Busy on both sides, or on neither: judged as before.
    b.host.host_load = Some(load(0.05));
    let (ab, _) = both_ways(a, b);
    assert_eq!(verdicts(&ab)[2].1, Verdict::Worse);
    assert!(ab.host_busier().is_empty());
}
