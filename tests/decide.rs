//! `kvlab decide` against real managed servers (PostgreSQL, Redis): a load
//! the database alone carries easily drops the cache; a load far above the
//! database's measured capacity keeps it; a goal nothing meets says so with
//! each row's reason; the measured miss-ratio curve rises with memory; a
//! cache loss's database reads agree with the database's own counters.
//! Short runs (`--duration 1`) on a small copy: the decisions, not the
//! figures, are what is tested.

mod common;

use serde_json::Value;

/// Runs `kvlab decide` with `args` on a small quick load; its JSON.
fn decide(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_string();
    let mut all = vec![
        "decide",
        "--quick",
        "--duration",
        "1",
        "--keys",
        "20000",
        "--value-size",
        "1024",
        "--ratio",
        "1:19",
        "--key-distribution",
        "zipf",
        "--connections",
        "16",
        "--out",
    ];
    all.push(&out);
    all.extend(args);
    let o = common::kvlab().args(&all).output().unwrap();
    common::succeeds(&o);
    let text = std::fs::read_to_string(dir.path().join("decision.json")).unwrap();
    assert!(dir.path().join("report.html").exists());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("DECISION: "), "{stdout}");
    serde_json::from_str(&text).unwrap()
}

fn answer(d: &Value) -> &str {
    d["decision"]["answer"].as_str().unwrap()
}

/// Every architecture has a row with the JSON's fields.
fn every_row(d: &Value) {
    let rows = d["architectures"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["database", "cache-aside", "cache"]);
    for r in rows {
        for k in ["product", "within_goal", "measured_from"] {
            assert!(!r[k].is_null(), "{k} in {r}");
        }
        if r["within_goal"].as_bool().unwrap() {
            for k in [
                "server_cores",
                "memory_bytes",
                "machines",
                "monthly_cost",
                "p99_ms",
            ] {
                assert!(r[k].as_f64().is_some(), "{k} in {r}");
            }
        } else {
            assert!(r["why_not"].as_str().is_some_and(|w| !w.is_empty()), "{r}");
        }
    }
    for k in [
        "load",
        "miss_ratio_curve",
        "decision",
        "scaled",
        "extrapolations",
    ] {
        assert!(!d[k].is_null(), "{k}");
    }
}

#[test]
fn a_load_the_database_carries_easily_drops_the_cache_and_the_curve_rises() {
    let d = decide(&["--rps", "200", "--p99-ms", "50"]);
    every_row(&d);
    assert_eq!(answer(&d), "drop-cache", "{}", d["decision"]);
    // No round trip given: one same-zone hop to each server, said so.
    let load = &d["load"];
    assert_eq!(load["rtt_ms"], 0.2, "{load}");
    assert_eq!(load["cache_rtt_ms"], 0.2, "{load}");
    assert_eq!(load["rtt_assumed"], true, "{load}");
    assert!(
        d["extrapolations"].as_array().unwrap().iter().any(|e| e
            .as_str()
            .unwrap()
            .contains("assumed, one hop within a zone")),
        "{}",
        d["extrapolations"]
    );
    // The measured miss-ratio curve rises with memory.
    let curve = d["miss_ratio_curve"].as_array().unwrap();
    assert!(curve.len() >= 3, "{curve:?}");
    let hits: Vec<f64> = curve
        .iter()
        .map(|p| p["hit_ratio"].as_f64().unwrap())
        .collect();
    let mem: Vec<u64> = curve
        .iter()
        .map(|p| p["cache_memory_bytes"].as_u64().unwrap())
        .collect();
    assert!(mem.windows(2).all(|w| w[1] >= w[0]), "{mem:?}");
    assert!(hits.windows(2).all(|w| w[1] >= w[0] - 0.03), "{hits:?}");
    assert!(hits.last().unwrap() > &(hits[0] + 0.1), "{hits:?}");
    // The cache-aside row's memory holds at least the cache's in use.
    let aside = &d["architectures"][1];
    assert!(
        aside["memory_bytes"].as_u64().unwrap() >= aside["cache_memory_bytes"].as_u64().unwrap()
    );
    // A cache loss: the database's reads, as kvlab sent them, agree with its
    // own count, and rise after the loss.
    let loss = &d["cache_loss"];
    let counted = loss["db_counted"]
        .as_array()
        .expect("the database's counters");
    let (db, kvlab) = (counted[0].as_f64().unwrap(), counted[1].as_f64().unwrap());
    assert!((db / kvlab - 1.0).abs() <= 0.1, "{db} vs {kvlab}");
    assert!(
        loss["db_peak_rps"].as_f64().unwrap() > loss["db_before_rps"].as_f64().unwrap(),
        "{loss}"
    );
}

#[test]
fn a_load_far_above_the_databases_capacity_keeps_the_cache() {
    let d = decide(&["--rps", "2000000", "--p99-ms", "50", "--machine-cores", "2"]);
    every_row(&d);
    assert!(
        ["keep-cache", "cache-only"].contains(&answer(&d)),
        "{}",
        d["decision"]
    );
}

#[test]
fn a_goal_nothing_meets_says_so_with_each_rows_reason() {
    let d = decide(&["--rps", "1000", "--p99-ms", "0.001"]);
    every_row(&d);
    assert_eq!(answer(&d), "cannot-meet", "{}", d["decision"]);
    for r in d["architectures"].as_array().unwrap() {
        assert!(!r["within_goal"].as_bool().unwrap(), "{r}");
    }
}
