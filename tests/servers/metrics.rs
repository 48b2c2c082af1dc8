//! The live `--metrics` endpoint, scraped by a real Prometheus (Debian's
//! package, started by the test): the scraped request count equals the run's
//! result and `histogram_quantile(0.99, …)` lands within one bucket of its
//! p99, for one client and summed over the two clients of a sharded run; the
//! Grafana dashboard names only metrics kvlab exports.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::prometheus::Prometheus;
use kvlab::plan::TargetKind;
use kvlab::results::RunResult;
use kvlab::runner::metrics::{METRICS, expose::bounds};
use kvlab::system::process::free_port;

fn kvlab(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kvlab"));
    c.args(args);
    c
}

/// Waits for `child` to write the result `path` (it then holds its endpoint
/// open for `--metrics-hold`).
fn result_of(child: &mut Child, path: &Path) -> RunResult {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(bytes) = std::fs::read(path)
            && let Ok(r) = serde_json::from_slice::<RunResult>(&bytes)
        {
            return r;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let said = std::fs::read_to_string(said_at(path)).unwrap_or_default();
            panic!(
                "kvlab ended ({status}) without writing {}: {said}",
                path.display()
            );
        }
        assert!(Instant::now() < deadline, "no result in 120 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Where a run writing its result to `json` says what went wrong: its
/// standard error, beside the result.
fn said_at(json: &Path) -> std::path::PathBuf {
    json.with_extension("stderr")
}

/// `cmd` writing its result to `json`, started with its standard output
/// dropped and its standard error kept for [`result_of`] to show.
fn quiet(mut cmd: Command, json: &Path) -> Child {
    let stderr = std::fs::File::create(said_at(json)).unwrap();
    cmd.arg(json)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// The bucket of kvlab's histograms a latency in seconds falls in.
fn bucket(s: f64) -> usize {
    bounds().partition_point(|&ub| ub < s)
}

/// Checks Prometheus's view of run `run` against `r`, while the clients still
/// serve their final figures.
fn agrees(prom: &Prometheus, run: &str, r: &RunResult) {
    let q = format!(r#"sum(kvlab_requests_total{{run="{run}",phase="measured"}})"#);
    let want = r.totals.requests as f64;
    let got = prom.wait_for(&q, Duration::from_secs(10), |v| v == want);
    assert_eq!(got, Some(want), "{q}");
    let q = format!(
        r#"histogram_quantile(0.99, sum by (le) (kvlab_latency_seconds_bucket{{run="{run}"}}))"#
    );
    let p99 = prom.query(&q).expect("a p99");
    let (a, b) = (bucket(p99), bucket(r.latency.latency_us.p99 / 1e6));
    assert!(
        a.abs_diff(b) <= 1,
        "Prometheus p99 {p99} s (bucket {a}) against the run's {} µs (bucket {b})",
        r.latency.latency_us.p99
    );
}

#[test]
fn prometheus_scrapes_what_the_run_reports() {
    let port = free_port().unwrap();
    let prom = Prometheus::start(&[format!("127.0.0.1:{port}")]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let addr = format!("127.0.0.1:{port}");
    let cmd = kvlab(&[
        "run",
        "--target",
        "redis",
        "--duration",
        "3",
        "--warmup",
        "0.5",
        "--keys",
        "10000",
        "--connections",
        "4",
        "--ratio",
        "1:4",
        "--metrics",
        &addr,
        "--metrics-run",
        "single",
        "--metrics-hold",
        "12",
        "--json",
    ]);
    let mut child = quiet(cmd, &json);
    let r = result_of(&mut child, &json);
    assert!(r.valid && r.totals.requests > 0, "{:?}", r.problems);
    agrees(&prom, "single", &r);
    // Hits, misses and errors are counted apart, as in the result.
    let q = r#"sum(kvlab_hits_total{run="single",phase="measured"})"#;
    assert_eq!(prom.query(q), Some(r.totals.hits as f64), "{q}");
    let q = r#"sum(kvlab_errors_total{run="single",phase="measured"})"#;
    assert_eq!(prom.query(q), Some(r.totals.errors as f64), "{q}");
    let q = r#"max(kvlab_server_cpu_seconds_total{run="single",role="server"})"#;
    assert!(prom.query(q).is_some_and(|v| v > 0.0), "{q}");
    assert!(child.wait().unwrap().success());
}

/// The endpoint's offered gauge now (`None` before it serves one).
fn offered_now(addr: &str) -> Option<f64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    body.lines()
        .find(|l| l.starts_with("kvlab_offered_requests_per_second{"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// A sine-shaped rate: each second of the result carried what the schedule
/// offered in it (within 12%), and the endpoint's offered gauge, read every
/// 200 ms, moved from the trough to the peak.
#[test]
fn a_sine_shaped_run_shows_its_rate_second_by_second() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sine.json");
    let addr = format!("127.0.0.1:{}", free_port().unwrap());
    let cmd = kvlab(&[
        "run",
        "--target",
        "redis",
        "--rate",
        "4000",
        "--rate-shape",
        "sine",
        "--duration",
        "8",
        "--warmup",
        "1",
        "--keys",
        "10000",
        "--connections",
        "8",
        "--metrics",
        &addr,
        "--metrics-hold",
        "2",
        "--json",
    ]);
    let mut child = quiet(cmd, &json);
    let mut seen = Vec::new();
    while !json.exists() && child.try_wait().unwrap().is_none() {
        seen.extend(offered_now(&addr));
        std::thread::sleep(Duration::from_millis(200));
    }
    let r = result_of(&mut child, &json);
    assert!(r.valid, "{:?}", r.problems);
    let sc = r.latency.schedule.as_ref().unwrap();
    assert!(sc.rate_shape.is_some(), "{sc:?}");
    assert_eq!(r.timeline.len(), 8);
    for s in &r.timeline {
        let offered = s.offered_rps.expect("each second's offer");
        assert!(
            (s.rps() / offered - 1.0).abs() < 0.12,
            "second {}: {} req/s carried, {offered} offered",
            s.second,
            s.rps()
        );
    }
    let (trough, peak) = (r.timeline[0].rps(), r.timeline[4].rps());
    assert!(peak > 1.5 * trough, "{trough} → {peak}");
    let (min, max) = seen
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
    assert!(max > 3_800.0 && max <= 4_000.0, "{seen:?}");
    assert!((2_000.0..2_400.0).contains(&min), "{seen:?}");
    assert!(child.wait().unwrap().success());
}

#[test]
fn the_clients_of_a_sharded_run_sum_to_the_merged_result() {
    let s = common::server(TargetKind::Redis);
    let url = format!("redis://127.0.0.1:{}", s.endpoint().port);
    let ports = [free_port().unwrap(), free_port().unwrap()];
    let prom = Prometheus::start(&ports.map(|p| format!("127.0.0.1:{p}")));
    let dir = tempfile::tempdir().unwrap();
    let start_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 5_000;
    let files: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("c{i}.json")))
        .collect();
    let mut clients: Vec<Child> = (0..2)
        .map(|i| {
            kvlab(&[
                "run",
                "--target",
                &url,
                "--shard",
                &format!("{i}/2"),
                "--start-at",
                &start_at.to_string(),
                "--duration",
                "3",
                "--warmup",
                "1",
                "--keys",
                "10000",
                "--connections",
                "4",
                "--threads",
                "1",
                "--metrics",
                &format!("127.0.0.1:{}", ports[i]),
                "--metrics-run",
                "sharded",
                "--metrics-hold",
                "15",
                "--json",
            ])
            .arg(&files[i])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(said_at(&files[i])).unwrap())
            .spawn()
            .unwrap()
        })
        .collect();
    for (c, f) in clients.iter_mut().zip(&files) {
        result_of(c, f);
    }
    let merged = dir.path().join("all.json");
    let out = kvlab(&["merge"])
        .args(&files)
        .arg("--json")
        .arg(&merged)
        .output()
        .unwrap();
    common::succeeds(&out);
    let m: RunResult = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert!(m.valid, "{:?}", m.problems);
    agrees(&prom, "sharded", &m);
    let q = r#"count(kvlab_running{run="sharded"})"#;
    assert_eq!(prom.query(q), Some(2.0), "one series per client: {q}");
    for mut c in clients {
        assert!(c.wait().unwrap().success());
    }
}

#[test]
fn the_dashboard_names_only_exported_metrics() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/kvlab.json");
    let text = std::fs::read_to_string(&path).expect("the dashboard exists");
    let dash: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let mut exprs = Vec::new();
    collect_exprs(&dash, &mut exprs);
    assert!(exprs.len() >= 6, "panels with queries: {exprs:?}");
    let mut named = 0;
    for e in &exprs {
        for name in e
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("kvlab_"))
        {
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|b| METRICS.contains(b)))
                .unwrap_or(name);
            assert!(METRICS.contains(&base), "{name} in {e} is not exported");
            named += 1;
        }
    }
    assert!(named >= exprs.len(), "every query names kvlab's metrics");
    assert!(dash["panels"].as_array().is_some_and(|p| !p.is_empty()));
}

fn collect_exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x.as_str()) {
                    ("expr" | "definition", Some(e)) => out.push(e.to_string()),
                    _ => collect_exprs(x, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_exprs(x, out)),
        _ => {}
    }
}
