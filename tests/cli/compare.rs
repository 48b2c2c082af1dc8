//! `kvlab compare` is symmetric: for every pair of results in the test set,
//! `compare A B` and `compare B A` give mirrored verdicts point by point
//! (better ↔ worse, below threshold and within noise unchanged), in the
//! library and at the command line (where `--fail-on-worse` exits 3 exactly
//! when a figure is worse, else 4 when repetitions vary past the noise
//! limit: it cannot judge).
//!
//! The test set: every JSON file under tests/fixtures that parses as a run's
//! or a study's result, and variants of each (faster, slower, a little apart,
//! another architecture, repeated points) so that every verdict occurs.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use common::kvlab;
use kvlab::report::compare::{Comparison, Results, Rules, compare};
use kvlab::results::RunResult;
use kvlab::results::study::StudyResult;

/// Every `.json` file under `dir`, recursively.
fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

/// Whether `v` is a run's result (else a study's), or neither.
fn kind(v: &Value) -> Option<bool> {
    if serde_json::from_value::<RunResult>(v.clone()).is_ok() {
        Some(true)
    } else if serde_json::from_value::<StudyResult>(v.clone()).is_ok() {
        Some(false)
    } else {
        None
    }
}

/// Multiplies the number `v[key]` by `k` (nothing if there is none).
fn mul(v: &mut Value, key: &str, k: f64) {
    if let Some(v) = v.get_mut(key)
        && let Some(x) = v.as_f64()
    {
        *v = json!(x * k);
    }
}

/// A run's result with its throughput × `tput` (per second too), latencies
/// × `lat` and CPU per request × `cpu`.
fn scaled(r: &Value, tput: f64, lat: f64, cpu: f64) -> Value {
    let mut r = r.clone();
    for s in r["timeline"].as_array_mut().into_iter().flatten() {
        let q = s["requests"].as_u64().unwrap_or(0);
        s["requests"] = json!((q as f64 * tput).round() as u64);
        for k in ["p50_us", "p99_us", "p999_us"] {
            mul(s, k, lat);
        }
    }
    mul(&mut r, "throughput_rps", tput);
    for k in ["p50", "p99", "p999"] {
        mul(&mut r["latency_us"], k, lat);
    }
    for k in ["client_cpu_us_per_request", "server_cpu_us_per_request"] {
        mul(&mut r, k, cpu);
    }
    r
}

/// A run's result stretched to 10 seconds: its seconds repeated, jittered.
fn longer(r: &Value) -> Value {
    let mut r = r.clone();
    let seconds = r["timeline"].as_array().cloned().unwrap_or_default();
    if seconds.is_empty() {
        return r;
    }
    let timeline: Vec<Value> = (0..10)
        .map(|i| {
            let mut s = seconds[i % seconds.len()].clone();
            s["second"] = json!(i);
            let q = s["requests"].as_u64().unwrap_or(0) as f64;
            s["requests"] = json!((q * (1.0 + 0.01 * ((i * 7) % 5) as f64)) as u64);
            s
        })
        .collect();
    r["timeline"] = json!(timeline);
    r["duration_s"] = json!(10.0);
    r
}

/// A run's variants: itself, faster, slower, a little faster, with no server
/// CPU, and another architecture (cache-aside in front of it).
fn run_variants(r: &Value) -> Vec<Value> {
    let long = longer(r);
    let mut zero_cpu = r.clone();
    zero_cpu["server_cpu_us_per_request"] = json!(0.0);
    let mut aside = scaled(r, 1.2, 0.7, 1.0);
    aside["cache_aside"] = json!({
        "cache": r["target"], "write_policy": "invalidate", "ttl_s": 0,
        "cache_hits": 1, "cache_misses": 1, "hit_ratio": 0.5,
        "db_reads_saved_per_s": 1.0, "db_reads_per_s": 1.0, "legs": {},
    });
    aside["target"]["product"] = json!("postgres");
    vec![
        r.clone(),
        scaled(r, 1.509, 1.6, 0.5),
        scaled(r, 0.663, 1.2, 2.5),
        scaled(&long, 1.0, 1.0, 1.0),
        scaled(&long, 1.509, 1.2, 1.0),
        scaled(&long, 1.1, 0.9, 1.0),
        zero_cpu,
        aside,
    ]
}

/// A study's variants: itself, its points repeated (a second repetition a
/// little apart), that faster, a little slower, and one point fewer.
fn study_variants(s: &Value) -> Vec<Value> {
    let each = |v: &Value, f: &dyn Fn(&Value) -> Value| {
        let mut v = v.clone();
        for p in v["points"].as_array_mut().into_iter().flatten() {
            if !p["result"].is_null() {
                p["result"] = f(&p["result"]);
            }
        }
        v
    };
    let mut repeated = s.clone();
    let points = repeated["points"].as_array().cloned().unwrap_or_default();
    for p in points {
        let mut again = p.clone();
        again["repetition"] = json!(2);
        if !again["result"].is_null() {
            again["result"] = scaled(&p["result"], 1.02, 0.98, 1.03);
        }
        repeated["points"].as_array_mut().unwrap().push(again);
    }
    let mut fewer = repeated.clone();
    fewer["points"]
        .as_array_mut()
        .unwrap()
        .retain(|p| p["index"] != 0);
    vec![
        s.clone(),
        each(s, &|r| scaled(r, 0.9, 1.1, 1.0)),
        repeated.clone(),
        each(&repeated, &|r| scaled(r, 1.509, 0.6, 0.9)),
        each(&repeated, &|r| scaled(r, 0.97, 1.03, 1.0)),
        fewer,
    ]
}

/// The test set: (name, JSON, whether a run's result).
fn test_set() -> Vec<(String, Value, bool)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = Vec::new();
    json_files(&root, &mut files);
    let mut set = Vec::new();
    for f in files {
        let Ok(v) = serde_json::from_slice::<Value>(&std::fs::read(&f).unwrap()) else {
            continue;
        };
        let Some(run) = kind(&v) else { continue };
        let variants = match run {
            true => run_variants(&v),
            false => study_variants(&v),
        };
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        for (i, v) in variants.into_iter().enumerate() {
            assert_eq!(kind(&v), Some(run), "{stem} variant {i} does not parse");
            set.push((format!("{stem}-{i}"), v, run));
        }
    }
    assert!(set.iter().any(|s| s.2) && set.iter().any(|s| !s.2));
    set
}

fn results(v: &Value, run: bool) -> Results {
    match run {
        true => Results::Run(Box::new(serde_json::from_value(v.clone()).unwrap())),
        false => Results::Study(Box::new(serde_json::from_value(v.clone()).unwrap())),
    }
}

/// A verdict's name with A and B swapped.
fn mirrored(name: &str) -> &str {
    match name {
        "better" => "worse",
        "worse" => "better",
        other => other,
    }
}

/// Asserts that `ba` mirrors `ab` point by point; the verdicts' names of `ab`.
fn assert_mirrored(ab: &Comparison, ba: &Comparison, runs: bool, what: &str) -> Vec<String> {
    assert_eq!(ab.points.len(), ba.points.len(), "{what}");
    assert_eq!(ab.unmatched.len(), ba.unmatched.len(), "{what}");
    let mut seen = Vec::new();
    for (i, p) in ab.points.iter().enumerate() {
        // Two runs are one point (labelled `a → b` one way, `b → a` back);
        // a study's points keep their labels.
        let q = match runs {
            true => &ba.points[i],
            false => ba.points.iter().find(|q| q.label == p.label).unwrap(),
        };
        let names = |p: &kvlab::report::compare::PointCmp| {
            p.figures.iter().map(|f| f.name).collect::<Vec<_>>()
        };
        assert_eq!(names(p), names(q), "{what}: {}", p.label);
        for (f, g) in p.figures.iter().zip(&q.figures) {
            assert_eq!(
                f.verdict.name(),
                mirrored(g.verdict.name()),
                "{what}: {} {}: A→B {:+.1}% ({}) but B→A {:+.1}% ({})",
                p.label,
                f.name,
                f.change_pct,
                f.evidence,
                g.change_pct,
                g.evidence
            );
            assert!((f.a, f.b) == (g.b, g.a) || f.a.is_nan() || f.b.is_nan());
            seen.push(f.verdict.name().to_string());
        }
    }
    seen
}

#[test]
fn every_pair_of_results_compares_the_same_both_ways() {
    let set = test_set();
    let rules = Rules::default();
    let mut seen = std::collections::BTreeSet::new();
    for (an, av, ar) in &set {
        for (bn, bv, br) in &set {
            if ar != br {
                continue;
            }
            let (a, b) = (results(av, *ar), results(bv, *br));
            let ab = compare(&a, an, &b, bn, rules);
            let ba = compare(&b, bn, &a, an, rules);
            seen.extend(assert_mirrored(&ab, &ba, *ar, &format!("{an} vs {bn}")));
        }
    }
    // The set exercises every verdict.
    for v in ["better", "worse", "below threshold", "within noise"] {
        assert!(seen.contains(v), "no figure {v}: {seen:?}");
    }
}

/// `N figures worse, M better` of a headline.
fn worse_better(text: &str) -> (u32, u32) {
    let head = text.lines().next().unwrap_or("");
    let n = |s: &str| s.trim().parse::<u32>().unwrap_or(u32::MAX);
    let (_, rest) = head.split_once(": ").unwrap_or(("", head));
    let (worse, rest) = rest.split_once(" figures worse, ").unwrap_or(("", ""));
    let (better, _) = rest.split_once(" better").unwrap_or(("", ""));
    (n(worse), n(better))
}

#[test]
fn the_command_line_mirrors_its_verdicts_and_gates_only_on_worse() {
    let dir = tempfile::tempdir().unwrap();
    let set: Vec<(PathBuf, bool)> = test_set()
        .into_iter()
        .map(|(name, v, run)| {
            let p = dir.path().join(format!("{name}.json"));
            std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
            (p, run)
        })
        .collect();
    let cmp = |a: &Path, b: &Path| {
        let out = kvlab()
            .arg("compare")
            .arg(a)
            .arg(b)
            .arg("--fail-on-worse")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), worse_better(&text), text)
    };
    for (i, (a, ar)) in set.iter().enumerate() {
        for (b, br) in &set[i..] {
            if ar != br {
                continue;
            }
            let (code_ab, (w_ab, b_ab), text_ab) = cmp(a, b);
            let (code_ba, (w_ba, b_ba), text_ba) = cmp(b, a);
            let both = format!("{text_ab}\n---\n{text_ba}");
            assert!(w_ab != u32::MAX && b_ab != u32::MAX, "{both}");
            assert_eq!((w_ab, b_ab), (b_ba, w_ba), "{both}");
            for (code, worse, text) in [(code_ab, w_ab, &text_ab), (code_ba, w_ba, &text_ba)] {
                let want = match (worse, text.contains(": unstable: ")) {
                    (1.., _) => 3,
                    (0, true) => 4,
                    (0, false) => 0,
                };
                assert_eq!(code, Some(want), "{both}");
            }
        }
    }
}

/// A study whose points are repeated with throughput and latency `spread`
/// apart between their two repetitions.
fn repeated_apart(spread: f64) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/study.json");
    let mut s: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    let points = s["points"].as_array().cloned().unwrap_or_default();
    for p in points {
        let mut again = p.clone();
        again["repetition"] = json!(2);
        if !again["result"].is_null() {
            again["result"] = scaled(&p["result"], spread, spread, 1.0);
        }
        s["points"].as_array_mut().unwrap().push(again);
    }
    s
}

#[test]
fn the_gate_cannot_pass_what_it_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, v: &Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
        p
    };
    // Repetitions 1.6x apart vary far past the 10% noise limit.
    let (noisy, steady) = (
        write("noisy.json", &repeated_apart(1.6)),
        write("steady.json", &repeated_apart(1.02)),
    );
    let gate = |a: &Path, b: &Path| {
        let out = kvlab()
            .arg("compare")
            .arg(a)
            .arg(b)
            .arg("--fail-on-worse")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), err)
    };
    for (a, b) in [(&noisy, &noisy), (&noisy, &steady), (&steady, &noisy)] {
        let (code, err) = gate(a, b);
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("Error:")).collect();
        assert_eq!(code, Some(4), "{err}");
        assert!(
            lines.len() == 1
                && lines[0].starts_with("Error: --fail-on-worse: cannot judge ")
                && lines[0].contains(": unstable, ")
                && lines[0].contains("varies"),
            "{err}"
        );
    }
    // Steady repetitions are judged; without the gate, unstable ones exit 0.
    assert_eq!(gate(&steady, &steady).0, Some(0));
    let out = kvlab()
        .arg("compare")
        .args([&noisy, &noisy])
        .output()
        .unwrap();
    assert!(out.status.success());
}
