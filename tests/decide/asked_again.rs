//! A decision asked again from its saved measurements, nothing started:
//! the small quick decision kvlab 0.1 saved (`tests/fixtures/decision-0.1`:
//! 20,000 keys of 1 KiB, zipf 0.99, 1:19, 2,000 req/s, p99 20 ms) at four
//! times the rate in under a second and in a daily sine; far above the
//! database's capacity, where the answer is the rule on the rows at that
//! scale; at a million keys, where its curve, carried from the copy of
//! 20,000, moves as an exact LRU simulation does; and what the
//! measurements cannot carry, refused in a line.

use crate::common;
use serde_json::Value;

use super::check::fixture_copy;
use super::rows::{answer, every_row, flips_follow_the_rates, json_at, without_servers};

/// Four times the saved rate: recomputed in under a second; the same peak
/// in a daily sine sized at the peak, the shape and its mean said beside.
#[test]
fn four_times_the_rate_and_its_daily_sine_are_asked_again_in_under_a_second() {
    let (dir, saved) = fixture_copy();
    let out_s = saved.to_str().unwrap();
    // Four times the rate: recomputed in under a second (five where other
    // processes kept the host busy meanwhile: two CPU hogs beside the suite
    // saw 2 s).
    let started = std::time::Instant::now();
    let four = dir.path().join("four");
    let ((), busy) = common::busy_while(|| {
        without_servers(&[
            "decide",
            "--from",
            out_s,
            "--rps",
            "8000",
            "--out",
            four.to_str().unwrap(),
        ]);
    });
    let within = if busy.is_some() { 5.0 } else { 1.0 };
    assert!(
        started.elapsed().as_secs_f64() < within,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(json_at(&four)["load"]["rps"], 8000.0);
    // The same peak in a daily sine: sized at the peak (the same machines),
    // the shape and its mean over the day said beside it.
    let sine = dir.path().join("sine");
    let said = without_servers(&[
        "decide",
        "--from",
        out_s,
        "--rps",
        "8000",
        "--rate-shape",
        "sine:ratio=4",
        "--out",
        sine.to_str().unwrap(),
    ]);
    let (sine, four) = (json_at(&sine), json_at(&four));
    assert_eq!(
        sine["load"]["rate_shape"]["shape"], "sine",
        "{}",
        sine["load"]
    );
    assert_eq!(sine["load"]["rate_shape"]["period_s"], 86400.0);
    assert_eq!(sine["decision"], four["decision"]);
    assert_eq!(sine["architectures"], four["architectures"]);
    assert!(
        said.contains(
            "8,000 req/s at the peak (sine of 86400 s, peak 4x the trough; 5,000 req/s over the day"
        ),
        "{said}"
    );
}

/// Far above the database's capacity on small machines: the database alone
/// takes many machines, and the answer is the rule on the rows at that scale.
#[test]
fn far_above_the_databases_capacity_the_answer_is_the_rule_on_the_rows() {
    let (dir, saved) = fixture_copy();
    let out_s = saved.to_str().unwrap();
    // Far above the database's capacity on small machines: the database
    // alone takes many machines, and the answer is the rule on the rows at
    // that scale. Whether the cache pays there rests on two figures measured
    // on a busy host (the cache's operations per core against the
    // database's; 2.1x on a loaded CI host, where cache-aside came to 93% of
    // the cost), so the test holds the answer to the rows, not to one
    // verdict. A looser goal judges every saved run again (a run of 1 s on a
    // busy host can miss 5 ms; none misses 50).
    let far = dir.path().join("far");
    let far_s = far.to_str().unwrap();
    without_servers(&[
        "decide",
        "--from",
        out_s,
        "--rps",
        "2000000",
        "--p99-ms",
        "50",
        "--machine-cores",
        "2",
        "--out",
        far_s,
    ]);
    let far = json_at(&far);
    every_row(&far);
    let why: Vec<String> = far["architectures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}: {} ({} cores, {} machines, {} a month, hit ratio {}, servers {})",
                r["name"],
                r["why_not"],
                r["server_cores"],
                r["machines"],
                r["monthly_cost"],
                r["hit_ratio"],
                r["servers"]
            )
        })
        .collect();
    let why = why.join("; ");
    let row = |name: &str| {
        far["architectures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()
    };
    let (db, aside) = (row("database"), row("cache-aside"));
    let of = |r: &Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k}: {why}"));
    assert!(of(db, "machines") >= 10.0, "{why}");
    assert!(
        db["within_goal"] == true && aside["within_goal"] == true,
        "{why}"
    );
    let per_core = |r: &Value, role: &str| {
        r["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["role"] == role)
            .and_then(|s| s["ops_per_core"].as_f64())
            .unwrap()
    };
    assert!(per_core(aside, "cache") > per_core(db, "database"), "{why}");
    let pays = of(aside, "monthly_cost") < 0.9 * of(db, "monthly_cost");
    let expected = if pays { "keep-cache" } else { "drop-cache" };
    assert_eq!(answer(&far), expected, "{}; {why}", far["decision"]);
    flips_follow_the_rates(&far);
}

#[test]
fn what_the_measurements_cannot_carry_is_refused_in_a_line() {
    let (_dir, saved) = fixture_copy();
    let out_s = saved.to_str().unwrap();
    // What the measurements cannot carry is refused in a line.
    for (flag, value) in [
        ("--ratio", "1:1"),
        ("--value-size", "100"),
        ("--duration", "3"),
    ] {
        let o = common::kvlab()
            .args(["decide", "--from", out_s, flag, value])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.starts_with(&format!("Error: {flag}")),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn carried_to_a_million_keys_the_curve_moves_as_an_exact_lru_does() {
    let (dir, saved) = fixture_copy();
    carried_to_a_million_keys(saved.to_str().unwrap(), dir.path());
}

/// The decision saved in `out` (20,000 keys, zipf 0.99, 1:19) asked again at
/// 1,000,000 keys: each carried point moves from what the cache measured on
/// the copy by what an exact LRU simulation of that load moves between the
/// two key counts at the share of keys it holds, within 2 points (a point
/// measured more than 8 points off the model on the copy is the model's
/// alone: within 2 points of the exact LRU at the stated keys). What the
/// real cache measured on the copy in a 1-s run on a busy host is the
/// measurement's, not the carry's.
fn carried_to_a_million_keys(out: &str, tmp: &std::path::Path) {
    let million = tmp.join("million");
    without_servers(&[
        "decide",
        "--from",
        out,
        "--keys",
        "1000000",
        "--out",
        million.to_str().unwrap(),
    ]);
    let d = json_at(&million);
    let carried: Vec<&Value> = d["miss_ratio_curve"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"] == "carried")
        .collect();
    assert!(carried.len() >= 3, "{}", d["miss_ratio_curve"]);
    let shares: Vec<f64> = carried
        .iter()
        .map(|p| p["share_of_keys"].as_f64().unwrap())
        .collect();
    let stated = common::lru::hit_ratios(1_000_000, 0.99, 0.05, &shares);
    let on_copy = common::lru::hit_ratios(20_000, 0.99, 0.05, &shares);
    for ((p, lru), lru_copy) in carried.iter().zip(stated).zip(on_copy) {
        let hit = p["hit_ratio"].as_f64().unwrap();
        let [measured, model] = [0, 1].map(|i| p["measured_on_copy"][i].as_f64().unwrap());
        let off = if (measured - model).abs() > 0.08 {
            hit - lru
        } else {
            (hit - measured) - (lru - lru_copy)
        };
        assert!(
            off.abs() <= 0.02,
            "carried {hit} from {measured} on the copy; exact LRU {lru_copy} on the copy, {lru} at 1M keys: {p}"
        );
    }
}
