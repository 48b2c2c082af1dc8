//! The human summary of a [`RunResult`], rendered as a string.
//!
//! # Layout
//! - [`aside`]: a cache-aside run's lines (the cache, its hit ratio, memory,
//!   each leg, its counters) and what came before the window.
//! - [`servers`]: the servers' CPU and memory, all together and by role.

mod aside;
mod servers;

use std::fmt::Write as _;

use crate::results::RunResult;
use crate::results::stats::num;

/// The lines of a sharded run: this client's part and start, or, merged,
/// every client's.
fn sharding(r: &RunResult) -> String {
    let mut s = String::new();
    let c = &r.config.load;
    if let Some(sh) = r.shard {
        let conns = crate::plan::shard::local_connections(Some(sh), c.connections);
        let _ = writeln!(
            s,
            "  client:   {sh} of a sharded run: {conns} of its {} connections{}",
            c.connections,
            match c.stop {
                crate::workload::Stop::Requests(n) => {
                    let (a, b) = sh.part(n);
                    format!(", about {} of its {n} requests", b - a)
                }
                crate::workload::Stop::Duration(_) => String::new(),
            }
        );
    }
    if let Some(st) = r.start {
        let _ = writeln!(
            s,
            "  start:    at {} (Unix ms): ready {:.0} ms ahead of the warm-up, measuring began {:.2} ms late",
            st.at_unix_ms, st.margin_ms, st.late_ms
        );
    }
    if !r.clients.is_empty() {
        let _ = writeln!(s, "  merged from {} clients:", r.clients.len());
        for cl in &r.clients {
            let _ = writeln!(
                s,
                "    {:>5} {:<8} {:>10} requests, {} req/s{}{}",
                cl.shard.to_string(),
                cl.status,
                cl.requests,
                num(cl.throughput_rps),
                cl.start_late_ms
                    .map(|l| format!(", started {l:.2} ms late"))
                    .unwrap_or_default(),
                if cl.client_saturated {
                    ", SATURATED"
                } else {
                    ""
                }
            );
        }
    }
    s
}

/// The human summary of one run.
pub fn summary(r: &RunResult) -> String {
    let mut s = String::new();
    let c = &r.config;
    let t = &r.target;
    let _ = writeln!(
        s,
        "kvlab {}: {} {} ({}{})",
        match (r.clients.is_empty(), r.replay.is_some()) {
            (false, _) => "merge",
            (true, true) => "replay",
            (true, false) => "run",
        },
        t.product,
        t.version,
        if t.managed { "managed, " } else { "" },
        t.url
    );
    if let Some(line) = t.transport.as_ref().and_then(|x| x.describe()) {
        let _ = writeln!(s, "  transport: {line}");
    }
    let shape = match (c.load.rate, &c.workload.trace) {
        (_, Some(_)) => "open loop at the trace's times".to_string(),
        (Some(rate), None) => format!("open loop at {} req/s", num(rate)),
        (None, None) => "closed loop".to_string(),
    };
    let _ = writeln!(
        s,
        "  workload: {} keys x {}, {}, prefix '{}'",
        num(c.workload.keys as f64),
        match &c.workload.value_sizes {
            None => format!("{} B", c.workload.value_size),
            Some(d) => format!("{d} B (mean {} B)", num(c.workload.value_size as f64)),
        },
        match &c.workload.trace {
            Some(_) =>
                "trace keys hashed onto them, operations and times from the trace".to_string(),
            None => format!(
                "SET:GET {}, {} keys",
                c.workload.ratio, c.workload.distribution
            ),
        },
        c.workload.key_prefix
    );
    s.push_str(&super::replay::lines(r));
    if let Some(p) = c
        .workload
        .profile
        .as_deref()
        .and_then(crate::workload::profiles::profile)
    {
        let _ = writeln!(
            s,
            "  profile:  {} ({}); not reproduced: {}",
            p.name,
            p.source,
            p.not_reproduced(c.workload.ttl_s > 0)
        );
    }
    let _ = writeln!(
        s,
        "  load:     {} connections on {} threads, pipeline {}, {shape}, {:.1} s measured after {}",
        c.load.connections,
        c.load.threads,
        c.load.pipeline,
        r.duration_s,
        aside::before_window(r)
    );
    let facts = c.target.kind.product().facts();
    if !facts.consistency_levels.is_empty() {
        let level = c.target.consistency.as_deref().unwrap_or("one");
        let _ = writeln!(
            s,
            "  consistency: {} on every request",
            level.to_ascii_uppercase()
        );
    }
    if let Some(mode) = &r.query_mode {
        let _ = writeln!(s, "  query mode: {mode}");
    }
    if !t.settings.is_empty() {
        let set: Vec<String> = t.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(s, "  server settings: {}", set.join(" "));
    }
    if let Some(p) = &r.pooler {
        let set: Vec<String> = p.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(s, "  pooler:   {} {}, {}", p.name, p.version, set.join(" "));
    }
    s.push_str(&sharding(r));
    if let Some(l) = &r.load {
        let _ = writeln!(
            s,
            "  data load: {} keys in {:.2} s ({} keys/s)",
            num(l.keys as f64),
            l.seconds,
            num(l.keys_per_s)
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "  throughput  {} req/s", num(r.throughput_rps));
    if r.value_bytes > 0 && r.duration_s > 0.0 {
        // Hits and stored writes carry a value.
        let ok = match r.keys_read {
            Some(_) => r.hits + r.sets,
            None => r.requests.saturating_sub(r.errors + r.misses),
        };
        let _ = writeln!(
            s,
            "  bytes       {} MB/s of values read and written ({} B per {})",
            num(r.value_bytes as f64 / r.duration_s / 1e6),
            num(r.value_bytes as f64 / ok.max(1) as f64),
            if r.keys_read.is_some() {
                "key found or written"
            } else {
                "request"
            }
        );
    }
    if let (Some(k), Some(b)) = (r.keys_read, &r.config.workload.batch) {
        let _ = writeln!(
            s,
            "  batch       {:.1} keys per GET (--batch {b}): {} keys/s; hits and misses count keys, latency is per request; {}",
            k as f64 / r.gets.max(1) as f64,
            num(k as f64 / r.duration_s.max(1e-9)),
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
        r.requests,
        r.gets,
        r.sets,
        match r.cache_aside {
            Some(_) => format!(
                "found {}, not found {} (end to end: in neither the cache nor the database; the cache's own hits and misses below)",
                r.hits, r.misses
            ),
            None => format!("hits {}, misses {}", r.hits, r.misses),
        },
        r.errors
    );
    if r.config.workload.ttl_s > 0 {
        let _ = writeln!(
            s,
            "  expiry      keys live {} s (--ttl); {}",
            r.config.workload.ttl_s,
            match r.expired_misses {
                Some(e) => format!(
                    "{e} of the {} misses ({:.1}% of GETs) read a key after its TTL ran out{}",
                    r.misses,
                    e as f64 * 100.0 / r.keys_read.unwrap_or(r.gets).max(1) as f64,
                    if e < r.misses {
                        " (the others came sooner after the key's write: an eviction, or a server that counts expiry in whole seconds, as memcached does, and drops a key up to a second early)"
                    } else {
                        ""
                    }
                ),
                None => "which misses came from expiry is not known (the keys' write times are not tracked in this run)".into(),
            }
        );
    }
    if r.errors > 0 {
        let kinds: Vec<String> = r
            .errors_by_kind
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(s, "  errors by kind: {}", kinds.join(", "));
    }
    let l = &r.latency_us;
    let from = if r.latency_start == "intended" {
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
    if let Some(v) = &r.service_time_us {
        let _ = writeln!(
            s,
            "  service time µs (from actual send, hides queueing): p50 {}  p99 {}  p99.9 {}  max {}",
            num(v.p50),
            num(v.p99),
            num(v.p999),
            num(v.max)
        );
    }
    if let Some(a) = &r.cache_aside {
        aside::lines(&mut s, r, a);
    }
    if let Some(c) = &r.consistency {
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
    if let Some(b) = &r.background {
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
    if let Some(sc) = &r.schedule {
        let _ = writeln!(
            s,
            "  schedule: offered {} req/s; {} late (>1 ms) sends, max lag {} ms, {} never sent; sends batched within {} µs",
            num(sc.target_rps),
            sc.late_requests,
            num(sc.max_lag_ms),
            sc.unsent,
            num(sc.batch_window_us)
        );
    }
    let _ = writeln!(
        s,
        "  client CPU  {:.2} s, {} µs/request, peak RSS {} MiB{}",
        r.client_cpu_s,
        num(r.client_cpu_us_per_request),
        num(r.client_peak_rss_kb as f64 / 1024.0),
        r.client_busy
            .map(|b| format!(", workers busy {:.0}%", b * 100.0))
            .unwrap_or_default()
    );
    servers::lines(&mut s, r);
    if let Some(cc) = &r.server_counters {
        let verdict = if cc.agrees() && cc.slack > 0 {
            format!(
                "agree, {} (kvlab sent at most {} more, in flight at the kill)",
                aside::counted_across(r, crate::plan::events::EventOn::Target),
                cc.slack
            )
        } else if cc.agrees() && !cc.server.exact {
            "agree within 0.1% (table statistics, not exact counters)".to_string()
        } else if cc.agrees() {
            "agree".to_string()
        } else if cc.exclusive {
            "DISAGREE".to_string()
        } else {
            "differ (other clients may use this server)".to_string()
        };
        let _ = writeln!(
            s,
            "  server counters ({}): GET {} / SET {}, kvlab sent GET {} / SET {}{}: {verdict}",
            aside::counted_phases(r),
            cc.server.gets,
            cc.server.sets,
            cc.kvlab_gets,
            cc.kvlab_sets,
            if cc.server.per_key {
                " (GET: keys read)"
            } else {
                ""
            }
        );
    }
    if let Some(sh) = &r.connections.sharded {
        let _ = writeln!(
            s,
            "  sharded: {} nodes; redirects followed: MOVED {}, ASK {}",
            sh.nodes, sh.moved, sh.ask
        );
    }
    if let Some(pc) = r.pooler.as_ref().and_then(|p| p.counters.as_ref()) {
        let setup = if pc.set_up_queries > 0 {
            format!(" + {} set-up round trips", pc.set_up_queries)
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  pooler counters ({}): {} queries, {} transactions, kvlab sent {}{setup}: {}",
            aside::counted_phases(r),
            pc.pooler.queries,
            pc.pooler.transactions,
            pc.kvlab_requests,
            match (pc.agrees(), pc.exact) {
                (true, true) => "agree",
                (true, false) => "at most, as pipelined requests merge in its count",
                (false, _) => "DISAGREE",
            }
        );
    }
    if r.connections.failures > 0 || r.connections.reconnects > 0 {
        let _ = writeln!(
            s,
            "  connections: {} of {} open at start, {} failed attempts, {} re-established{}",
            r.connections.established,
            r.connections.requested,
            r.connections.failures,
            r.connections.reconnects,
            r.connections
                .last_error
                .as_ref()
                .map(|e| format!("; last error: {e}"))
                .unwrap_or_default()
        );
    }
    events(&mut s, &r.events, r.cache_aside.is_some());
    if let Some(m) = &r.machine {
        let _ = writeln!(
            s,
            "  machine:  {} x {}, {} MiB, kernel {}, governor {}, THP {}, last-level cache {}{}",
            m.cores,
            m.cpu,
            m.memory_mib,
            m.kernel,
            m.governor.as_deref().unwrap_or("n/a"),
            m.thp.as_deref().unwrap_or("n/a"),
            m.llc_kib
                .map_or("n/a".into(), |k| format!("{} KiB", num(k as f64))),
            match r.shared_cores {
                Some(true) => "; kvlab and the server shared its cores",
                _ => "",
            }
        );
    }
    if r.interrupted {
        let _ = writeln!(
            s,
            "  NOTE: interrupted: the figures cover the run until Ctrl-C"
        );
    }
    for n in &r.suspect {
        let _ = writeln!(s, "  NOTE: {n}");
    }
    for p in &r.problems {
        let _ = writeln!(s, "  WARNING: {p}");
    }
    s
}

/// What each event did, one line each; `aside`: the target is a database
/// behind a cache (its load is the cache's misses).
pub(super) fn events(s: &mut String, events: &[crate::results::EventReport], aside: bool) {
    let load = if aside { "database reads" } else { "server" };
    for e in events {
        let errors: Vec<String> = e.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            s,
            "  event {} (took {:.0} ms){}: {load} peak {} req/s (before {}), worst p99 {} µs (before {}), errors {}{}; {}",
            e.event,
            e.took_ms,
            e.error
                .as_ref()
                .map_or(String::new(), |x| format!(", FAILED: {x}")),
            e.db_peak_rps,
            num(e.before.db_rps),
            num(e.worst_p99_us),
            num(e.before.p99_us),
            if errors.is_empty() {
                "none".to_string()
            } else {
                errors.join(", ")
            },
            match e.misses {
                0 => String::new(),
                m => format!(", {m} misses"),
            },
            match e.recovered_after_s {
                Some(t) => format!("back near its level before after {t:.0} s"),
                None => "not back near its level before by the end of the run".into(),
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{num, summary};
    use crate::results::RunResult;

    /// A cache-aside result: `start` (warm, cold, settle), the cache's counts,
    /// and the events of its plan.
    fn aside(start: &str, hits: u64, misses: u64, bypassed: u64, events: &[&str]) -> RunResult {
        let mut r: RunResult =
            serde_json::from_str(include_str!("../../../tests/fixtures/client-result.json"))
                .unwrap();
        let counters = r#"{"server": {"gets": 10, "sets": 2, "hits": 0, "misses": 0, "exact": true},
            "kvlab_gets": 10, "kvlab_sets": 2, "exclusive": true, "slack": 8}"#;
        let json = format!(
            r#"{{"cache": {{"kind": "redis", "product": "redis", "version": "7", "managed": true,
            "url": "redis://127.0.0.1:1", "settings": {{}}, "pid": 1}},
            "write_policy": "invalidate", "ttl_s": 0, "cache_hits": {hits},
            "cache_misses": {misses}, "cache_bypassed": {bypassed}, "hit_ratio": {},
            "db_reads_saved_per_s": 1, "db_reads_per_s": 1, "legs": {{}},
            "cache_cpu_s": null, "db_cpu_s": null, "cache_counters": {counters},
            "start": "{start}", "working_set": {{"data_bytes": 1, "memory_limit_bytes": 0,
            "memory_used_bytes": 1, "items": 1, "evictions": 0, "settled_after_s": 24}}}}"#,
            crate::results::aside::hit_ratio(hits, misses, bypassed).unwrap()
        );
        r.cache_aside = Some(serde_json::from_str(&json).unwrap());
        r.config.load.warmup_s = 2.0;
        r.config.load.events = events.iter().map(|e| e.parse().unwrap()).collect();
        r
    }

    #[test]
    fn the_hit_ratio_adds_up_and_is_named() {
        // 3799 hits of 3915 lookups plus 15100 reads around a dead cache.
        let s = summary(&aside("warm", 3799, 116, 15100, &["1:kill-cache"]));
        assert!(
            s.contains("hit ratio of all reads 19.98% (3799 hits, 116 misses, 15100 around the unreachable cache)"),
            "{s}"
        );
        // Nothing restarted: the counters were summed up to the kill.
        assert!(s.contains("counted up to its kill"), "{s}");
        assert!(!s.contains("across its restart"), "{s}");
        // The end-to-end misses are not the cache's.
        assert!(s.contains("not found"), "{s}");
        let s = summary(&aside("warm", 10, 1, 0, &["1:restart-cache:1"]));
        assert!(s.contains("counted across its restart"), "{s}");
    }

    #[test]
    fn a_settling_cache_is_named_before_the_window_and_beside_the_counters() {
        let s = summary(&aside("settle", 10, 1, 0, &[]));
        assert!(
            s.contains("measured after 24 s of the cache settling, then 2 s warm-up"),
            "{s}"
        );
        assert!(
            s.contains("cache counters (warm-up + run; not the settling before them)"),
            "{s}"
        );
        let s = summary(&aside("warm", 10, 1, 0, &[]));
        assert!(s.contains("measured after 2 s warm-up"), "{s}");
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(num(1234567.0), "1,234,567");
        assert_eq!(num(123.4), "123");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1.234), "1.23");
    }
}
