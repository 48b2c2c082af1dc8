//! One figure, one value: every figure of a cache-aside point (and of a point
//! whose cache is killed mid-run) is the same in the study's progress line, the
//! run's summary, the report's verdict and table, and the JSON, against real
//! managed servers (PostgreSQL behind Redis); the run's server memory is every
//! server's, each named; `kvlab replay --help` shows no default it does not use.

use crate::common;

use common::kvlab;
use kvlab::results::RunResult;
use kvlab::results::aside::{HIT_RATIO_NAME, hit_ratio};
use kvlab::results::study::StudyResult;
use kvlab::results::usage::Role;

const STUDY: &str = r#"name = "figures"
duration = 3
warmup = 1
[goal]
p99_ms = 200
[workload]
keys = 20000
value_size = 1024
ratio = "1:19"
distribution = "zipf:0.99"
[load]
connections = 8
rate = 2000
[[target]]
name = "aside"
target = "postgres"
cache = "redis"
[[target]]
name = "killed"
target = "postgres"
cache = "redis"
events = ["1:kill-cache"]
"#;

/// The first percentage after `label` in `text`.
fn pct_after(text: &str, label: &str) -> f64 {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("no '{label}' in: {text}"));
    let rest = &text[at + label.len()..];
    let num: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    num.parse()
        .unwrap_or_else(|_| panic!("no number after '{label}' in: {text}"))
}

/// `shown` (rounded to `places` decimals, percent) is `ratio`.
fn same_pct(shown: f64, ratio: f64, places: i32, where_: &str) {
    let half = 0.5 * 10f64.powi(-places) + 1e-9;
    assert!(
        (shown - ratio * 100.0).abs() <= half,
        "{where_}: shows {shown}%, the JSON has {}%",
        ratio * 100.0
    );
}

#[test]
fn every_figure_of_a_cache_aside_point_is_one_value_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("figures.toml");
    std::fs::write(&study, STUDY).unwrap();
    let out_dir = dir.path().join("out");
    let out = kvlab()
        .arg("study")
        .arg(&study)
        .arg("--out")
        .arg(&out_dir)
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let progress = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{progress}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let s = StudyResult::read(&json).unwrap();
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert_eq!(s.points.len(), 2);
    for p in &s.points {
        let r: &RunResult = p.result.as_ref().unwrap();
        let a = r.cache_aside.as_ref().unwrap();
        // One definition: hits over every read, those around a dead cache too.
        // (JSON reads a float back within its last bit.)
        let one = hit_ratio(a.cache_hits, a.cache_misses, a.cache_bypassed).unwrap();
        assert!(
            (a.hit_ratio - one).abs() < 1e-12,
            "{} vs {one}",
            a.hit_ratio
        );
        assert_eq!(
            a.cache_hits + a.cache_misses + a.cache_bypassed,
            r.totals.gets
        );
        if p.target == "killed" {
            assert!(a.cache_bypassed > 0, "{a:?}");
        }
        // The progress line.
        let line = progress
            .lines()
            .find(|l| l.contains(&format!("] {}", p.target)))
            .unwrap_or_else(|| panic!("no progress line for {}: {progress}", p.target));
        same_pct(pct_after(line, HIT_RATIO_NAME), a.hit_ratio, 1, "progress");
        assert!(
            line.contains(&format!(
                "{:.0} req/s, p99 {:.0} µs",
                r.totals.throughput_rps, r.latency.latency_us.p99
            )),
            "{line}"
        );
        // The summary, which adds up.
        let sum = kvlab::report::summary::summary(r);
        same_pct(pct_after(&sum, HIT_RATIO_NAME), a.hit_ratio, 2, "summary");
        assert!(
            sum.contains(&format!(
                "({} hits, {} misses",
                a.cache_hits, a.cache_misses
            )),
            "{sum}"
        );
        if a.cache_bypassed > 0 {
            assert!(
                sum.contains(&format!(
                    "{} around the unreachable cache",
                    a.cache_bypassed
                )),
                "{sum}"
            );
            // Nothing restarted the cache.
            assert!(sum.contains("counted up to its kill") || a.cache_counters.is_none());
            assert!(!sum.contains("across its restart"), "{sum}");
        }
        // The report's verdict and table.
        let verdict = md
            .lines()
            .find(|l| l.contains(&format!("{} (redis", p.target)) && l.contains(HIT_RATIO_NAME))
            .unwrap_or_else(|| panic!("no verdict for {}: {md}", p.target));
        let at = verdict.find(&format!("{} (redis", p.target)).unwrap();
        same_pct(
            pct_after(&verdict[at..], HIT_RATIO_NAME),
            a.hit_ratio,
            1,
            "verdict",
        );
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {} | redis", p.target)))
            .unwrap_or_else(|| panic!("no table row for {}: {md}", p.target));
        assert!(
            row.contains(&format!("| {:.2}% |", a.hit_ratio * 100.0)),
            "{row} vs {}",
            a.hit_ratio
        );
        // Each server's memory and CPU, and their sums, in the JSON and the summary.
        let db = r
            .server
            .servers
            .iter()
            .find(|u| u.role == Role::Database)
            .unwrap();
        let cache = r
            .server
            .servers
            .iter()
            .find(|u| u.role == Role::Cache)
            .unwrap();
        assert_eq!(
            (db.product.as_str(), cache.product.as_str()),
            ("postgres", "redis")
        );
        let (Some(dk), Some(ck)) = (db.peak_rss_kb, cache.peak_rss_kb) else {
            panic!("both servers' memory: {:?}", r.server.servers);
        };
        assert_eq!(r.server.server_peak_rss_kb, Some(dk + ck));
        if let (Some(dc), Some(cc)) = (db.cpu_s, cache.cpu_s) {
            assert!((r.server.server_cpu_s.unwrap() - dc - cc).abs() < 1e-9);
        }
        if p.target == "aside" {
            // The cache held every key: its memory is at least its own count of
            // what it holds, and the run's total is at least that.
            let used = a.working_set.as_ref().unwrap().memory_used_bytes;
            assert!(ck * 1024 >= used, "cache RSS {ck} KiB < used {used} B");
        }
        assert!(
            sum.contains(&format!(
                "peak RSS {} MiB: the 2 servers together",
                kvlab::results::stats::num((dk + ck) as f64 / 1024.0)
            )),
            "{sum}"
        );
        assert!(sum.contains("    database postgres"), "{sum}");
        assert!(sum.contains("    cache    redis"), "{sum}");
    }
}

#[test]
fn replay_help_shows_no_default_a_replay_does_not_use() {
    let out = kvlab().args(["replay", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!help.contains("[default: 10]"), "{help}");
    assert!(!help.contains("[default: 2"), "{help}");
    assert!(help.contains("to the trace's end"), "{help}");
}

#[test]
fn a_closed_standard_output_ends_a_dry_run_without_a_panic() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvlab"))
        .args(["study", "cache-size", "--dry-run"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before kvlab writes (as `| head -1` does).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
}
