//! `kvlab decide` measured against real managed servers (PostgreSQL,
//! Redis, and servers given by URL): a decision on a trace's load cut short
//! and resumed drops the cache its database carries easily, its curves
//! agree with the trace's, a cache loss's database reads agree with the
//! database's own counters; a goal nothing meets says so with each row's
//! reason; servers given by URL keep their stated cores; Ctrl-C names the
//! step it cut short. Short runs
//! (`--duration 1`) on a small copy: the decisions, not the figures, are
//! what is tested. A decision asked again from saved measurements is
//! `asked_again`'s.

use crate::common;
use serde_json::Value;

use super::rows::{
    answer, costs_recompute, every_row, first_difference, flips_follow_the_rates, json_at,
    without_servers,
};

/// Runs `kvlab decide` with `args` on a small quick load; its JSON, or
/// `None` where a step did not hold on this host (said).
fn decide(args: &[&str]) -> Option<Value> {
    let mut all = common::SMALL_DECISION.to_vec();
    all.extend(args);
    common::decide_quick(&all).map(|d| d.0)
}

/// A decision on a trace's load (its keys, mix, sizes and skew; the cache
/// kvlab starts evicts by LFU, and the curves are drawn for it), cut short
/// by Ctrl-C after its first step and again while resuming, resumes reusing
/// that step. The load the database carries easily drops the cache; the
/// measured miss-ratio curve rises with memory and agrees with the trace's;
/// a cache loss's database reads agree with the database's own counters;
/// `--from` recomputes the same decision without starting a server (asked
/// at other rates, goals and sizes in `asked_again`, on a saved decision).
/// Where a step does not hold on this host even when resumed once more,
/// that outcome (exit 5, said) is what is asserted.
#[test]
fn a_cut_decision_on_a_trace_resumes_drops_the_cache_and_the_curves_agree() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("zipf.csv");
    zipf_trace(&trace, 20_000, 400_000);
    let out = dir.path().join("d");
    let out_s = out.to_str().unwrap();
    let mut flags = common::QUICK_DECIDE.to_vec();
    flags.extend(["--trace", trace.to_str().unwrap(), "--rps", "200"]);
    flags.extend([
        "--p99-ms",
        "50",
        "--cache-opt",
        "maxmemory-policy=allkeys-lfu",
    ]);
    let cache_alone = |line: &str| line.starts_with("kvlab decide: the cache alone");
    let mut cut = flags.clone();
    cut.extend(["--out", out_s]);
    let (said, code, err) = common::interrupted_when(&cut, cache_alone);
    let cut_held = code != Some(5);
    if cut_held {
        assert_eq!(code, Some(130), "{said}{err}");
        // One line naming the step cut short and the one finished (a
        // blocking read Ctrl-C interrupts, EINTR, can end the step with its
        // own error first; a step that ends names itself).
        let last = err.trim_end().lines().last().unwrap_or("");
        assert!(last.starts_with("Error: stopped (Ctrl-C)"), "{said}{err}");
        assert!(
            !last.contains(" during the runs of ")
                || last.starts_with(
                    "Error: stopped (Ctrl-C) during the runs of the cache alone; finished: the database alone; no decision"
                ),
            "{said}{err}"
        );
        assert!(err.contains("--resume"), "{err}");
        assert!(out.join("steps/01-database.json").exists(), "{said}{err}");
        // Cut again while resuming, before anything new finished: the
        // manifest still lists the step finished before.
        let mut again = flags.clone();
        again.extend(["--resume", out_s]);
        let (said, code, err) = common::interrupted_when(&again, cache_alone);
        assert_eq!(code, Some(130), "{said}{err}");
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(
            manifest["finished"],
            serde_json::json!(["database"]),
            "{said}{err}"
        );
    } else {
        common::said_not_measured(&err);
    }
    // Resumed: the database's search reused, the rest measured.
    let Some(said) = common::resumed(&flags, out_s) else {
        return;
    };
    let stdout = &said[0];
    if cut_held {
        assert!(
            stdout.contains("kvlab decide: the database alone: reused"),
            "{stdout}"
        );
        assert!(!stdout.contains("the cache alone: reused"), "{stdout}");
    }
    assert!(out.join("report.html").exists());
    let d = json_at(&out);
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
    let measured = d;
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
}

/// Runs a study file whose `[decide]` is `table` (TOML lines); its JSON,
/// or `None` where a step did not hold on this host (exit 5, said).
fn decide_study(table: &str) -> Option<Value> {
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
    if o.status.code() == Some(5) {
        common::said_not_measured(&String::from_utf8_lossy(&o.stderr));
        return None;
    }
    common::succeeds(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("a decision ([decide]), as `kvlab decide") && stdout.contains("DECISION: "),
        "{stdout}"
    );
    assert!(out.join("report.html").exists());
    serde_json::from_str(&std::fs::read_to_string(out.join("decision.json")).unwrap()).ok()
}

/// A study file's `[decide]` is `kvlab decide` with its keys as the flags.
#[test]
fn a_goal_nothing_meets_says_so_with_each_rows_reason() {
    let _alone = common::alone();
    let Some(d) = decide_study(
        "rps = 1000\np99_ms = 0.001\nkeys = 20000\nvalue_size = 1024\nratio = \"1:19\"\n\
         key_distribution = \"zipf\"\nquick = true\nduration = 1\nconnections = 16\n",
    ) else {
        return;
    };
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
/// points of hit ratio of it at the share of keys the cache held; the curve
/// drawn stands more than 2 points (summed) from the trace's exact LRU curve.
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
    // between the exact LFU and LRU curves, nearer one or the other from run
    // to run (CI saw 0.021 off LFU against 0.026 off LRU, and later 0.035
    // against 0.022, the curves 0.032 apart). What kvlab claims, and what is
    // asserted: each measured point is within 3 points of the LFU curve
    // drawn, and that curve is not the LRU curve. Where the decision says
    // the host was busy while its curve was measured (two CPU hogs beside
    // the suite saw 73.7% against 66.8% drawn at a tenth of the keys), the
    // points measured there are not held to it.
    let busy = d["host_busy"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|b| b.as_str().unwrap().contains("the miss-ratio curve"));
    let (mut off_lfu, mut off_lru, mut apart) = (0.0f64, 0.0f64, 0.0f64);
    for p in &measured[..measured.len() - 1] {
        let (hit, trace, share) = (
            p["hit_ratio"].as_f64().unwrap(),
            p["trace_hit_ratio"].as_f64().unwrap(),
            p["share_of_keys"].as_f64().unwrap(),
        );
        let lru = lru.hit_ratio((share * distinct as f64) as u64);
        assert!(busy || (hit - trace).abs() <= 0.03, "{p}; LRU's {lru}");
        off_lfu += (hit - trace).abs();
        off_lru += (hit - lru).abs();
        apart += (trace - lru).abs();
    }
    eprintln!(
        "measured off LFU's curve {off_lfu:.4}, off LRU's {off_lru:.4}; the curves {apart:.4} apart"
    );
    assert!(apart > 0.02, "the LFU curve drawn is LRU's: {apart} apart");
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
    let _alone = common::alone();
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
    let Some(d) = d else {
        return;
    };
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
