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

/// The fixture study results, as a JSON value to vary.
fn fixture() -> serde_json::Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/study.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// Runs kvlab with `args`; its exit success, stdout and stderr.
fn kv(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = kvlab()
        .args(args)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn report_refuses_results_that_do_not_belong_together() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, v: &serde_json::Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
        p
    };
    let a = write("a.json", &fixture());
    let copy = write("copy.json", &fixture());
    let mut other = fixture();
    other["study"]["name"] = "other".into();
    other["started_unix_s"] = 1.into();
    let b = write("b.json", &other);
    let mut keys = fixture();
    keys["study"]["workload"]["keys"] = 12345.into();
    keys["started_unix_s"] = 2.into();
    let k = write("k.json", &keys);
    let o = |p: &std::path::Path| p.as_os_str().to_owned();
    let report = std::ffi::OsString::from("report");
    for (files, said) in [
        (vec![o(&a), o(&b)], "study 'fixture' vs 'other'"),
        (vec![o(&a), o(&k)], "a different [workload]"),
        (vec![o(&a), o(&a)], "is given twice"),
        (vec![o(&a), o(&copy)], "are the same results"),
    ] {
        let mut args = vec![report.clone()];
        args.extend(files);
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_os_str()).collect();
        let (ok, _, err) = kv(&args);
        assert!(!ok, "{args:?} should be refused");
        assert!(err.contains(said), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // Asked for, they are reported separately.
    let out = dir.path().join("sep");
    let (ok, text, err) = kv(&[
        "report".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "--separate".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert!(ok, "{text}{err}");
    assert!(out.join("a/report.html").is_file() && out.join("b/report.md").is_file());
}

#[test]
fn a_study_whose_points_all_fail_exits_non_zero_and_says_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again: nothing listens there
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dead.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"dead\"\nduration = 1\nwarmup = 0\n[workload]\nkeys = 100\n[load]\nconnections = 2\n[[target]]\ntarget = \"redis://127.0.0.1:{port}\"\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let (ok, text, err) = kv(&[
        "study".as_ref(),
        file.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert!(!ok, "{text}");
    assert!(err.contains("every point of study 'dead' failed"), "{err}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Every point of this study failed"), "{md}");
    assert!(!md.contains("Read-only point lookups"), "{md}");
}

#[test]
fn study_file_errors_point_at_the_line_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let base = "name = \"lines\"\nduration = 1\n\n[workload]\nkeys = 100\nratio = \"1:4\"\n\n[load]\nconnections = 10\n\n[sweep]\nconnections = [10, 20]\n\n[[target]]\ntarget = \"redis\"\n\n[[target]]\ntarget = \"valkey\"\n";
    let goal = |ms: &str| format!("{base}\n[goal]\np99_ms = {ms}\n");
    let cases = [
        (
            base.replace("[10, 20]", "[10, 0]"),
            ":12: sweep.connections",
        ),
        (
            base.replace("\"valkey\"", "\"redis\""),
            ":18: two targets are named 'redis'",
        ),
        (
            base.replace("\"1:4\"", "\"1:0:4\""),
            ":6: workload.ratio: '1:0:4' has 3 weights",
        ),
        (goal("0"), ":21: goal.p99_ms = 0"),
        (goal("-5"), ":21: goal.p99_ms = -5"),
    ];
    for (text, said) in cases {
        let file = dir.path().join("s.toml");
        std::fs::write(&file, &text).unwrap();
        let (ok, _, err) = kv(&["study".as_ref(), file.as_os_str(), "--dry-run".as_ref()]);
        assert!(!ok, "{text}");
        assert!(err.contains(said), "{said}: {err}");
    }
}

#[test]
fn errors_name_the_flag_the_user_gave() {
    let (ok, _, err) = kv(&["run", "--target", "tarantool", "--tls"].map(std::ffi::OsStr::new));
    assert!(!ok);
    assert!(
        err.starts_with("Error: --tls:") && !err.contains("server-opt"),
        "{err}"
    );
    let (ok, _, err) = kv(&[
        "run",
        "--target",
        "postgres",
        "--cache",
        "redis",
        "--cache-opt",
        "bogus=1",
        "--duration",
        "1",
    ]
    .map(std::ffi::OsStr::new));
    assert!(!ok);
    assert!(
        err.contains("--cache-opt") && !err.contains("--server-opt"),
        "{err}"
    );
}

#[test]
fn json_dash_writes_the_result_to_standard_output() {
    let (ok, out, err) = kv(&[
        "run",
        "--target",
        "redis",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--keys",
        "1000",
        "--json",
        "-",
    ]
    .map(std::ffi::OsStr::new));
    assert!(ok, "{err}");
    let r: kvlab::results::RunResult = serde_json::from_str(&out).expect("stdout is the JSON");
    assert!(r.valid && r.requests > 0);
    assert!(
        err.contains("throughput"),
        "the summary goes to stderr: {err}"
    );
}
