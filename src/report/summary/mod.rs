//! The human summary of a [`RunResult`], rendered as a string: one function
//! per section, called in the order the summary reads.
//!
//! # Layout
//! - this file: what ran (the target, workload, load, clients, data load).
//! - [`figures`]: what was measured (throughput, requests, latency, stale
//!   reads, the background writer, the schedule, the client's CPU).
//! - [`aside`]: a cache-aside run's lines (the cache, its hit ratio, memory,
//!   each leg, its counters) and what came before the window.
//! - [`servers`]: the servers' CPU and memory, all together and by role.
//! - [`checks`]: what vouches for the figures (the servers' own counters,
//!   connections, events, the machine) and the notes and warnings.

mod aside;
mod checks;
mod figures;
mod near;
mod replication;
mod servers;

use std::fmt::Write as _;

use crate::plan::Stop;
use crate::results::RunResult;
use crate::results::stats::num;

/// The human summary of one run.
pub fn summary(r: &RunResult) -> String {
    const SECTIONS: &[fn(&mut String, &RunResult)] = &[
        header,
        workload,
        load,
        clients,
        data,
        figures::throughput,
        figures::requests,
        figures::latency,
        aside::section,
        near::section,
        replication::section,
        figures::consistency,
        figures::background,
        figures::schedule,
        figures::client,
        servers::lines,
        checks::counters,
        checks::connections,
        checks::events,
        checks::machine,
        checks::notes,
    ];
    let mut s = String::new();
    for section in SECTIONS {
        section(&mut s, r);
    }
    s
}

/// What ran against what: `kvlab run: redis 7.2 (managed, redis://…)`, and
/// the transport when it is not plain TCP.
fn header(s: &mut String, r: &RunResult) {
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
}

/// The keys, values and operations; a replay's trace; the production
/// profile the workload came from.
fn workload(s: &mut String, r: &RunResult) {
    let w = &r.config.workload;
    let _ = writeln!(
        s,
        "  workload: {} keys x {}, {}, prefix '{}'",
        num(w.keys as f64),
        match &w.value_sizes {
            None => format!("{} B", w.value_size),
            Some(d) => format!("{d} B (mean {} B)", num(w.value_size as f64)),
        },
        match &w.trace {
            Some(_) =>
                "trace keys hashed onto them, operations and times from the trace".to_string(),
            None => format!("SET:GET {}, {} keys", w.ratio, w.distribution),
        },
        w.key_prefix
    );
    s.push_str(&super::replay::lines(r));
    if let Some(p) = &r.profile {
        let _ = writeln!(
            s,
            "  profile:  {} ({}); not reproduced: {}",
            p.name, p.source, p.not_reproduced
        );
    }
}

/// The round trips kvlab emulated, if any, and what they are.
fn network(s: &mut String, r: &RunResult) {
    let l = &r.config.load;
    let cache = l.cache_rtt.filter(|_| r.config.cache.is_some());
    if l.rtt.is_none() && cache.is_none() {
        return;
    }
    let target = l
        .rtt
        .map_or("no round trip added to the target".into(), |d| {
            format!("round trip {d} to the target")
        });
    let cache = cache
        .map(|c| format!(", {c} to the cache"))
        .unwrap_or_default();
    let real = match r.target.managed {
        true => "",
        false => "; it adds to the real network's to a server kvlab did not start",
    };
    let _ = writeln!(
        s,
        "  network:  {target}{cache}, emulated by kvlab (a delay only: no loss, no bandwidth limit); latency includes it{real}"
    );
}

/// How hard and how: connections, threads, pipeline, pacing and the window;
/// the consistency level, query mode, server settings and pooler.
fn load(s: &mut String, r: &RunResult) {
    let c = &r.config;
    let shape = match (c.load.rate, &c.workload.trace) {
        (_, Some(_)) => "open loop at the trace's times".to_string(),
        (Some(rate), None) if !c.load.rate_shape.is_steady() => format!(
            "open loop peaking at {} req/s, {} ({} arrivals)",
            num(rate),
            c.load.rate_shape,
            c.load.arrivals.name()
        ),
        (Some(rate), None) => format!(
            "open loop at {} req/s ({} arrivals)",
            num(rate),
            c.load.arrivals.name()
        ),
        (None, None) => "closed loop".to_string(),
    };
    let _ = writeln!(
        s,
        "  load:     {} connections on {} threads, pipeline {}, {shape}, {:.1} s measured after {}",
        c.load.connections,
        c.load.threads,
        c.load.pipeline,
        r.totals.duration_s,
        aside::before_window(r)
    );
    network(s, r);
    let facts = c.target.kind.product().facts();
    if !facts.consistency_levels.is_empty() {
        let level = c.target.consistency.map_or("one", |l| l.name());
        let _ = writeln!(
            s,
            "  consistency: {} on every request",
            level.to_ascii_uppercase()
        );
    }
    if let Some(mode) = &r.query_mode {
        let _ = writeln!(s, "  query mode: {mode}");
    }
    if !r.target.settings.is_empty() {
        let _ = writeln!(s, "  server settings: {}", settings(&r.target.settings));
    }
    if let Some(p) = &r.pooler {
        let _ = writeln!(
            s,
            "  pooler:   {} {}, {}",
            p.name,
            p.version,
            settings(&p.settings)
        );
    }
}

/// Settings as `key=value key=value`.
fn settings(set: &std::collections::BTreeMap<String, String>) -> String {
    let set: Vec<String> = set.iter().map(|(k, v)| format!("{k}={v}")).collect();
    set.join(" ")
}

/// The lines of a sharded run: this client's part and start, or, merged,
/// every client's.
fn clients(s: &mut String, r: &RunResult) {
    let c = &r.config.load;
    if let Some(sh) = r.shard {
        let conns = crate::plan::shard::local_connections(Some(sh), c.connections);
        let _ = writeln!(
            s,
            "  client:   {sh} of a sharded run: {conns} of its {} connections{}",
            c.connections,
            match c.stop {
                Stop::Requests(n) => {
                    let (a, b) = sh.part(n);
                    format!(", about {} of its {n} requests", b - a)
                }
                Stop::Duration(_) => String::new(),
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
}

/// The data load before the run, and the blank line that ends what ran.
fn data(s: &mut String, r: &RunResult) {
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
