//! What the user reads is true: a capacity search that fails on kvlab's side
//! says so, reports merge only what belongs together, a study whose points all
//! failed exits non-zero, and help texts list what the commands accept.

mod common;

use common::kvlab;

#[test]
fn a_capacity_search_limited_by_kvlab_says_so() {
    // One connection at pipeline 1: above its closed-loop rate requests can
    // only queue in kvlab, while the server answers each at once.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cap.json");
    let out = kvlab()
        .args([
            "capacity",
            "--target",
            "redis",
            "--connections",
            "1",
            "--threads",
            "1",
        ])
        .args([
            "--p99-ms",
            "1",
            "--duration",
            "1",
            "--warmup",
            "0.5",
            "--steps",
            "4",
        ])
        .args(["--keys", "10000", "--json"])
        .arg(&json)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: kvlab::results::capacity::Capacity =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let limited: Vec<_> = c.steps.iter().filter(|s| s.client_limited).collect();
    assert!(!limited.is_empty(), "{text}");
    assert!(limited.iter().all(|s| !s.passed), "{text}");
    assert!(text.contains("client-limited"), "{text}");
    assert!(text.contains("limited by kvlab, not the server"), "{text}");
}

#[test]
fn help_lists_only_what_the_command_accepts() {
    let help = |args: &[&str]| {
        let out = kvlab().args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let cap = help(&["capacity", "--help"]);
    for refused in ["--rate", "--shard", "--start-at"] {
        assert!(!cap.contains(refused), "capacity lists {refused}: {cap}");
    }
    let run = help(&["run", "--help"]);
    let cache = run.lines().find(|l| l.contains("--cache <")).unwrap();
    assert!(!cache.contains("cluster"), "{cache}");
    assert!(cache.contains("redis | valkey | memcached"), "{cache}");
}
