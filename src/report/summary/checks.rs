//! What vouches for a run's figures, in the summary: the servers' own
//! counters against what kvlab sent, the connections, each event, the
//! machine; then the notes and warnings.

use std::fmt::Write as _;

use crate::plan::CacheStart;
use crate::plan::events::{EventAction, EventOn};
use crate::results::stats::num;
use crate::results::{EventReport, RunResult};

/// One check of a server's own counters against what kvlab sent:
/// `  NAME counters (PHASES): THEIRS, kvlab sent OURS: VERDICT`.
pub(super) fn counter_line(
    s: &mut String,
    r: &RunResult,
    name: &str,
    theirs: &str,
    ours: &str,
    verdict: &str,
) {
    let _ = writeln!(
        s,
        "  {name} counters ({}): {theirs}, kvlab sent {ours}: {verdict}",
        counted_phases(r)
    );
}

/// The target's and the pooler's counters, and a cluster's redirects.
pub(super) fn counters(s: &mut String, r: &RunResult) {
    if let Some(cc) = &r.server_counters {
        let verdict = if cc.agrees() && cc.slack > 0 {
            format!(
                "agree, {} (kvlab sent at most {} more, in flight at the kill)",
                counted_across(r, EventOn::Target),
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
        let per_key = if cc.server.per_key {
            " (GET: keys read)"
        } else {
            ""
        };
        counter_line(
            s,
            r,
            "server",
            &format!("GET {} / SET {}", cc.server.gets, cc.server.sets),
            &format!("GET {} / SET {}{per_key}", cc.kvlab_gets, cc.kvlab_sets),
            &verdict,
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
        counter_line(
            s,
            r,
            "pooler",
            &format!(
                "{} queries, {} transactions",
                pc.pooler.queries, pc.pooler.transactions
            ),
            &format!("{}{setup}", pc.kvlab_requests),
            match (pc.agrees(), pc.exact) {
                (true, true) => "agree",
                (true, false) => "at most, as pipelined requests merge in its count",
                (false, _) => "DISAGREE",
            },
        );
    }
}

/// Connections that failed or were re-established, and the last error.
pub(super) fn connections(s: &mut String, r: &RunResult) {
    let c = &r.connections;
    if let Some(life) = r.config.load.conn_life {
        let _ = writeln!(
            s,
            "  connections: each lives {life} (--conn-life): {} opened anew in the window, {} per second",
            c.renewed_in_window,
            num(c.renewed_in_window as f64 / r.totals.duration_s.max(1e-9))
        );
    }
    if c.failures == 0 && c.reconnects == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "  connections: {} of {} open at start, {} failed attempts, {} re-established{}",
        c.established,
        c.requested,
        c.failures,
        c.reconnects,
        c.last_error
            .as_ref()
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default()
    );
}

/// What each event did, one line each; with a cache in front, the target is
/// a database whose load is the cache's misses.
pub(super) fn events(s: &mut String, r: &RunResult) {
    let load = if r.cache_aside.is_some() {
        "database reads"
    } else {
        "server"
    };
    for e in &r.events {
        event(s, e, load);
    }
}

/// One event's line: what it did to the `load` and to latency, its errors,
/// and whether the load came back.
fn event(s: &mut String, e: &EventReport, load: &str) {
    let errors: Vec<String> = e.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(
        s,
        "  event {} (took {:.0} ms){}: {load} peak {} req/s (before {}), worst p99 {} µs (before {}), errors {}{}; {}",
        e.event,
        e.took_ms,
        match (&e.error, &e.note) {
            (Some(x), _) => format!(", FAILED: {x}"),
            (None, Some(n)) => format!(", {n}"),
            (None, None) => String::new(),
        },
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

/// The machine the run measured on.
pub(super) fn machine(s: &mut String, r: &RunResult) {
    let Some(m) = &r.host.machine else { return };
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
        match r.host.shared_cores {
            Some(true) => "; kvlab and the server shared its cores",
            _ => "",
        }
    );
}

/// An interruption, what makes the figures suspect, and the problems.
pub(super) fn notes(s: &mut String, r: &RunResult) {
    if r.interrupted {
        let _ = writeln!(
            s,
            "  NOTE: interrupted: the figures cover the run until Ctrl-C"
        );
    }
    for n in &r.host.suspect {
        let _ = writeln!(s, "  NOTE: {n}");
    }
    for p in &r.problems {
        let _ = writeln!(s, "  WARNING: {p}");
    }
}

/// The phases the servers' counters cover: read before the warm-up and after
/// the window, so a settling cache's warming before them is not counted.
pub(super) fn counted_phases(r: &RunResult) -> &'static str {
    match r
        .cache_aside
        .as_ref()
        .is_some_and(|a| a.start == CacheStart::Settle)
    {
        true => "warm-up + run; not the settling before them",
        false => "warm-up + run",
    }
}

/// How counters were summed over the kills of the server `on`: across a
/// restart, or only up to a kill it did not come back from.
pub(super) fn counted_across(r: &RunResult, on: EventOn) -> &'static str {
    let restarted = r
        .config
        .load
        .events
        .iter()
        .any(|e| e.on == on && matches!(e.action, EventAction::Restart { .. }));
    match restarted {
        true => "counted across its restart",
        false => "counted up to its kill (it was not started again)",
    }
}
