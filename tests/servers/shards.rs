//! Sharded runs on one machine: N kvlab processes started with the very
//! arguments of the Kubernetes Job in `deploy/kubernetes/` (so the recipe
//! cannot rot) drive one managed redis; `kvlab merge` gives one result whose
//! requests equal the server's own counters, and a client that fails shows;
//! merge input that is not the clients of one run is refused in one line.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::server;
use kvlab::driver::Connector;
use kvlab::plan::TargetKind;
use kvlab::results::RunResult;

/// What the test takes from the Job manifest.
struct Job {
    parallelism: usize,
    completions: usize,
    indexed: bool,
    env: BTreeMap<String, String>,
    args: Vec<String>,
}

/// Reads `deploy/kubernetes/job.yaml` line by line (its shape is simple and
/// kept so: `key: value` lines, `- name:`/`value:` env pairs, an `args:` list).
fn job() -> Job {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/job.yaml");
    let text = std::fs::read_to_string(&path).expect("the Job manifest exists");
    let unquote = |s: &str| s.trim().trim_matches('"').trim_matches('\'').to_string();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{key}:")).map(unquote))
            .unwrap_or_else(|| panic!("{key} is in the manifest"))
    };
    let mut env = BTreeMap::new();
    let mut name = None;
    let mut args = Vec::new();
    let mut in_args: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if let Some(start) = in_args {
            match t.strip_prefix("- ") {
                Some(a) if indent >= start => {
                    args.push(unquote(a));
                    continue;
                }
                _ => in_args = None,
            }
        }
        if t == "args:" {
            in_args = Some(indent);
        } else if let Some(n) = t.strip_prefix("- name:") {
            name = Some(unquote(n));
        } else if let (Some(v), Some(n)) = (t.strip_prefix("value:"), name.take()) {
            env.insert(n, unquote(v));
        }
    }
    Job {
        parallelism: field("parallelism").parse().unwrap(),
        completions: field("completions").parse().unwrap(),
        indexed: field("completionMode") == "Indexed",
        env,
        args,
    }
}

/// The manifest's args for pod `index`, with Kubernetes' `$(VAR)` expanded
/// from `env` and the shared volume at `results`.
fn pod_args(
    job: &Job,
    env: &BTreeMap<String, String>,
    index: usize,
    results: &Path,
) -> Vec<String> {
    let mut env = env.clone();
    env.insert("JOB_COMPLETION_INDEX".into(), index.to_string());
    job.args
        .iter()
        .map(|a| {
            let mut a = a.clone();
            for (k, v) in &env {
                a = a.replace(&format!("$({k})"), v);
            }
            assert!(!a.contains("$("), "unexpanded variable in {a}");
            match a.strip_prefix("/results/") {
                Some(f) => results.join(f).display().to_string(),
                None => a,
            }
        })
        .collect()
}

fn kvlab(args: &[String]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kvlab"));
    c.args(args);
    c
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(path: &Path) -> RunResult {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The test's scale: small enough for a 2-core machine (later flags win).
const SMALL: [&str; 12] = [
    "--keys",
    "20000",
    "--connections",
    "8",
    "--pipeline",
    "4",
    "--duration",
    "2",
    "--warmup",
    "1",
    "--threads",
    "1",
];

#[test]
fn clients_from_the_job_manifest_merge_to_the_servers_own_counts() {
    let job = job();
    assert!(job.indexed, "completionMode: Indexed");
    let n: usize = job.env["KVLAB_CLIENTS"].parse().unwrap();
    assert_eq!((job.parallelism, job.completions), (n, n), "N agrees");
    assert_eq!(job.env["KVLAB_START_AT"], "@START_AT@");
    let s = server(TargetKind::Redis);
    let url = format!("redis://127.0.0.1:{}", s.endpoint().port);
    let connector = Connector::new(TargetKind::Redis, &s.endpoint()).unwrap();
    let before = connector.counters().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let start_at = now_ms() + 6_000;
    let mut env = job.env.clone();
    env.insert("KVLAB_TARGET".into(), url.clone());
    env.insert("KVLAB_START_AT".into(), start_at.to_string());
    // Each client's live endpoint on a free loopback port here (a pod's own
    // address in the cluster), with no hold at the end.
    assert_eq!(job.env["KVLAB_METRICS"], ":9464");
    env.insert("KVLAB_METRICS".into(), "127.0.0.1:0".into());
    env.insert("KVLAB_METRICS_HOLD".into(), "0".into());
    let pods: Vec<_> = (0..n)
        .map(|i| {
            let mut args = pod_args(&job, &env, i, dir.path());
            args.extend(SMALL.iter().map(|s| s.to_string()));
            kvlab(&args).output_async()
        })
        .collect();
    for (i, p) in pods.into_iter().enumerate() {
        ok(&p.join(), &format!("client {i}/{n}"));
    }
    let files: Vec<PathBuf> = (0..n)
        .map(|i| dir.path().join(format!("client-{i}.json")))
        .collect();
    let all = dir.path().join("all.json");
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--json".into(), all.display().to_string()]);
    ok(&kvlab(&args).output().unwrap(), "kvlab merge");
    let m = read(&all);
    let d = connector.counters().unwrap().since(&before);

    // Every request the clients sent, and nothing else, reached the server.
    assert_eq!(
        d.gets,
        m.totals.gets + m.warmup.gets,
        "{:#?}",
        m.server_counters
    );
    assert_eq!(d.sets, 20_000, "each client loaded its slice, once");
    assert_eq!(m.load.as_ref().unwrap().keys, 20_000);
    let cc = m.server_counters.as_ref().unwrap();
    assert!(cc.agrees(), "{cc:?}");
    assert_eq!((cc.server.gets, cc.kvlab_gets), (d.gets, d.gets));
    assert!(m.valid && m.totals.misses == 0, "{:?}", m.problems);
    assert_eq!(
        m.totals.requests,
        m.timeline.iter().map(|s| s.requests).sum::<u64>()
    );
    assert_eq!(m.clients.len(), n);
    for (i, c) in m.clients.iter().enumerate() {
        assert_eq!((c.shard.index, c.status.as_str()), (i, "ok"));
        let w = c.window.unwrap();
        assert_eq!(w.start_unix_ms, start_at as f64, "started at --start-at");
        assert!(c.start_late_ms.unwrap() < 500.0, "{c:?}");
    }
    let shards: Vec<RunResult> = files.iter().map(|f| read(f)).collect();
    assert_eq!(
        m.totals.requests,
        shards.iter().map(|r| r.totals.requests).sum::<u64>()
    );
    assert!(
        shards
            .iter()
            .all(|r| r.start.is_some() && r.shard.is_some())
    );

    // One process making the same total load: the same figures within noise.
    let single = dir.path().join("single.json");
    let mut args: Vec<String> = vec!["run".into(), "--target".into(), url, "--json".into()];
    args.push(single.display().to_string());
    args.extend(SMALL.iter().map(|s| s.to_string()));
    args.extend(["--threads".into(), n.to_string(), "--no-load".into()]);
    ok(&kvlab(&args).output().unwrap(), "single run");
    let one = read(&single);
    let near = |a: f64, b: f64| a < b * 4.0 && b < a * 4.0;
    assert!(
        near(m.latency.latency_us.p50, one.latency.latency_us.p50),
        "p50 {} vs {}",
        m.latency.latency_us.p50,
        one.latency.latency_us.p50
    );
    assert!(near(m.totals.throughput_rps, one.totals.throughput_rps));
}

#[test]
fn a_client_that_fails_shows_in_the_merged_result() {
    let s = server(TargetKind::Redis);
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("redis://127.0.0.1:{}", closed.local_addr().unwrap().port());
    drop(closed);
    let urls = [format!("redis://127.0.0.1:{}", s.endpoint().port), dead];
    let start_at = (now_ms() + 4_000).to_string();
    let runs: Vec<_> = urls
        .iter()
        .enumerate()
        .map(|(i, url)| {
            let mut args: Vec<String> = [
                "run",
                "--target",
                url,
                "--shard",
                &format!("{i}/2"),
                "--start-at",
                &start_at,
                "--json",
                &dir.path()
                    .join(format!("client-{i}.json"))
                    .display()
                    .to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.extend(SMALL.iter().map(|s| s.to_string()));
            kvlab(&args).output_async()
        })
        .collect();
    let outs: Vec<Output> = runs.into_iter().map(|r| r.join()).collect();
    // Client 0 measured, but the keys of client 1's slice were never loaded:
    // its own result says so (and may be invalid for its misses).
    assert!(
        dir.path().join("client-0.json").exists(),
        "{}",
        String::from_utf8_lossy(&outs[0].stderr)
    );
    assert!(!outs[1].status.success(), "client 1/2 has no server");
    let all = dir.path().join("all.json");
    let out = kvlab(&[
        "merge".into(),
        dir.path().join("client-0.json").display().to_string(),
        "--json".into(),
        all.display().to_string(),
    ])
    .output()
    .unwrap();
    assert!(
        !out.status.success(),
        "a merge with a client missing is not valid"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("client 1/2: no result"), "{err}");
    let m = read(&all);
    assert!(!m.valid);
    assert_eq!(m.clients[1].status, "missing");
    assert_ne!(m.clients[0].status, "missing");
    assert!(m.totals.misses > 0, "client 1's slice was never loaded");
    assert_eq!(m.totals.requests, m.clients[0].requests);
}

#[test]
fn a_client_not_ready_in_time_fails_rather_than_start_late() {
    let s = server(TargetKind::Redis);
    let url = format!("redis://127.0.0.1:{}", s.endpoint().port);
    // Loading 400k keys takes far longer than the 150 ms left before warm-up.
    let args: Vec<String> = [
        "run",
        "--target",
        &url,
        "--shard",
        "0/2",
        "--keys",
        "400000",
        "--warmup",
        "1",
        "--duration",
        "1",
        "--start-at",
        &(now_ms() + 1_150).to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let t = std::time::Instant::now();
    let out = kvlab(&args).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--start-at") && err.contains("ready"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(30));
}

#[test]
fn requests_and_rate_are_split_so_the_clients_make_exactly_the_run() {
    let s = server(TargetKind::Redis);
    let url = format!("redis://127.0.0.1:{}", s.endpoint().port);
    let dir = tempfile::tempdir().unwrap();
    let run = |tag: &str, load: &[&str]| -> RunResult {
        let start_at = (now_ms() + 3_000).to_string();
        let pods: Vec<_> = (0..3)
            .map(|i| {
                let json = dir.path().join(format!("{tag}-{i}.json"));
                let mut args: Vec<String> = [
                    "run",
                    "--target",
                    &url,
                    "--keys",
                    "3001",
                    "--connections",
                    "7",
                    "--warmup",
                    "0.5",
                    "--threads",
                    "1",
                    "--shard",
                    &format!("{i}/3"),
                    "--start-at",
                    &start_at,
                    "--json",
                    &json.display().to_string(),
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                args.extend(load.iter().map(|s| s.to_string()));
                kvlab(&args).output_async()
            })
            .collect();
        for (i, p) in pods.into_iter().enumerate() {
            ok(&p.join(), &format!("client {i}/3"));
        }
        let parts: Vec<(String, RunResult)> = (0..3)
            .map(|i| {
                let f = dir.path().join(format!("{tag}-{i}.json"));
                (f.display().to_string(), read(&f))
            })
            .collect();
        kvlab::results::merge::merge(&parts).unwrap()
    };
    // 7 connections over 3 clients (3 + 2 + 2), 10,001 requests over them.
    let m = run("requests", &["--requests", "10001"]);
    assert_eq!(m.totals.requests, 10_001, "{:?}", m.problems);
    assert_eq!(m.load.as_ref().unwrap().keys, 3001, "every key loaded once");
    assert_eq!(m.connections.established, 7);
    let parts: Vec<u64> = m.clients.iter().map(|c| c.requests).collect();
    assert_eq!(parts.iter().sum::<u64>(), 10_001);
    assert!(parts.iter().all(|p| *p > 2_000), "{parts:?}");
    // One schedule of 3,000 req/s over all 7 connections.
    let m = run("rate", &["--rate", "3000", "--duration", "2", "--no-load"]);
    let rps = m.totals.requests as f64 / m.totals.duration_s;
    assert!((rps - 3000.0).abs() < 150.0, "{rps} req/s of 3000");
    assert_eq!(m.latency.schedule.unwrap().target_rps, 3000.0);
    assert!(m.valid, "{:?}", m.problems);
}

#[test]
fn merge_input_that_is_not_one_run_is_refused_in_one_line() {
    let fails = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let out = kvlab(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    // Merge: a file that is not a kvlab run result, or no result of a client.
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.json");
    std::fs::write(&text, "hello").unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let study = fixtures.join("study.json");
    let client = fixtures.join("client-result.json");
    let mut other =
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(&client).unwrap()).unwrap();
    other["shard"]["index"] = 1.into();
    other["config"]["workload"]["value_size"] = 512.into();
    let other_path = dir.path().join("other.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    let p = |x: &Path| x.display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![p(&text)], "not a kvlab result"),
        (vec![p(&study)], "not a kvlab run result"),
        (vec![p(&client), p(&other_path)], "value_size"),
        (vec![p(&client), p(&client)], "twice"),
    ];
    for (files, what) in cases {
        let mut args = vec!["merge".to_string()];
        args.extend(files);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = fails(&args);
        assert!(err.contains(what), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// Running a command while others run.
trait Async {
    fn output_async(self) -> Pending;
}

/// A command's output, to be joined.
struct Pending(std::thread::JoinHandle<Output>);

impl Pending {
    fn join(self) -> Output {
        self.0.join().unwrap()
    }
}

impl Async for Command {
    fn output_async(mut self) -> Pending {
        Pending(std::thread::spawn(move || self.output().unwrap()))
    }
}
