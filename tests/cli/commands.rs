//! The binary as a user meets it: bad input gives one clear line and a non-zero
//! exit, faults end quickly, results land in JSON without secrets, and no server
//! process is left behind.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{each_fails_in_one_line, fails, kvlab};

#[test]
fn bad_flags_name_the_flag_and_the_fix() {
    each_fails_in_one_line(&[
        ("run --ratio 1/2", "--ratio"),
        ("run --ratio 0:0", "--ratio"),
        ("run --keys 0", "--keys"),
        ("run --keys lots", "--keys"),
        ("run --value-size 0", "--value-size"),
        // A size without a weight beside weighted ones is refused, not
        // weighed 1.
        (
            "run --value-size 500:90,4000",
            "--value-size: '500:90,4000' gives some sizes a weight and not others; give every size a weight (500:90,4000:10) or none",
        ),
        (
            "decide --rps 100 --p99-ms 5 --target-cores 0",
            "--target-cores",
        ),
        (
            "decide --rps 100 --p99-ms 5 --app-instances 0",
            "--app-instances",
        ),
        (
            "decide --rps 100 --p99-ms 5 --price-machine-month -3",
            "--price-machine-month",
        ),
        // Prices and machines that cannot be: refused before any server
        // starts, never priced into a decision.
        (
            "decide --rps 100 --p99-ms 5 --price-core-hour -1",
            "--price-core-hour: -1 is not a price",
        ),
        (
            "decide --rps 100 --p99-ms 5 --price-gib-hour nan",
            "--price-gib-hour: NaN is not a price",
        ),
        (
            "decide --rps 100 --p99-ms 5 --price-core-hour 0 --price-gib-hour 0",
            "a machine that costs nothing",
        ),
        (
            "decide --rps 100 --p99-ms 5 --machine-cores 0",
            "--machine-cores",
        ),
        (
            "decide --rps 100 --p99-ms 5 --machine-gib -2",
            "--machine-gib",
        ),
        ("decide --rps 100 --p99-ms 5 --currency ''", "--currency"),
        // Latency goals that never bind (most likely swapped).
        (
            "decide --rps 100 --p99-ms 5 --p50-ms 10",
            "--p50-ms: 10 ms is above the p99 goal (5 ms)",
        ),
        (
            "capacity --p99-ms 5 --p999-ms 1",
            "--p999-ms: 1 ms is below the p99 goal (5 ms)",
        ),
        // A saved decision that is not there.
        (
            "decide --from /nonexistent",
            "--from: /nonexistent holds no saved decision",
        ),
        (
            "decide --resume /nonexistent --rps 100 --p99-ms 5",
            "--resume: /nonexistent holds no saved decision",
        ),
        ("decide --p99-ms 5", "--rps"),
        ("run --connections 0", "--connections"),
        ("run --io kqueue", "--io: unknown I/O interface 'kqueue'"),
        // Refused before any server starts.
        (
            "run --target redis --server-opt tls=on --io uring",
            "--io: io_uring does not carry TLS in kvlab",
        ),
        (
            "run --target rediss://127.0.0.1:1 --io uring",
            "--io: io_uring does not carry TLS in kvlab",
        ),
        ("run --pipeline 0", "--pipeline"),
        ("run --duration -1", "--duration"),
        ("run --rate 0", "--rate"),
        ("run --key-distribution pareto", "--key-distribution"),
        ("run --key-prefix ''", "--key-prefix"),
        ("run --target mongodb://x:1", "--target"),
        ("run --target redis-server", "--target"),
        (
            "run --target redis://127.0.0.1:6379 --server-opt io-threads=2",
            "--server-opt",
        ),
        ("run --server-opt io-threads", "--server-opt"),
        // 64 TiB of data: no managed server is started to be killed by the
        // OOM killer or to fill the disk.
        (
            "run --keys 1000000 --value-size 67108864",
            "does not fit in the",
        ),
        (
            "run --target postgres --keys 1000000 --value-size 67108864",
            "free in",
        ),
        ("run --duration 1 --requests 5", "--requests"),
        ("run --timeline-seconds 0", "--timeline-seconds"),
        (
            "run --target memcached --server-opt io-threads=4 --duration 1",
            "io-threads",
        ),
        ("run --target postgres --cache postgres", "--cache"),
        ("run --target redis --cache memcached", "--cache"),
        ("run --target postgres --cache mongodb://x", "--cache"),
        (
            "run --target postgres --cache redis --write-policy later",
            "--write-policy",
        ),
        ("run --target postgres --cache-ttl 5", "--cache"),
        (
            "run --target postgres --cache redis --pipeline 4",
            "--pipeline",
        ),
        (
            "run --target postgres --cache redis --cache-ttl 99999999",
            "--cache-ttl",
        ),
        (
            "run --target postgres --cache redis://127.0.0.1:1 --cache-opt maxmemory=1mb",
            "--cache-opt",
        ),
    ]);
}

/// `kvlab run --duration 1` against the server at `url`, which must fail:
/// its error, and how long it took.
fn run_fails_against(url: &str) -> (String, Duration) {
    let t = Instant::now();
    let err = fails(&["run", "--target", url, "--duration", "1"]);
    (err, t.elapsed())
}

#[test]
fn an_unreachable_target_fails_fast() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (err, took) = run_fails_against(&format!("redis://127.0.0.1:{port}"));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(err.contains("cannot connect"), "{err}");
}

#[test]
fn a_silent_port_fails_within_five_seconds() {
    // Accepts connections but never answers.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (err, took) = run_fails_against(&format!("memcached://127.0.0.1:{port}"));
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert!(err.contains("no reply"), "{err}");
    drop(l);
}

#[test]
fn the_wrong_protocol_is_named() {
    let redis = common::server(kvlab::plan::TargetKind::Redis);
    let mc = common::server(kvlab::plan::TargetKind::Memcached);
    let (err, _) = run_fails_against(&format!("memcached://127.0.0.1:{}", redis.endpoint().port));
    assert!(err.contains("memcached server"), "{err}");
    let (err, _) = run_fails_against(&format!("redis://127.0.0.1:{}", mc.endpoint().port));
    assert!(err.contains("Redis/Valkey"), "{err}");
}

#[test]
fn a_managed_run_writes_json_and_leaves_no_server_behind() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = kvlab()
        .args(
            "run --target valkey --keys 1000 --duration 1 --warmup 0.5 --connections 4".split(' '),
        )
        .args(["--server-opt", "requirepass=topsecret9", "--json"])
        .arg(&json)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("throughput") && stdout.contains("p99.99"),
        "{stdout}"
    );
    assert!(!stdout.contains("topsecret9") && !stderr.contains("topsecret9"));
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(!text.contains("topsecret9"));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for k in [
        "throughput_rps",
        "requests",
        "hits",
        "misses",
        "errors",
        "client_cpu_s",
        "server_cpu_s",
        "timeline",
        "histogram",
        "config",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for k in ["mean", "p50", "p90", "p99", "p999", "p9999", "max"] {
        assert!(v["latency_us"][k].as_f64().unwrap() > 0.0, "latency {k}");
    }
    assert_eq!(v["target"]["kind"], "valkey");
    assert!(
        v["target"]["version"]
            .as_str()
            .unwrap()
            .starts_with(char::is_numeric)
    );
    assert!(v["server_cpu_s"].as_f64().unwrap() > 0.0);
    assert!(!v["timeline"].as_array().unwrap().is_empty());
    let h = kvlab::results::stats::decode_histogram(v["histogram"].as_str().unwrap()).unwrap();
    assert_eq!(h.len(), v["hits"].as_u64().unwrap());
    let pid = v["target"]["pid"].as_u64().unwrap() as u32;
    assert!(!common::alive(pid), "server {pid} left running");
}

#[test]
fn a_long_window_keeps_seconds_then_minutes_in_its_timeline() {
    let out = kvlab()
        .args("run --target redis --keys 1000 --connections 4".split(' '))
        .args("--duration 4 --warmup 0.5 --timeline-seconds 2".split(' '))
        .args(["--json", "-"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["config"]["load"]["timeline_seconds"], 2);
    let t = v["timeline"].as_array().unwrap();
    // Seconds 0 and 1, then one entry from 2 to the window's end (4 s).
    let shape: Vec<(i64, u64)> = t
        .iter()
        .map(|s| {
            (
                s["second"].as_i64().unwrap(),
                s["span_s"].as_u64().unwrap_or(1),
            )
        })
        .collect();
    assert_eq!(shape, [(0, 1), (1, 1), (2, 2)], "{}", v["timeline"]);
    assert!(
        t[..2].iter().all(|s| s.get("span_s").is_none()),
        "1 is left out"
    );
    let sum: u64 = t.iter().map(|s| s["requests"].as_u64().unwrap()).sum();
    assert_eq!(sum, v["requests"].as_u64().unwrap());
    let pid = v["target"]["pid"].as_u64().unwrap() as u32;
    assert!(!common::alive(pid), "server {pid} left running");
}

#[test]
fn sigint_keeps_partial_results_and_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("kvlab"))
        .args(
            "run --target redis --keys 1000 --duration 60 --warmup 0 --connections 2 --json"
                .split(' '),
        )
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("interrupted"), "{stdout}");
    // The shell's code for SIGINT, with one line saying so.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let last = stderr.trim_end().lines().last().unwrap_or("");
    assert!(last.starts_with("Error: stopped (Ctrl-C)"), "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(v["requests"].as_u64().unwrap() > 0);
    let pid = v["target"]["pid"].as_u64().unwrap() as u32;
    assert!(!common::alive(pid), "server {pid} left running");
}

#[test]
fn a_managed_postgres_with_many_connections_reports_the_whole_tree_and_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("pg.json");
    let out = kvlab()
        .args("run --target postgres --keys 5000 --duration 2 --warmup 0.5".split(' '))
        .args("--connections 200 --pipeline 2 --ratio 1:9 --json".split(' '))
        .arg(&json)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["connections"]["established"], 200);
    assert_eq!(v["errors"], 0);
    assert!(
        v["server_cpu_s"].as_f64().unwrap() > 0.1,
        "backends' CPU counted"
    );
    assert!(v["server_peak_rss_kb"].as_u64().unwrap() > 10_000);
    assert_eq!(v["target"]["settings"]["max_connections"], "220");
    let pid = v["target"]["pid"].as_u64().unwrap() as u32;
    assert!(!common::alive(pid), "postmaster {pid} left running");
}

#[test]
fn bad_study_files_and_results_give_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    // (study text, where the error points, what it names)
    let cases = [
        (
            "name = \"x\"\n[[target]]\ntarget = \"redis\"\n[sweep]\nconections = [1, 2]\n",
            "bad.toml:5:",
            "conections",
        ),
        (
            "name = \"x\"\n[[target]]\ntarget = \"postgres\"\ncache = \"redis\"\nwrite_policy = \"later\"\n",
            "bad.toml:5:",
            "write_policy",
        ),
    ];
    for (text, at, names) in cases {
        std::fs::write(&bad, text).unwrap();
        let err = fails(&["study", bad.to_str().unwrap()]);
        assert!(err.contains(at) && err.contains(names), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let err = fails(&["study", "/nonexistent/study.toml"]);
    assert!(err.contains("cannot read"), "{err}");
    let err = fails(&["report", bad.to_str().unwrap()]);
    assert!(err.contains("not a kvlab study results file"), "{err}");
    let dry_run = |study: &str| {
        let out = kvlab()
            .args(["study", "--dry-run"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(study))
            .output()
            .unwrap();
        assert!(out.status.success(), "{study}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(dry_run("studies/demo.toml").contains("15 points"));
    let text = dry_run("studies/cache-aside.toml");
    assert!(
        text.contains("9 points") && text.contains("redis in front of postgres, update"),
        "{text}"
    );
}

#[test]
fn built_in_studies_run_by_name_and_at_the_original_scale() {
    let out = kvlab()
        .args(["study", "s2", "--scale", "original", "--dry-run"])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("at the original's scale"), "{stdout}");
    assert!(stdout.contains("keys=10000000"), "{stdout}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 16 {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("io-threads up to 16"), "{stderr}");
    }
    let err = fails(&["study", "s3", "--scale", "original"]);
    assert!(err.contains("no [original] section"), "{err}");
    let err = fails(&["study", "s99"]);
    assert!(err.contains("built-in study (s0, s1"), "{err}");
}

/// `kvlab` run with the arguments of `line` (split at spaces) and an
/// open-file limit of 512 (soft and hard).
fn kvlab_with_512_files(line: &str) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("kvlab"));
    cmd.args(line.split(' '));
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 512,
                rlim_max: 512,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn connections_past_the_open_file_limit_are_refused_before_anything_starts() {
    // 1000 sockets cannot be open under a limit of 512: one line, no server.
    let started = Instant::now();
    let out = kvlab_with_512_files("run --target redis --connections 1000");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--connections") && err.contains("may open 512") && err.contains("ulimit -Hn"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "nothing started"
    );
    // With a cache in front every connection holds two sockets.
    let out = kvlab_with_512_files(
        "run --target postgres://kvlab@127.0.0.1:1/x --cache redis://127.0.0.1:1 --connections 300",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("600 sockets"), "{err}");
    // Under the limit the run goes on: the managed server has room for them all.
    let out =
        kvlab_with_512_files("run --target memcached --connections 400 --keys 1000 --duration 1");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn observe_refuses_what_it_cannot_watch_in_one_line() {
    each_fails_in_one_line(&[
        ("observe", "Error: --cache/--target: no server to watch"),
        (
            "observe --cache redis",
            "Error: --cache: 'redis' names a server kvlab would start",
        ),
        (
            "observe --target postgres://u@127.0.0.1:1/db --seconds 0",
            "Error: --seconds: 0 is not a window",
        ),
        (
            "observe --cache postgres://u@127.0.0.1:1/db",
            "Error: --cache: kvlab observe does not watch postgres as the cache",
        ),
        (
            "observe --target tarantool://127.0.0.1:1",
            "Error: --target: kvlab observe does not watch tarantool",
        ),
        (
            "observe --cache redis://127.0.0.1:1",
            "Error: --cache: cannot connect to redis://127.0.0.1:1",
        ),
        (
            "decide --observe --p99-ms 5",
            "Error: --target: 'postgres' names a server kvlab would start",
        ),
        (
            "decide --observe --from x --p99-ms 5",
            "Error: --observe/--from/--trace: --observe takes the load from the servers watched",
        ),
        (
            "decide --observe --observe-seconds 0 --target postgres://u@127.0.0.1:1/db --p99-ms 5",
            "Error: --observe-seconds: 0 is not a window",
        ),
        (
            "observe --target postgres://u:***@127.0.0.1:1/db",
            "Error: --target: the URL's password is '***', the mask kvlab prints",
        ),
    ]);
}
