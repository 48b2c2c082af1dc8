//! What a run measured, in the summary: throughput and bytes, requests and
//! their outcomes, latency, stale reads, the background writer, the
//! schedule's lateness and the client's own CPU.

use std::fmt::Write as _;

use crate::results::RunResult;
use crate::results::stats::num;

/// Throughput, and the bytes of values moved.
pub(super) fn throughput(s: &mut String, r: &RunResult) {
    let t = &r.totals;
    let _ = writeln!(s, "  throughput  {} req/s", num(t.throughput_rps));
    if t.value_bytes > 0 && t.duration_s > 0.0 {
        // Hits and stored writes carry a value.
        let ok = match t.keys_read {
            Some(_) => t.hits + t.sets,
            None => t.requests.saturating_sub(t.errors + t.misses),
        };
        let _ = writeln!(
            s,
            "  bytes       {} MB/s of values read and written ({} B per {})",
            num(t.value_bytes as f64 / t.duration_s / 1e6),
            num(t.value_bytes as f64 / ok.max(1) as f64),
            if t.keys_read.is_some() {
                "key found or written"
            } else {
                "request"
            }
        );
    }
}

/// The requests and their outcomes: a batch's keys per GET, hits and misses
/// (found and not found end to end with a cache), expiry, errors by kind.
pub(super) fn requests(s: &mut String, r: &RunResult) {
    let t = &r.totals;
    if let (Some(k), Some(b)) = (t.keys_read, &r.config.workload.batch) {
        let _ = writeln!(
            s,
            "  batch       {:.1} keys per GET (--batch {b}): {} keys/s; hits and misses count keys, latency is per request; {}",
            k as f64 / t.gets.max(1) as f64,
            num(k as f64 / t.duration_s.max(1e-9)),
            r.config
                .target
                .kind
                .product()
                .facts()
                .batch_reads
                .unwrap_or("")
        );
    }
    let _ = writeln!(
        s,
        "  requests    {} (GET {}, SET {}); {}, errors {}",
        t.requests,
        t.gets,
        t.sets,
        match r.cache_aside {
            Some(_) => format!(
                "found {}, not found {} (end to end: in neither the cache nor the database; the cache's own hits and misses below)",
                t.hits, t.misses
            ),
            None => format!("hits {}, misses {}", t.hits, t.misses),
        },
        t.errors
    );
    expiry(s, r);
    hot(s, r);
    if t.errors > 0 {
        let kinds: Vec<String> = t
            .errors_by_kind
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(s, "  errors by kind: {}", kinds.join(", "));
    }
}

/// A hot-key burst (`--hot-keys`): the reads it sent to its keys, and the
/// node that serves them in a cluster.
fn hot(s: &mut String, r: &RunResult) {
    let (Some((n, node)), Some(h)) = (&r.totals.hot_reads, r.config.load.hot_keys) else {
        return;
    };
    let first = h.first_key(r.config.workload.keys);
    let _ = writeln!(
        s,
        "  hot keys    {h} (--hot-keys): {n} reads ({:.1}% of the window's GETs) sent to key {}{}{}{}",
        *n as f64 * 100.0 / r.totals.gets.max(1) as f64,
        r.config.workload.key_prefix,
        first,
        match h.keys {
            1 => String::new(),
            k => format!("..{}", first + k - 1),
        },
        node.as_ref()
            .map(|n| format!(", served by {n}"))
            .unwrap_or_default()
    );
}

/// Keys that expire (`--ttl`): how many misses their expiry explains.
fn expiry(s: &mut String, r: &RunResult) {
    if r.config.workload.ttl_s == 0 {
        return;
    }
    let t = &r.totals;
    let _ = writeln!(
        s,
        "  expiry      keys live {} s (--ttl); {}",
        r.config.workload.ttl_s,
        match t.expired_misses {
            Some(e) => format!(
                "{e} of the {} misses ({:.1}% of GETs) read a key after its TTL ran out{}",
                t.misses,
                e as f64 * 100.0 / t.keys_read.unwrap_or(t.gets).max(1) as f64,
                if e < t.misses {
                    " (the others came sooner after the key's write: an eviction, or a server that counts expiry in whole seconds, as memcached does, and drops a key up to a second early)"
                } else {
                    ""
                }
            ),
            None => "which misses came from expiry is not known (the keys' write times are not tracked in this run)".into(),
        }
    );
}

/// Latency percentiles (from the intended start or the send), and the
/// service time of a paced run.
pub(super) fn latency(s: &mut String, r: &RunResult) {
    let l = &r.latency.latency_us;
    let from = if r.latency.latency_start == "intended" {
        "from intended start"
    } else {
        "from send"
    };
    let _ = writeln!(
        s,
        "  latency µs ({from}): p50 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  p99.999 {}  max {}  mean {}",
        num(l.p50),
        num(l.p90),
        num(l.p99),
        num(l.p999),
        num(l.p9999),
        num(l.p99999),
        num(l.max),
        num(l.mean)
    );
    if let Some(v) = &r.latency.service_time_us {
        let _ = writeln!(
            s,
            "  service time µs (from actual send, hides queueing): p50 {}  p99 {}  p99.9 {}  max {}",
            num(v.p50),
            num(v.p99),
            num(v.p999),
            num(v.max)
        );
    }
}

/// Stale reads: how many, how far behind, how long outdated.
pub(super) fn consistency(s: &mut String, r: &RunResult) {
    let Some(c) = &r.consistency else { return };
    let _ = writeln!(
        s,
        "  stale reads {} of {} checked ({} per million){}",
        c.stale_reads,
        c.checked_reads,
        num(c.stale_per_million_reads),
        if c.stale_reads > 0 {
            format!(
                "; behind by {} versions on average (max {}), outdated for p50 {} ms, p99 {} ms, max {} ms",
                num(c.versions_behind_mean),
                c.versions_behind_max,
                num(c.stale_age_us.p50 / 1e3),
                num(c.stale_age_us.p99 / 1e3),
                num(c.stale_age_us.max / 1e3)
            )
        } else {
            String::new()
        }
    );
}

/// The background writer beside the measured load (`--background-writes`).
pub(super) fn background(s: &mut String, r: &RunResult) {
    let Some(b) = &r.background else { return };
    let _ = writeln!(
        s,
        "  background writer: {} writes/s asked, {} done ({} writes), p99 {} µs, errors {}",
        num(b.target_rps),
        num(b.rps),
        b.writes,
        num(b.latency_us.p99),
        b.errors
    );
}

/// An open loop's schedule: the rate offered, how close its sends came to
/// their intended times, and how late they were.
pub(super) fn schedule(s: &mut String, r: &RunResult) {
    let Some(sc) = &r.latency.schedule else {
        return;
    };
    let arrivals = sc
        .arrivals
        .as_deref()
        .map(|a| format!(" ({a} arrivals)"))
        .unwrap_or_default();
    let offered = match sc.rate_shape {
        Some(shape) => format!(
            "{} req/s on average ({} at the peak; {shape})",
            num(sc.target_rps * shape.mean(0.0, r.totals.duration_s)),
            num(sc.target_rps)
        ),
        None => format!("{} req/s", num(sc.target_rps)),
    };
    let _ = write!(s, "  schedule: offered {offered}{arrivals}; ");
    match &sc.send_error_us {
        Some(e) => {
            let _ = write!(
                s,
                "sends at most {} µs early, send error p50 {} µs, p99 {} µs{}; ",
                num(sc.batch_window_us),
                num(e.p50),
                num(e.p99),
                match e.p99 <= sc.batch_window_us {
                    true => " (within the slack)",
                    false => " (past the slack: the client's timing is in the figures)",
                }
            );
        }
        None => {
            let _ = write!(s, "sends batched within {} µs; ", num(sc.batch_window_us));
        }
    }
    if sc.held_sends > 0 {
        let _ = write!(
            s,
            "{} waited for a busy connection (pipeline full: more connections would queue less); ",
            sc.held_sends
        );
    }
    let _ = writeln!(
        s,
        "{} late (>1 ms) sends, max lag {} ms, {} never sent",
        sc.late_requests,
        num(sc.max_lag_ms),
        sc.unsent
    );
}

/// kvlab's own CPU, memory and how busy its workers were.
pub(super) fn client(s: &mut String, r: &RunResult) {
    let c = &r.client;
    let _ = writeln!(
        s,
        "  client CPU  {:.2} s, {} µs/request, peak RSS {} MiB{}{}",
        c.client_cpu_s,
        num(c.client_cpu_us_per_request),
        num(c.client_peak_rss_kb as f64 / 1024.0),
        c.client_busy
            .map(|b| format!(", workers busy {:.0}%", b * 100.0))
            .unwrap_or_default(),
        match (&c.client_io, &c.client_io_why) {
            (Some(io), Some(why)) => format!("; over {io} ({why})"),
            (Some(io), None) => format!("; over {io}"),
            _ => String::new(),
        }
    );
    if let (Some(w), Some(x)) = (
        c.client_wakes_per_request,
        c.client_context_switches_per_request,
    ) {
        let _ = writeln!(
            s,
            "  client waits  {w:.2} wake-ups and {x:.2} context switches per request"
        );
    }
}
