//! Reading a decision's JSON: its answer, its rows and their figures
//! recomputed from their own fields, its flips, a decision saved in a
//! directory, kvlab run with no server it could start.

use crate::common;

use serde_json::Value;

pub fn answer(d: &Value) -> &str {
    d["decision"]["answer"].as_str().unwrap()
}

/// Every architecture has a row with the JSON's fields.
pub fn every_row(d: &Value) {
    let rows = d["architectures"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    // On a catalog's shapes (aws-managed unless told) with a cache loss
    // measured, cache-aside sized to survive it beside cache-aside.
    let own = d["load"]["deployment"]["deploy"] == "own";
    let sized = !own && !d["cache_loss"].is_null();
    let expected: Vec<&str> = [
        "database",
        "database-replicas",
        "cache-aside",
        "cache-aside-loss-sized",
        "cache-aside-near",
        "database-near",
        "cache",
    ]
    .into_iter()
    .filter(|n| *n != "cache-aside-loss-sized" || sized)
    .collect();
    assert_eq!(names, expected);
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
    costs_recompute(d);
}

/// Every row's figures follow from its own JSON fields by the one method:
/// each server's cores are its operations at the stated load over its
/// product's operations per core; on own machines its machines are whole
/// and its cost is its machines at the stated machine price, on a catalog's
/// shapes its bill is its count at the hourly price for 730 hours plus
/// storage and usage; the row's are their sums.
pub fn costs_recompute(d: &Value) {
    if d["load"]["deployment"]["deploy"] != "own" {
        return bills_recompute(d);
    }
    let month = d["load"]["price_machine_month"].as_f64().unwrap();
    let shared = d["load"]["shared"].as_bool().unwrap();
    let (mc, mg) = (
        d["load"]["machine_cores"].as_f64().unwrap(),
        d["load"]["machine_gib"].as_f64().unwrap(),
    );
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    for r in d["architectures"].as_array().unwrap() {
        let Some(servers) = r["servers"].as_array() else {
            continue;
        };
        let mut cores = 0.0;
        let mut cost = 0.0;
        for sv in servers {
            let Some(pc) = sv["ops_per_core"].as_f64() else {
                continue;
            };
            let c = sv["ops_per_s"].as_f64().unwrap() / pc;
            assert!(close(c, sv["cores"].as_f64().unwrap()), "{sv}");
            cores += c;
            if !shared {
                let gib = sv["memory_bytes"].as_f64().unwrap_or(0.0) / (1u64 << 30) as f64;
                let m = (c / mc).ceil().max((gib / mg).ceil()).max(1.0);
                assert_eq!(sv["machines"].as_f64(), Some(m), "{sv}");
                assert!(
                    close(sv["monthly_cost"].as_f64().unwrap(), m * month),
                    "{sv}"
                );
                cost += m * month;
            }
        }
        if let Some(rc) = r["server_cores"].as_f64() {
            assert!(close(rc, cores), "{r}");
        }
        if let (Some(rc), false) = (r["monthly_cost"].as_f64(), shared) {
            assert!(close(rc, cost), "{r}");
        }
    }
}

/// [`costs_recompute`] on a catalog's shapes: each placed server's bill is
/// its count × its hourly price × 730, plus its storage and usage; the
/// row's cost their sum; its cores sustained hold its cores.
pub fn bills_recompute(d: &Value) {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    for r in d["architectures"].as_array().unwrap() {
        let mut cost = 0.0;
        for sv in r["servers"].as_array().into_iter().flatten() {
            let p = &sv["placed"];
            let Some(count) = p["count"].as_f64() else {
                assert!(sv["unpriced"].is_string() || sv["cores"].is_null(), "{sv}");
                continue;
            };
            let f = |k: &str| p[k].as_f64().unwrap_or(0.0);
            let whole = count * f("hour") * 730.0 + f("storage_month") + f("usage_month");
            assert!(close(whole, f("monthly")), "{sv}");
            if let (Some(c), Some(cores)) = (p["sustained_cores"].as_f64(), sv["cores"].as_f64()) {
                assert!(c * count + 1e-9 >= cores, "{sv}");
            }
            cost += whole;
        }
        if let Some(rc) = r["monthly_cost"].as_f64() {
            assert!(close(rc, cost), "{r}");
        }
    }
}

/// Runs kvlab with `args`, no server binary on its PATH (nothing can be
/// started); its stdout.
pub fn without_servers(args: &[&str]) -> String {
    let o = common::kvlab()
        .env("PATH", "/nonexistent")
        .args(args)
        .output()
        .unwrap();
    common::succeeds(&o);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The path of the first place `a` and `b` differ, with both values.
pub fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (p, q) = (x.get(k.as_str()), y.get(k.as_str()));
                let null = Value::Null;
                first_difference(p.unwrap_or(&null), q.unwrap_or(&null), &format!("{at}.{k}"))
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]"))),
        _ => (a != b).then(|| format!("{at}: {a} vs {b}")),
    }
}

pub fn json_at(dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("decision.json")).unwrap()).unwrap()
}

/// Wherever the answer changes between two rates of `d`'s sweep, a flip of
/// the rate lies between them, from the one answer to the other (and none
/// where it holds).
pub fn flips_follow_the_rates(d: &Value) {
    let by_rate = d["by_rate"].as_array().unwrap();
    assert!(by_rate.len() >= 20, "{by_rate:?}");
    let flips: Vec<&Value> = d["flips"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["variable"] == "rps")
        .collect();
    let mut changes = 0;
    for w in by_rate.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if a["answer"] == b["answer"] {
            continue;
        }
        changes += 1;
        let (lo, hi) = (a["rps"].as_f64().unwrap(), b["rps"].as_f64().unwrap());
        assert!(
            flips.iter().any(|f| {
                let at = f["at"].as_f64().unwrap();
                at >= lo * 0.99
                    && at <= hi * 1.01
                    && f["from"] == a["answer"]
                    && f["to"] == b["answer"]
            }),
            "{lo}..{hi}: {} → {}: {flips:?}",
            a["answer"],
            b["answer"]
        );
    }
    assert_eq!(changes, flips.len(), "{flips:?}");
}
