//! The working-set section drawn from the fixture study at chosen cache
//! sizes: one hit-ratio curve per rate, and the database alone's verdict
//! against the p99 goal.

use super::*;

/// The fixture study as a cache in front of postgres at `(cache MiB,
/// rate, hit ratio)` points, of 100 MiB of values.
fn sized(points: &[(u64, u32, f64)]) -> StudyResult {
    let mut s: StudyResult =
        serde_json::from_str(include_str!("../../../tests/fixtures/study.json")).unwrap();
    let template = s.points[0].clone();
    s.points = points
        .iter()
        .enumerate()
        .map(|(i, &(mb, rate, hit))| {
            let mut p = template.clone();
            p.index = i;
            p.target = "pg+redis".into();
            p.params = [
                ("cache.memory-mb".to_string(), mb.to_string()),
                ("rate".to_string(), rate.to_string()),
            ]
            .into();
            let r = p.result.as_mut().unwrap();
            r.config.load.rate = Some(rate as f64);
            r.cache_aside = Some(
                serde_json::from_value(serde_json::json!({
                    "cache": serde_json::to_value(&r.target).unwrap(),
                    "write_policy": "invalidate",
                    "ttl_s": 0,
                    "cache_hits": (hit * 1000.0) as u64,
                    "cache_misses": 1000 - (hit * 1000.0) as u64,
                    "hit_ratio": hit,
                    "db_reads_saved_per_s": 0.0,
                    "db_reads_per_s": (1.0 - hit) * rate as f64,
                    "legs": {},
                    "cache_cpu_s": null,
                    "db_cpu_s": null,
                    "cache_counters": null,
                    "working_set": {
                        "data_bytes": 100u64 << 20,
                        "memory_limit_bytes": mb << 20,
                        "memory_used_bytes": 0,
                        "items": 0,
                        "evictions": 0
                    }
                }))
                .unwrap(),
            );
            p
        })
        .collect();
    s
}

#[test]
fn each_rate_draws_its_own_hit_ratio_curve() {
    let s = sized(&[
        (10, 500, 0.60),
        (10, 1000, 0.55),
        (50, 500, 0.90),
        (50, 1000, 0.85),
    ]);
    let sec = section(&[s]).expect("a working-set section");
    let c = sec
        .charts
        .iter()
        .find(|c| c.title == "Cache hit ratio vs cache memory")
        .unwrap();
    let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["pg+redis rate=500 uniform", "pg+redis rate=1000 uniform"]
    );
    for ser in &c.series {
        assert_eq!(ser.points.len(), 2, "{ser:?}");
        assert!(ser.points[0].0 < ser.points[1].0, "{ser:?}");
    }
    assert_eq!(c.series[0].points, [(10.0, 60.0), (50.0, 90.0)]);
    // The legend names both; the size's own setting names neither.
    let svg = super::super::chart::svg(c);
    assert!(svg.contains(">pg+redis rate=1000 uniform</text>"));
    assert!(!svg.contains("memory-mb"));
    assert_eq!(sec.verdict.len(), 2, "{:?}", sec.verdict);
}

#[test]
fn one_rate_is_one_curve() {
    let s = sized(&[(10, 500, 0.6), (50, 500, 0.9)]);
    let sec = section(&[s]).unwrap();
    assert_eq!(sec.charts[0].series.len(), 1);
    assert_eq!(sec.charts[0].series[0].name, "pg+redis uniform");
}

#[test]
fn the_database_alone_never_carried_a_rate_whose_p99_missed_the_goal() {
    let mut r: RunResult =
        serde_json::from_str(include_str!("../../../tests/fixtures/client-result.json")).unwrap();
    r.valid = true;
    r.totals.errors = 0;
    r.latency.latency_us.p99 = 117_000.0;
    let missed = alone_verdict(&r, Some(5.0));
    assert!(!missed.contains("carried"), "{missed}");
    assert!(missed.contains("missed the goal of p99 ≤ 5 ms"), "{missed}");
    r.latency.latency_us.p99 = 3_000.0;
    assert_eq!(
        alone_verdict(&r, Some(5.0)),
        "it carried it within p99 ≤ 5 ms"
    );
    assert_eq!(alone_verdict(&r, None), "it carried it");
}
