//! `kvlab decide` against real managed servers (PostgreSQL, Redis): a load
//! the database alone carries easily drops the cache; a load far above the
//! database's measured capacity keeps it; a goal nothing meets says so with
//! each row's reason; the measured miss-ratio curve rises with memory; a
//! cache loss's database reads agree with the database's own counters; a
//! trace's own curve agrees with the measured points.
//! Short runs (`--duration 1`) on a small copy: the decisions, not the
//! figures, are what is tested.

mod common;

use serde_json::Value;

/// Held by each test that runs a decision, whole or cut: on 2 cores one beside
/// another leaves kvlab too little CPU to find the database's capacity
/// ("kvlab itself could not keep up"), which two of them assert.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// [`ALONE`], taken even after a test that held it failed.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `kvlab decide` with `args` on a small quick load; its JSON.
fn decide(args: &[&str]) -> Value {
    let mut all = common::SMALL_DECISION.to_vec();
    all.extend(args);
    decide_quick(&all)
}

/// Runs `kvlab decide --quick` with short runs and `args`; its JSON.
fn decide_quick(args: &[&str]) -> Value {
    common::decide_quick(args).0
}

fn answer(d: &Value) -> &str {
    d["decision"]["answer"].as_str().unwrap()
}

/// Every architecture has a row with the JSON's fields.
fn every_row(d: &Value) {
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
fn costs_recompute(d: &Value) {
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
fn bills_recompute(d: &Value) {
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

#[test]
fn a_load_the_database_carries_easily_drops_the_cache_and_the_curves_agree() {
    let _alone = alone();
    // The load from a trace: its keys, mix, sizes and skew; the cache
    // kvlab starts evicts by LFU, and the curves are drawn for it.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("zipf.csv");
    zipf_trace(&trace, 20_000, 400_000);
    let d = decide_quick(&[
        "--trace",
        trace.to_str().unwrap(),
        "--rps",
        "200",
        "--p99-ms",
        "50",
        "--cache-opt",
        "maxmemory-policy=allkeys-lfu",
    ]);
    every_row(&d);
    trace_taken_and_held_against(&d, &trace);
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
    let curve: Vec<&Value> = curve.iter().filter(|p| p["source"] == "measured").collect();
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
    let rows = d["architectures"].as_array().unwrap();
    let aside = rows.iter().find(|r| r["name"] == "cache-aside").unwrap();
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

/// Runs kvlab with `args`, no server binary on its PATH (nothing can be
/// started); its stdout.
fn without_servers(args: &[&str]) -> String {
    let o = common::kvlab()
        .env("PATH", "/nonexistent")
        .args(args)
        .output()
        .unwrap();
    common::succeeds(&o);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The path of the first place `a` and `b` differ, with both values.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
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

fn json_at(dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("decision.json")).unwrap()).unwrap()
}

/// A decision cut short by Ctrl-C after its first step resumes, reusing it;
/// `--from` recomputes the same decision without starting a server, and
/// with four times the rate in under a second; far above the database's
/// capacity its answer is the rule on the rows at that scale; at a million keys its curve, carried from
/// the copy of 20,000, moves as an exact LRU simulation does, within 2 points.
#[test]
fn a_cut_decision_resumes_and_is_asked_again_from_its_measurements() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d");
    let out_s = out.to_str().unwrap();
    let mut flags = common::QUICK_DECIDE.to_vec();
    flags.extend(common::SMALL_DECISION);
    flags.extend(["--rps", "2000", "--p99-ms", "5"]);
    let mut cut = flags.clone();
    cut.extend(["--out", out_s]);
    let (said, code, err) = common::interrupted_when(&cut, |line| {
        line.starts_with("kvlab decide: the cache alone")
    });
    assert_eq!(code, Some(130), "{said}{err}");
    assert!(err.contains("--resume"), "{err}");
    assert!(out.join("steps/01-database.json").exists(), "{said}{err}");
    // Cut again while resuming, before anything new finished: the manifest
    // still lists the step finished before.
    let mut again = flags.clone();
    again.extend(["--resume", out_s]);
    let (said, code, err) = common::interrupted_when(&again, |line| {
        line.starts_with("kvlab decide: the cache alone")
    });
    assert_eq!(code, Some(130), "{said}{err}");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["finished"],
        serde_json::json!(["database"]),
        "{said}{err}"
    );
    // Resumed: the database's search reused, the rest measured.
    let o = common::kvlab()
        .args(&flags)
        .args(["--resume", out_s])
        .output()
        .unwrap();
    common::succeeds(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("kvlab decide: the database alone: reused"),
        "{stdout}"
    );
    assert!(!stdout.contains("the cache alone: reused"), "{stdout}");
    let measured = json_at(&out);
    every_row(&measured);
    flips_follow_the_rates(&measured);
    assert!(measured["flips"].is_array(), "{measured}");
    for r in measured["architectures"].as_array().unwrap() {
        if r["within_goal"] == true {
            let range = &r["range"];
            let [lo, hi] = [0, 1].map(|i| range["cores"][i].as_f64().unwrap());
            let c = r["server_cores"].as_f64().unwrap();
            assert!(lo <= c + 1e-9 && c <= hi + 1e-9, "{r}");
            assert!(range["monthly_cost"].is_array(), "{r}");
        }
    }
    // The same decision from its measurements, nothing started.
    let again = dir.path().join("again");
    without_servers(&["decide", "--from", out_s, "--out", again.to_str().unwrap()]);
    let mut recomputed = json_at(&again);
    recomputed["extrapolations"] = measured["extrapolations"].clone();
    assert_eq!(first_difference(&recomputed, &measured, "$"), None);
    // Four times the rate: recomputed in under a second.
    let started = std::time::Instant::now();
    let four = dir.path().join("four");
    without_servers(&[
        "decide",
        "--from",
        out_s,
        "--rps",
        "8000",
        "--out",
        four.to_str().unwrap(),
    ]);
    assert!(
        started.elapsed().as_secs_f64() < 1.0,
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
    carried_to_a_million_keys(out_s, dir.path());
}

/// Wherever the answer changes between two rates of `d`'s sweep, a flip of
/// the rate lies between them, from the one answer to the other (and none
/// where it holds).
fn flips_follow_the_rates(d: &Value) {
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

/// Runs a study file whose `[decide]` is `table` (TOML lines); its JSON.
fn decide_study(table: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.toml");
    std::fs::write(&file, format!("name = \"d\"\n[decide]\n{table}")).unwrap();
    let out = dir.path().join("out");
    let o = common::kvlab()
        .args([
            "study",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    common::succeeds(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("a decision ([decide]), as `kvlab decide") && stdout.contains("DECISION: "),
        "{stdout}"
    );
    assert!(out.join("report.html").exists());
    serde_json::from_str(&std::fs::read_to_string(out.join("decision.json")).unwrap()).unwrap()
}

/// A study file's `[decide]` is `kvlab decide` with its keys as the flags.
#[test]
fn a_goal_nothing_meets_says_so_with_each_rows_reason() {
    let _alone = alone();
    let d = decide_study(
        "rps = 1000\np99_ms = 0.001\nkeys = 20000\nvalue_size = 1024\nratio = \"1:19\"\n\
         key_distribution = \"zipf\"\nquick = true\nduration = 1\nconnections = 16\n",
    );
    assert_eq!(d["load"]["keys"], 20000, "{}", d["load"]);
    assert_eq!(d["load"]["p99_ms"], 0.001, "{}", d["load"]);
    every_row(&d);
    assert_eq!(answer(&d), "cannot-meet", "{}", d["decision"]);
    for r in d["architectures"].as_array().unwrap() {
        assert!(!r["within_goal"].as_bool().unwrap(), "{r}");
    }
}

/// A trace of `lines` requests over `keys` keys of Zipf popularity 0.99,
/// one write in twenty, values of 2 KiB, in the cache-trace CSV format.
fn zipf_trace(path: &std::path::Path, keys: usize, lines: usize) {
    let weights: Vec<f64> = (1..=keys).map(|r| 1.0 / (r as f64).powf(0.99)).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(keys);
    let mut acc = 0.0;
    for w in weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut uniform = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut out = String::with_capacity(lines * 32);
    for i in 0..lines {
        let u = uniform();
        let k = cdf.partition_point(|&c| c < u);
        let op = if uniform() < 0.05 { "set" } else { "get" };
        out.push_str(&format!("{},user:{k},9,2048,1,{op},0\n", i / 5000));
    }
    std::fs::write(path, out).unwrap();
}

/// The load of `d` came from [`zipf_trace`]'s trace at `path` (its keys,
/// mix, sizes and skew), its curve was simulated for the cache's
/// `allkeys-lfu`, and each point measured at a memory limit is within 3
/// points of hit ratio of it at the share of keys the cache held, where the
/// trace's exact LRU curve stands further off (2.4 points at 8%).
fn trace_taken_and_held_against(d: &Value, path: &std::path::Path) {
    let t = &d["load"]["trace"];
    let distinct = t["distinct_keys"].as_u64().unwrap();
    assert!((15_000..=20_000).contains(&distinct), "{t}");
    assert_eq!(d["load"]["keys"].as_u64(), Some(distinct));
    let writes = d["load"]["write_share"].as_f64().unwrap();
    assert!((writes - 0.05).abs() < 0.01, "{}", d["load"]);
    assert_eq!(d["load"]["value_size"], 2048, "{}", d["load"]);
    let theta = t["zipf_theta"].as_f64().unwrap();
    assert!((theta - 0.99).abs() < 0.08, "{t}");
    assert_eq!(t["sample_rate"], 1.0);
    let policy = &d["load"]["eviction"]["policy"];
    assert_eq!(policy["policy"], "allkeys-lfu", "{}", d["load"]);
    assert!(
        t["policy"].as_str().unwrap().starts_with("allkeys-lfu"),
        "{t}"
    );
    let said = d["extrapolations"].as_array().unwrap();
    assert!(
        said.iter()
            .any(|e| e.as_str().unwrap().starts_with("Eviction: allkeys-lfu")),
        "{said:?}"
    );
    let curve = d["miss_ratio_curve"].as_array().unwrap();
    let traced: Vec<f64> = curve
        .iter()
        .filter(|p| p["source"] == "trace")
        .map(|p| p["hit_ratio"].as_f64().unwrap())
        .collect();
    assert!(traced.len() >= 5, "{curve:?}");
    assert!(traced.windows(2).all(|w| w[1] >= w[0]), "{traced:?}");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let lru = kvlab::workload::trace::mrc::curve(path, 400_000, &stop).unwrap();
    let measured: Vec<&Value> = curve.iter().filter(|p| p["source"] == "measured").collect();
    assert!(measured.len() >= 3, "{curve:?}");
    // Redis's LFU is approximate (sampled, with decaying log counters) and a
    // quick decision's settled runs are short: the measured hit ratios lie
    // between the exact LFU and LRU curves. What holds: each measured point
    // is within 3 points of the LFU curve drawn, that curve is not the LRU
    // curve, and the measured points are no farther from it than from LRU's
    // beyond a point of noise summed over the points (a CI run saw 0.021
    // against 0.026 where the two curves met).
    let (mut off_lfu, mut off_lru, mut apart) = (0.0f64, 0.0f64, 0.0f64);
    for p in &measured[..measured.len() - 1] {
        let (hit, trace, share) = (
            p["hit_ratio"].as_f64().unwrap(),
            p["trace_hit_ratio"].as_f64().unwrap(),
            p["share_of_keys"].as_f64().unwrap(),
        );
        let lru = lru.hit_ratio((share * distinct as f64) as u64);
        assert!((hit - trace).abs() <= 0.03, "{p}; LRU's {lru}");
        off_lfu += (hit - trace).abs();
        off_lru += (hit - lru).abs();
        apart += (trace - lru).abs();
    }
    eprintln!(
        "measured off LFU's curve {off_lfu:.4}, off LRU's {off_lru:.4}; the curves {apart:.4} apart"
    );
    assert!(apart > 0.02, "the LFU curve drawn is LRU's: {apart} apart");
    assert!(
        off_lfu < off_lru + 0.01,
        "LFU's curve {off_lfu} off, LRU's {off_lru}"
    );
}

#[test]
fn a_trace_that_is_not_one_is_refused_in_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "this is not a trace\n").unwrap();
    for (path, says) in [
        (bad.to_str().unwrap(), "no reads kvlab can send"),
        ("/nonexistent/trace.csv", "No such file"),
    ] {
        let o = common::kvlab()
            .args(["decide", "--rps", "100", "--p99-ms", "5", "--trace", path])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(err.contains("--trace") && err.contains(says), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// A `[decide]` that is not one is refused in a line naming the key and its
/// line; the shipped `studies/decide.toml` reads as the command it stands for.
#[test]
fn a_bad_decide_section_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    for (body, says) in [
        (
            "rsp = 20000\np99_ms = 5\n",
            "d.toml:3: [decide] has no key rsp",
        ),
        ("rps = 20000\n", "d.toml:2: [decide] p99_ms: missing"),
        (
            "rps = 20000\np99_ms = 5\nquick = 3\n",
            "d.toml:5: [decide] quick is a switch",
        ),
        (
            "rps = 20000\np99_ms = 5\nrate = 100\n",
            "d.toml:5: [decide] rate:",
        ),
        (
            "rps = 20000\np99_ms = 5\n[[target]]\ntarget = \"redis\"\n",
            "d.toml:5: a [decide] study measures its own runs, so [[target]]",
        ),
    ] {
        let file = dir.path().join("d.toml");
        std::fs::write(&file, format!("name = \"d\"\n[decide]\n{body}")).unwrap();
        let o = common::kvlab()
            .args(["study", file.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{body}");
        assert!(err.contains(says), "{body}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/studies/decide.toml");
    let o = common::kvlab()
        .args(["study", shipped, "--dry-run"])
        .output()
        .unwrap();
    common::succeeds(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("--rps 20000")
            && stdout.contains("--p99-ms 5")
            && stdout.contains("--quick"),
        "{stdout}"
    );
}

#[test]
fn servers_given_by_url_are_decided_with_their_stated_cores_never_resized_and_their_loss_emulated()
{
    let _alone = alone();
    let (db, db_url) = common::serve("mariadb");
    let (cache, cache_url) = common::serve("memcached");
    let d = decide(&[
        "--target",
        &db_url,
        "--cache",
        &cache_url,
        "--target-cores",
        "2",
        "--rps",
        "3000",
        "--p99-ms",
        "20",
    ]);
    common::stop(db);
    common::stop(cache);
    let a = answer(&d);
    assert!(a == "keep-cache" || a == "drop-cache", "{}", d["decision"]);
    costs_recompute(&d);
    let rows = d["architectures"].as_array().unwrap();
    let database = &rows[0];
    assert!(
        database["measured_from"]
            .as_str()
            .unwrap()
            .contains("the cores stated for it"),
        "{database}"
    );
    assert!(database["server_cores"].as_f64().is_some(), "{database}");
    // One measured size, the cache's own; the rest the model's, said so.
    let curve = d["miss_ratio_curve"].as_array().unwrap();
    let measured = curve.iter().filter(|p| p["source"] == "measured").count();
    assert_eq!(measured, 1, "{curve:?}");
    assert!(
        curve
            .iter()
            .all(|p| p["source"] == "measured" || p["source"] == "model")
    );
    // The cache loss: kvlab's own keys deleted, said as such.
    let loss = &d["cache_loss"];
    assert_eq!(loss["emulated"], true, "{loss}");
    assert!(loss["event_error"].is_null(), "{loss}");
    let aside = rows.iter().find(|r| r["name"] == "cache-aside").unwrap();
    assert!(
        aside["on_cache_loss"]
            .as_str()
            .unwrap()
            .contains("emulated"),
        "{aside}"
    );
    // A memory kvlab could not read is not known, never 0.
    let cache_row = rows.iter().find(|r| r["name"] == "cache").unwrap();
    assert_ne!(cache_row["memory_bytes"].as_u64(), Some(0), "{cache_row}");
}

/// A `[decide]` study file needs no `name`: it is named by its file, whose
/// results then go to `results/<that name>`.
#[test]
fn a_decide_study_without_a_name_is_named_by_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("my-decision.toml");
    std::fs::write(&file, "[decide]\nrps = 20000\np99_ms = 5\nquick = true\n").unwrap();
    let o = common::kvlab()
        .args(["study", file.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    common::succeeds(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("kvlab study my-decision: a decision ([decide])")
            && stdout.contains("results/my-decision"),
        "{stdout}"
    );
}

/// Ctrl-C in the database's capacity search: exit 130 and one line saying
/// so, naming the step cut short and that none finished.
#[test]
fn ctrl_c_says_which_step_it_cut_short_and_exits_130() {
    // Its search drives a database at capacity: never beside another
    // decision's runs (a suite run saw a cache-aside run beside it miss even
    // a loose goal).
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let (said, code, err) = common::interrupted_when(
        &[
            "decide",
            "--quick",
            "--duration",
            "1",
            "--rps",
            "1000",
            "--p99-ms",
            "5",
            "--keys",
            "20000",
            "--out",
            dir.path().to_str().unwrap(),
        ],
        // The search's first step said: it is under way.
        |line| line.contains(" req/s: p99 "),
    );
    assert_eq!(code, Some(130), "{said}{err}");
    let last = err.trim_end().lines().last().unwrap_or("");
    assert!(last.starts_with("Error: stopped (Ctrl-C)"), "{said}{err}");
    // A blocking read Ctrl-C interrupts (EINTR) can end the step with its
    // own error first; a step that ends names itself.
    assert!(
        !last.contains(" during the runs of ")
            || last.starts_with(
                "Error: stopped (Ctrl-C) during the runs of the database alone; finished: none; no decision"
            ),
        "{said}{err}"
    );
}
