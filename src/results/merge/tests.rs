//! Merges of synthetic clients: exact percentiles, wall-clock timelines,
//! missing clients and refused mixes.

use super::*;
use rand::RngExt;

const CLIENT: &str = include_str!("../../../tests/fixtures/client-result.json");

/// Client `index` of `count`, its window starting `offset_s` after the
/// first's, its latencies `samples` (ns), one timeline second per 100.
fn client(index: usize, count: usize, offset_s: f64, samples: &[u64]) -> (String, RunResult) {
    let mut r: RunResult = serde_json::from_str(CLIENT).unwrap();
    r.shard = Some(Shard { index, count });
    r.config.load.shard = r.shard;
    let mut h = new_histogram();
    for s in samples {
        h.record(*s).unwrap();
    }
    r.histograms.histogram = encode_histogram(&h);
    let t = &mut r.totals;
    (t.requests, t.gets, t.hits, t.errors) = (
        samples.len() as u64,
        samples.len() as u64,
        samples.len() as u64,
        0,
    );
    let start = 1_767_225_600_000.0 + offset_s * 1e3;
    r.window = Some(Window {
        start_unix_ms: start,
        end_unix_ms: start + 3e3,
    });
    r.timeline = samples
        .chunks(100)
        .enumerate()
        .map(|(i, c)| {
            let mut h = new_histogram();
            for s in c {
                h.record(*s).unwrap();
            }
            Second {
                second: i as i64,
                requests: c.len() as u64,
                histogram: Some(encode_histogram(&h)),
                ..Default::default()
            }
        })
        .collect();
    (format!("client-{index}.json"), r)
}

#[test]
fn merged_percentiles_are_those_of_one_histogram_of_every_sample() {
    let mut rng = crate::workload::rng(3);
    let samples: Vec<u64> = (0..3000)
        .map(|i| {
            // Three clients with different latency: averaging would be wrong.
            let base = [50_000u64, 200_000, 2_000_000][i % 3];
            base + rng.random_range(0..base)
        })
        .collect();
    let parts: Vec<Vec<u64>> = (0..3)
        .map(|k| samples.iter().skip(k).step_by(3).copied().collect())
        .collect();
    let clients: Vec<(String, RunResult)> = parts
        .iter()
        .enumerate()
        .map(|(i, s)| client(i, 3, i as f64, s))
        .collect();
    let m = merge(&clients).unwrap();
    let mut all = new_histogram();
    for s in &samples {
        all.record(*s).unwrap();
    }
    assert_eq!(m.latency.latency_us, Percentiles::of(&all));
    assert_eq!(decode_histogram(&m.histograms.histogram).unwrap(), all);
    assert_eq!(m.totals.requests, 3000);
    assert!(m.valid, "{:?}", m.problems);
    // Timelines are placed by wall clock: client 2 began 2 s after client 0.
    let seconds: Vec<(i64, u64)> = m.timeline.iter().map(|s| (s.second, s.requests)).collect();
    assert_eq!(
        seconds,
        vec![
            (0, 100),
            (1, 200),
            (2, 300),
            (3, 300),
            (4, 300),
            (5, 300),
            (6, 300),
            (7, 300),
            (8, 300),
            (9, 300),
            (10, 200),
            (11, 100)
        ]
    );
    assert_eq!(m.clients.len(), 3);
    assert!(m.shard.is_none() && m.config.load.shard.is_none());
}

#[test]
fn a_missing_client_shows_and_makes_the_result_invalid() {
    let m = merge(&[client(0, 2, 0.0, &[1000; 10])]).unwrap();
    assert!(!m.valid);
    assert_eq!(m.clients[1].status, "missing");
    assert!(
        m.problems
            .iter()
            .any(|p| p.starts_with("client 1/2: no result")),
        "{:?}",
        m.problems
    );
}

#[test]
fn results_of_different_runs_or_no_shard_are_refused() {
    let a = client(0, 2, 0.0, &[1000; 10]);
    let mut b = client(1, 2, 0.0, &[1000; 10]);
    b.1.config.workload.keys += 1;
    let e = merge(&[a.clone(), b]).unwrap_err().to_string();
    assert!(
        e.contains("config.workload.keys") && !e.contains('\n'),
        "{e}"
    );
    let mut c = client(1, 3, 0.0, &[1000; 10]);
    c.1.config.load.shard = c.1.shard;
    let e = merge(&[a.clone(), c]).unwrap_err().to_string();
    assert!(e.contains("not clients of one run"), "{e}");
    let mut d = client(1, 2, 0.0, &[1000; 10]);
    d.1.target.url = "redis://10.0.0.9:6379".into();
    assert!(
        merge(&[a.clone(), d])
            .unwrap_err()
            .to_string()
            .contains("target.url")
    );
    let mut single = a.clone();
    single.1.shard = None;
    assert!(
        merge(&[single])
            .unwrap_err()
            .to_string()
            .contains("--shard")
    );
    let e = merge(&[a.clone(), a]).unwrap_err().to_string();
    assert!(e.contains("given twice"), "{e}");
}

#[test]
fn minutes_merge_with_minutes_and_seconds_past_the_per_second_part_join_them() {
    // Timelines keeping 2 s per second; entries (second, span, requests).
    let timeline = |entries: &[(i64, u32, u64)]| -> Vec<Second> {
        entries
            .iter()
            .map(|&(second, span_s, requests)| Second {
                second,
                span_s,
                requests,
                ..Default::default()
            })
            .collect()
    };
    let with = |index, offset_s, entries: &[(i64, u32, u64)]| {
        let (name, mut r) = client(index, 2, offset_s, &[1000; 10]);
        r.config.load.timeline_seconds = 2;
        r.timeline = timeline(entries);
        (name, r)
    };
    let a = with(
        0,
        0.0,
        &[(0, 1, 10), (1, 1, 10), (2, 60, 600), (62, 10, 100)],
    );
    // Client 1 began 1 s later: its second 1 is the run's second 2, in the
    // run's first minute, and so is its first minute (placed 1 s late).
    let b = with(1, 1.0, &[(0, 1, 1), (1, 1, 1), (2, 60, 60), (62, 10, 10)]);
    let m = merge(&[a.clone(), b]).unwrap();
    let got: Vec<(i64, u32, u64)> = m
        .timeline
        .iter()
        .map(|s| (s.second, s.span_s, s.requests))
        .collect();
    // The last minute runs to client 1's end (second 73).
    assert_eq!(got, [(0, 1, 10), (1, 1, 11), (2, 60, 661), (62, 11, 110)]);
    // Clients that kept different per-second parts are not clients of one run.
    let mut c = with(1, 0.0, &[(0, 1, 1)]);
    c.1.config.load.timeline_seconds = 600;
    let e = merge(&[a.clone(), c]).unwrap_err().to_string();
    assert!(e.contains("config.load.timeline_seconds"), "{e}");
    // A minute inside the per-second part is refused, not folded into a second.
    let d = with(1, 0.0, &[(0, 60, 60)]);
    let e = merge(&[a, d]).unwrap_err().to_string();
    assert!(e.contains("kept per second"), "{e}");
}
