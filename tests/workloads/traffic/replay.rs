//! `kvlab replay` against real managed servers: a generated trace of a known
//! mix and rate, replayed against redis and postgres (plain and zstd), comes
//! back as that mix and rate within 1%, with the servers' counters agreeing;
//! and bad traces and flags get one-line errors.

use std::io::Write as _;
use std::path::Path;

use kvlab::results::RunResult;

use super::common;

/// Lines per second of the generated trace, and its seconds.
const RATE: u64 = 2000;
const SECS: u64 = 4;

/// Writes a trace of `RATE` lines a second for `SECS` seconds (timestamps to
/// the ms, several lines per ms): 80% get, 15% set, 3% delete, 2% incr, over
/// 3000 keys, values of 100 or 1000 bytes. Returns the lines of each op.
fn trace(path: &Path, zstd: bool) -> [u64; 4] {
    let mut text = String::new();
    let mut n = [0u64; 4];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..RATE * SECS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (op, k) = match x % 100 {
            0..80 => ("get", 0),
            80..95 => ("set", 1),
            95..98 => ("delete", 2),
            _ => ("incr", 3),
        };
        n[k] += 1;
        let ts = 1_000_000.0 + (i / 2) as f64 * 2.0 / RATE as f64;
        let size = if (x >> 20).is_multiple_of(4) {
            1000
        } else {
            100
        };
        text.push_str(&format!(
            "{ts:.3},key{:05},8,{size},{},{op},0\n",
            (x >> 8) % 3000,
            x % 7
        ));
    }
    let bytes = match zstd {
        true => zstd::encode_all(text.as_bytes(), 3).unwrap(),
        false => text.into_bytes(),
    };
    std::fs::File::create(path)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    n
}

/// Writes the generated trace (zstd or not) and replays it with `args`:
/// the result and the trace's lines per op.
fn replay(zstd: bool, args: &[&str]) -> (RunResult, [u64; 4]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join(if zstd { "trace.csv.zst" } else { "trace.csv" });
    let n = trace(&path, zstd);
    let out = common::kvlab()
        .arg("replay")
        .arg(&path)
        .args(args)
        .args(["--json", "-", "--connections", "8", "--keys", "3000"])
        .output()
        .unwrap();
    // A run that is not a valid measurement exits non-zero with its result
    // written all the same: [`reproduces`] says whether that is the host.
    match serde_json::from_slice(&out.stdout) {
        Ok(r) => (r, n),
        Err(_) => {
            common::succeeds(&out);
            panic!(
                "no result on stdout: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        }
    }
}

/// The replay reproduced the trace's mix and rate, every value verified, and
/// the server counted what kvlab sent (its rate not sustained only where
/// other processes kept the host busy, as the run says).
fn reproduces(r: &RunResult, n: [u64; 4]) {
    common::valid_unless_host_busy(r);
    assert_eq!(r.totals.errors, 0);
    let p = r.replay.as_ref().unwrap();
    assert!(p.finished && p.read_error.is_none(), "{p:?}");
    assert_eq!(p.lines, n.iter().sum::<u64>());
    assert_eq!((p.handed_gets, p.handed_sets), (n[0], n[1]));
    let not_sent: Vec<(&str, u64)> = p
        .ops
        .iter()
        .filter(|o| o.sent_as == "not sent")
        .map(|o| (o.op.as_str(), o.lines))
        .collect();
    assert_eq!(not_sent, [("delete", n[2]), ("incr", n[3])]);
    // The mix: the share of SETs within 1% (of the requests).
    let share = r.totals.sets as f64 / (r.totals.gets + r.totals.sets) as f64;
    let want = n[1] as f64 / (n[0] + n[1]) as f64;
    assert!((share - want).abs() < 0.01, "{share} vs {want}");
    assert_eq!(r.totals.gets + r.totals.sets, p.handed_gets + p.handed_sets);
    // The rate: the trace's, within 1% (a quarter where other processes took
    // the host's CPU during the run: the run says so, and kvlab falls
    // behind the trace's clock by what it could not get).
    let rate = (n[0] + n[1]) as f64 / SECS as f64;
    let within = match common::host_busy(r) {
        Some(_) => 0.25,
        None => 0.01,
    };
    assert!(
        (r.totals.throughput_rps - rate).abs() < within * rate,
        "{} vs {rate}",
        r.totals.throughput_rps
    );
    assert!(
        (p.offered_rps - rate).abs() < 0.01 * rate,
        "{}",
        p.offered_rps
    );
    assert_eq!(r.latency.latency_start, "intended");
    assert_eq!(r.totals.misses, 0);
    let cc = r.server_counters.as_ref().unwrap();
    assert!(cc.agrees(), "{cc:?}");
    assert!(r.config.workload.value_sizes.is_some());
}

#[test]
fn a_trace_replayed_against_redis_keeps_its_mix_and_rate() {
    for io in common::transports() {
        let (r, n) = replay(false, &["--target", "redis", "--io", io.name()]);
        reproduces(&r, n);
        common::ran_over(&r, io);
        assert!(!r.replay.as_ref().unwrap().compressed);
    }
}

#[test]
fn a_zstd_trace_replayed_against_postgres_keeps_its_mix_and_rate() {
    let (r, n) = replay(true, &["--target", "postgres"]);
    reproduces(&r, n);
    assert!(r.replay.as_ref().unwrap().compressed);
}

#[test]
fn a_trace_at_twice_its_speed_halves_the_run() {
    let (r, n) = replay(false, &["--target", "memcached", "--speed", "2"]);
    assert!(r.valid, "{:?}", r.problems);
    let rate = 2.0 * (n[0] + n[1]) as f64 / SECS as f64;
    assert!(
        (r.totals.throughput_rps - rate).abs() < 0.01 * rate,
        "{}",
        r.totals.throughput_rps
    );
    assert!(
        r.totals.duration_s < SECS as f64 / 2.0 + 0.3,
        "{}",
        r.totals.duration_s
    );
}

#[test]
fn bad_traces_and_flags_get_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = common::fails(&["replay", "/nonexistent/trace.csv"]);
    assert!(e.contains("TRACE") && e.lines().count() == 1, "{e}");
    let junk = dir.path().join("junk.csv");
    std::fs::write(&junk, "hello world\nnot,a,trace\n").unwrap();
    let e = common::fails(&["replay", junk.to_str().unwrap()]);
    assert!(e.contains("cache-trace CSV") && e.contains("line 1"), "{e}");
    let deletes = dir.path().join("deletes.csv");
    std::fs::write(&deletes, "1,k,1,1,1,delete,0\n").unwrap();
    let e = common::fails(&["replay", deletes.to_str().unwrap()]);
    assert!(e.contains("no GET or SET"), "{e}");
    let ok = dir.path().join("ok.csv");
    std::fs::write(&ok, "1,k,1,1,1,get,0\n").unwrap();
    let ok = ok.to_str().unwrap();
    for (flag, value) in [("--rate", "100"), ("--ratio", "1:1"), ("--batch", "4")] {
        let e = common::fails(&["replay", ok, flag, value]);
        assert!(e.contains(flag) && e.lines().count() == 1, "{e}");
    }
    let e = common::fails(&["replay", ok, "--speed", "0"]);
    assert!(e.contains("--speed"), "{e}");
    let e = common::fails(&["replay", ok, "--warmup", "5"]);
    assert!(e.contains("--warmup"), "{e}");
}

#[test]
fn a_trace_replays_through_a_cold_cache_in_front_of_postgres() {
    let (r, n) = replay(
        false,
        &[
            "--target",
            "postgres",
            "--cache",
            "memcached",
            "--cache-start",
            "cold",
        ],
    );
    reproduces(&r, n);
    let a = r.cache_aside.as_ref().unwrap();
    assert!(a.hit_ratio > 0.2 && a.hit_ratio < 1.0, "{}", a.hit_ratio);
    assert!(
        r.consistency.is_some(),
        "stale reads are judged in a replay"
    );
}
