//! One result from the clients of one sharded run (`kvlab run --shard I/N`):
//! counts summed, latency and service-time histograms merged (never
//! averaged), the timeline aligned by wall clock and summed entry by entry, the
//! server's counters taken once and checked against the clients' sum, and
//! each client's part kept (a failed or missing client included).

mod clients;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use hdrhistogram::Histogram;
use serde_json::Value;

use crate::driver::ServerCounters;
use crate::plan::shard::Shard;
use crate::results::stats::{Percentiles, decode_histogram, encode_histogram, new_histogram};
use crate::results::timeline::{entry_of, span_of};
use crate::results::usage::ServerUse;
use crate::results::{BackgroundReport, ConnectionReport, CounterCheck, RunResult};
use crate::results::{ScheduleReport, Second, StartKept, Totals, Window};
use clients::{client, clients_of_one_run, clients_problems, missing};

/// Reads the result of one client; fails with one line when `path` is not
/// a kvlab run result.
pub fn read(path: &Path) -> Result<RunResult> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{} is not a kvlab result (not JSON: {e}); give the files of kvlab run --json",
            path.display()
        )
    })?;
    if !is_run_result(&value) {
        bail!(
            "{} is not a kvlab run result (no config and histogram); give the files of kvlab run --shard I/N --json FILE",
            path.display()
        );
    }
    serde_json::from_value(value).map_err(|e| {
        anyhow!(
            "{} is not a result this kvlab reads ({e}); merge with the kvlab version that wrote it",
            path.display()
        )
    })
}

/// Whether a JSON document looks like a [`RunResult`] (rather than a study's results).
pub fn is_run_result(v: &Value) -> bool {
    v.get("config").is_some() && v.get("histogram").is_some() && v.get("requests").is_some()
}

/// Whether the file at `path` holds a run result (for `kvlab report`).
pub fn file_is_run_result(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|v| is_run_result(&v))
}

/// Reads and merges the clients' results in `paths`.
pub fn merge_files(paths: &[PathBuf]) -> Result<RunResult> {
    let parts: Vec<(String, RunResult)> = paths
        .iter()
        .map(|p| Ok((p.display().to_string(), read(p)?)))
        .collect::<Result<_>>()?;
    merge(&parts)
}

/// Merges the results of the clients of one run, each named (for errors).
pub fn merge(parts: &[(String, RunResult)]) -> Result<RunResult> {
    let (first, count, by_index) = clients_of_one_run(parts)?;
    let rs: Vec<&RunResult> = by_index.values().copied().collect();
    let mut m = first.clone();
    m.config.load.shard = None;
    m.shard = None;
    m.target.pid = None;
    m.started_unix_s = rs.iter().map(|r| r.started_unix_s).min().unwrap_or(0);
    m.interrupted = rs.iter().any(|r| r.interrupted);
    add_counts(&mut m, &rs);
    merge_window(&mut m, &rs);
    merge_histograms(&mut m, &rs)?;
    m.latency.schedule = rs
        .iter()
        .filter_map(|r| r.latency.schedule.clone())
        .reduce(|mut a, b| {
            ScheduleReport::merge(&mut a, &b);
            a
        });
    merge_usage(&mut m, &rs);
    m.load = rs
        .iter()
        .filter_map(|r| r.load.clone())
        .reduce(|a, b| crate::results::LoadResult::of(a.keys + b.keys, a.seconds.max(b.seconds)));
    merge_connections(&mut m.connections, &rs);
    m.timeline = merged_timeline(&rs)?;
    m.background = merged_background(&rs);
    m.start = merged_start(&rs);
    // Each client's part, and its problems under its name.
    m.clients = (0..count)
        .map(|index| {
            let shard = Shard { index, count };
            match by_index.get(&index) {
                Some(r) => client(shard, r),
                None => missing(shard),
            }
        })
        .collect();
    m.problems = clients_problems(&m.clients);
    let (counters, note) = merged_counters(&rs, m.totals.gets, m.totals.sets);
    m.server_counters = counters;
    m.problems.extend(note);
    let missing = m.clients.iter().any(|c| c.status == "missing");
    m.valid =
        !missing && rs.iter().all(|r| r.valid) && m.totals.errors == 0 && m.totals.requests > 0;
    Ok(m)
}

/// The clients' counts, added up (warm-up and errors by kind included).
fn add_counts(m: &mut RunResult, rs: &[&RunResult]) {
    let t = &mut m.totals;
    let sum = |f: fn(&Totals) -> u64| rs.iter().map(|r| f(&r.totals)).sum::<u64>();
    t.requests = sum(|t| t.requests);
    t.gets = sum(|t| t.gets);
    t.sets = sum(|t| t.sets);
    t.hits = sum(|t| t.hits);
    t.misses = sum(|t| t.misses);
    t.errors = sum(|t| t.errors);
    t.value_bytes = sum(|t| t.value_bytes);
    t.expired_misses = rs.iter().map(|r| r.totals.expired_misses).sum();
    t.keys_read = rs.iter().map(|r| r.totals.keys_read).sum();
    t.hot_reads = rs.iter().try_fold((0, None), |(n, node), r| {
        let (k, at) = r.totals.hot_reads.clone()?;
        Some((n + k, node.or(at)))
    });
    t.errors_by_kind = BTreeMap::new();
    for r in rs {
        for (k, v) in &r.totals.errors_by_kind {
            *t.errors_by_kind.entry(k.clone()).or_default() += v;
        }
    }
    m.warmup = Default::default();
    for r in rs {
        m.warmup.add(&r.warmup);
    }
}

/// The window, from the first client's start to the last one's end, its
/// length and the throughput over it (the counts are added already).
fn merge_window(m: &mut RunResult, rs: &[&RunResult]) {
    let windows: Option<Vec<Window>> = rs.iter().map(|r| r.window).collect();
    m.window = windows.as_ref().map(|w| Window {
        start_unix_ms: w.iter().map(|w| w.start_unix_ms).fold(f64::MAX, f64::min),
        end_unix_ms: w.iter().map(|w| w.end_unix_ms).fold(f64::MIN, f64::max),
    });
    m.totals.duration_s = match m.window {
        Some(w) => (w.end_unix_ms - w.start_unix_ms) / 1e3,
        None => rs.iter().map(|r| r.totals.duration_s).fold(0.0, f64::max),
    }
    .max(1e-9);
    m.totals.throughput_rps = (m.totals.requests - m.totals.errors) as f64 / m.totals.duration_s;
}

/// Latency and service-time histograms merged; percentiles come from the
/// merged histogram.
fn merge_histograms(m: &mut RunResult, rs: &[&RunResult]) -> Result<()> {
    let latency = merged_histogram(rs.iter().map(|r| Some(r.histograms.histogram.as_str())))?;
    m.latency.latency_us = Percentiles::of(&latency);
    m.histograms.histogram = encode_histogram(&latency);
    if rs.iter().all(|r| r.histograms.service_histogram.is_some()) {
        let h = merged_histogram(rs.iter().map(|r| r.histograms.service_histogram.as_deref()))?;
        m.latency.service_time_us = Some(Percentiles::of(&h));
        m.histograms.service_histogram = Some(encode_histogram(&h));
    }
    Ok(())
}

/// The clients' CPU adds; the server's was sampled by each client over
/// its own window, which holds the others': the widest is taken, for the
/// run and for each server by role (the requests are added already).
fn merge_usage(m: &mut RunResult, rs: &[&RunResult]) {
    let requests = m.totals.requests;
    let clients = || rs.iter().map(|r| &r.client);
    let c = &mut m.client;
    c.client_cpu_s = clients().map(|x| x.client_cpu_s).sum();
    c.client_cpu_us_per_request = per_request(c.client_cpu_s, requests);
    c.client_busy = clients().filter_map(|x| x.client_busy).reduce(f64::max);
    c.client_saturated = clients().any(|x| x.client_saturated);
    c.client_peak_rss_kb = clients().map(|x| x.client_peak_rss_kb).max().unwrap_or(0);
    let sum =
        |f: fn(&crate::results::ClientUse) -> Option<u64>| clients().map(f).sum::<Option<u64>>();
    let (wakes, switches) = (sum(|x| x.client_wakes), sum(|x| x.client_context_switches));
    c.set_wakes(wakes, switches, requests);
    let servers = || rs.iter().map(|r| &r.server);
    let s = &mut m.server;
    s.server_cpu_s = servers().filter_map(|x| x.server_cpu_s).reduce(f64::max);
    s.server_cpu_us_per_request = s.server_cpu_s.map(|cpu| per_request(cpu, requests));
    s.server_peak_rss_kb = servers().filter_map(|x| x.server_peak_rss_kb).max();
    for u in &mut s.servers {
        let same = servers()
            .flat_map(|x| &x.servers)
            .filter(|x| x.role == u.role);
        let cpu = same.clone().filter_map(|x| x.cpu_s).reduce(f64::max);
        let peak = same.filter_map(|x| x.peak_rss_kb).max();
        *u = ServerUse::new(u.role, &u.product, cpu, peak, requests)
            .reported(u.cpu_source.as_deref(), u.rss_source.as_deref());
    }
    s.server_reported_memory = last_to_end(rs).server.server_reported_memory.clone();
}

/// The clients' connections added up; a sharded target's nodes, the most
/// any client saw.
fn merge_connections(c: &mut ConnectionReport, rs: &[&RunResult]) {
    c.established = rs.iter().map(|r| r.connections.established).sum();
    c.failures = rs.iter().map(|r| r.connections.failures).sum();
    c.reconnects = rs.iter().map(|r| r.connections.reconnects).sum();
    c.renewed = rs.iter().map(|r| r.connections.renewed).sum();
    c.renewed_in_window = rs.iter().map(|r| r.connections.renewed_in_window).sum();
    c.last_error = rs.iter().find_map(|r| r.connections.last_error.clone());
    if let Some(s) = &mut c.sharded {
        let sharded = || rs.iter().filter_map(|r| r.connections.sharded.as_ref());
        s.nodes = sharded().map(|s| s.nodes).max().unwrap_or(s.nodes);
        s.moved = sharded().map(|s| s.moved).sum();
        s.ask = sharded().map(|s| s.ask).sum();
    }
}

/// The background writer's part: each client records the whole run's rate
/// and writes its share.
fn merged_background(rs: &[&RunResult]) -> Option<BackgroundReport> {
    rs.iter()
        .filter_map(|r| r.background.clone())
        .reduce(|mut a, b| {
            a.target_rps = a.target_rps.max(b.target_rps);
            a.writes += b.writes;
            a.errors += b.errors;
            a.rps += b.rps;
            a.latency_us = worst(&a.latency_us, &b.latency_us);
            a
        })
}

/// The sum of the encoded histograms.
fn merged_histogram<'a>(hs: impl Iterator<Item = Option<&'a str>>) -> Result<Histogram<u64>> {
    let mut sum = new_histogram();
    for h in hs.flatten() {
        let h = decode_histogram(h).context("a result's histogram is damaged")?;
        sum.add(&h)
            .map_err(|e| anyhow!("cannot add histograms: {e:?}"))?;
    }
    Ok(sum)
}

/// The timeline of the whole run: each client's entries placed by its
/// window's wall-clock start and summed; percentiles from the merged
/// histograms (the worst client's when a result has none). The run's rule
/// holds (its `load.timeline_seconds`, equal on every client): a second
/// placed past the per-second part joins its minute, and a client's minute
/// that its start offset moved off the run's minutes joins the one holding
/// its first second (placed to within that offset, as seconds are).
fn merged_timeline(rs: &[&RunResult]) -> Result<Vec<Second>> {
    let start = rs
        .iter()
        .filter_map(|r| r.window.map(|w| w.start_unix_ms))
        .fold(f64::MAX, f64::min);
    let per_second = rs
        .first()
        .map_or(1, |r| i64::from(r.config.load.timeline_seconds.max(1)));
    let mut end = 0;
    let mut out: BTreeMap<i64, (Second, Option<Histogram<u64>>)> = BTreeMap::new();
    for r in rs {
        let offset = r
            .window
            .map_or(0, |w| ((w.start_unix_ms - start) / 1e3).round() as i64);
        for s in &r.timeline {
            let placed = s.second + offset;
            if s.span() > 1 && placed < per_second {
                bail!(
                    "cannot merge: a client's timeline has a minute from second {placed}, inside the run's {per_second} s kept per second; give the clients' files as kvlab run wrote them"
                );
            }
            end = end.max(placed + s.span());
            let at = entry_of(placed, per_second);
            let e = out.entry(at).or_insert_with(|| {
                (
                    Second {
                        second: at,
                        ..Default::default()
                    },
                    Some(new_histogram()),
                )
            });
            e.0.requests += s.requests;
            e.0.errors += s.errors;
            e.0.timeouts += s.timeouts;
            e.0.misses += s.misses;
            // Each client offered its share of a shaped rate.
            if let Some(o) = s.offered_rps {
                *e.0.offered_rps.get_or_insert(0.0) += o;
            }
            for (k, n) in &s.error_kinds {
                *e.0.error_kinds.entry(k.clone()).or_default() += n;
            }
            e.0.p50_us = e.0.p50_us.max(s.p50_us);
            e.0.p99_us = e.0.p99_us.max(s.p99_us);
            e.0.p999_us = e.0.p999_us.max(s.p999_us);
            e.1 = match (e.1.take(), &s.histogram) {
                (Some(mut h), Some(x)) => {
                    let x = decode_histogram(x).context("a result's timeline is damaged")?;
                    h.add(&x)
                        .map_err(|e| anyhow!("cannot add histograms: {e:?}"))?;
                    Some(h)
                }
                _ => None,
            };
        }
    }
    Ok(out
        .into_values()
        .map(|(mut s, h)| {
            s.span_s = span_of(s.second, per_second, end);
            if let Some(h) = h.filter(|h| !h.is_empty()) {
                let p = Percentiles::of(&h);
                (s.p50_us, s.p99_us, s.p999_us) = (p.p50, p.p99, p.p999);
            }
            s
        })
        .collect())
}

/// The server's counters taken once: from the latest reading before any
/// client's load to the latest reading after, beside the clients' sum.
fn merged_counters(
    rs: &[&RunResult],
    gets: u64,
    sets: u64,
) -> (Option<CounterCheck>, Option<String>) {
    let checks: Vec<&CounterCheck> = rs
        .iter()
        .filter_map(|r| r.server_counters.as_ref())
        .collect();
    if checks.len() < rs.len() {
        return (
            None,
            Some("no server counters to cross-check: a client could not read them".into()),
        );
    }
    let warm: u64 = rs.iter().map(|r| r.warmup.gets).sum();
    let warm_sets: u64 = rs.iter().map(|r| r.warmup.sets).sum();
    let background: u64 = rs
        .iter()
        .filter_map(|r| r.background.as_ref())
        .map(|b| b.writes)
        .sum();
    let latest = |i: usize| -> Option<ServerCounters> {
        checks
            .iter()
            .map(|c| c.raw.map(|r| r[i]))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .max_by_key(|c| (c.gets + c.sets, c.gets))
    };
    let check = CounterCheck {
        server: match latest(0).zip(latest(1)) {
            Some((before, after)) => after.since(&before),
            None => checks
                .iter()
                .map(|c| c.server)
                .max_by_key(|s| s.gets + s.sets)
                .unwrap_or(checks[0].server),
        },
        kvlab_gets: gets + warm,
        kvlab_sets: sets + warm_sets + background,
        exclusive: false,
        raw: None,
        slack: 0,
    };
    let note = (!check.agrees()).then(|| {
        format!(
            "the server counted GET {} / SET {} but the clients together sent GET {} / SET {} (another client of the server, or a client that wrote no result?)",
            check.server.gets, check.server.sets, check.kvlab_gets, check.kvlab_sets
        )
    });
    (Some(check), note)
}

/// How the clients kept `--start-at`: the latest start, the smallest margin.
fn merged_start(rs: &[&RunResult]) -> Option<StartKept> {
    rs.iter()
        .map(|r| r.start)
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .reduce(|a, b| StartKept {
            at_unix_ms: a.at_unix_ms,
            late_ms: a.late_ms.max(b.late_ms),
            margin_ms: a.margin_ms.min(b.margin_ms),
        })
}

/// The client whose window ended last.
fn last_to_end<'a>(rs: &[&'a RunResult]) -> &'a RunResult {
    rs.iter()
        .copied()
        .max_by(|a, b| {
            let end = |r: &RunResult| r.window.map_or(0.0, |w| w.end_unix_ms);
            end(a).total_cmp(&end(b))
        })
        .expect("at least one result")
}

/// The larger of each percentile (for figures kept only as percentiles).
fn worst(a: &Percentiles, b: &Percentiles) -> Percentiles {
    Percentiles {
        mean: a.mean.max(b.mean),
        p50: a.p50.max(b.p50),
        p90: a.p90.max(b.p90),
        p99: a.p99.max(b.p99),
        p999: a.p999.max(b.p999),
        p9999: a.p9999.max(b.p9999),
        p99999: a.p99999.max(b.p99999),
        max: a.max.max(b.max),
    }
}

fn per_request(cpu_s: f64, requests: u64) -> f64 {
    if requests > 0 {
        cpu_s * 1e6 / requests as f64
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests;
