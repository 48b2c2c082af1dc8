//! A replicated target's lines of the summary: where reads went, and each
//! server's reads, writes, own counters, stale reads, CPU, memory and lag.

use std::fmt::Write as _;

use crate::results::RunResult;
use crate::results::replication::ServerReads;
use crate::results::stats::{count, num};

/// The lines of a run against a database with read replicas (none without).
pub(super) fn section(s: &mut String, r: &RunResult) {
    let Some(rep) = &r.replication else {
        return;
    };
    let how = match rep.read_from.as_str() {
        "primary" => "reads and writes to the primary (the replicas only follow it)",
        "any" => "reads to the primary and the replicas in turn, writes to the primary",
        _ => "reads to the replicas in turn, writes to the primary",
    };
    let _ = writeln!(s, "  read replicas: {how}");
    for x in &rep.servers {
        let _ = writeln!(s, "    {}", line(x));
    }
}

/// One server's line.
fn line(x: &ServerReads) -> String {
    let mut l = format!(
        "{:<7} {}  reads {}, writes {}",
        x.role,
        x.server,
        count(x.reads),
        count(x.writes)
    );
    if let (Some(g), Some(st)) = (x.counted_gets, x.counted_sets) {
        let _ = write!(
            l,
            " (its counters, warm-up + run: GET {} / SET {})",
            count(g),
            count(st)
        );
    }
    if x.stale_reads > 0 {
        let _ = write!(
            l,
            ", {} stale ({} per million, at most {} µs behind)",
            count(x.stale_reads),
            num(x.stale_per_million),
            num(x.stale_age_max_us.unwrap_or(0.0))
        );
    }
    if let Some(c) = x.cpu_s {
        let _ = write!(l, ", CPU {c:.2} s");
    }
    if let Some(kb) = x.peak_rss_kb {
        let _ = write!(l, ", peak RSS {:.0} MiB", kb as f64 / 1024.0);
    }
    if let Some(state) = &x.state {
        let _ = write!(l, ", {state}");
    }
    if let Some(lag) = x.lag_s_max {
        let _ = write!(l, ", lag at most {} ms", num(lag * 1e3));
    }
    if let Some(b) = x.bytes_behind_max {
        let _ = write!(l, " ({} bytes of log)", count(b));
    }
    l
}
