//! A near cache's lines of the summary: its setting, what it answered and
//! held, the invalidations it heard and their delay, what it left the server.

use std::fmt::Write as _;

use crate::results::RunResult;
use crate::results::near::NearReport;
use crate::results::stats::{count, num};

/// The lines of a run with a near cache (none without).
pub(super) fn section(s: &mut String, r: &RunResult) {
    if let Some(n) = &r.near_cache {
        lines(s, n);
    }
}

/// The lines of near cache report `n`.
fn lines(s: &mut String, n: &NearReport) {
    let reads = n.hits + n.misses;
    let _ = writeln!(s, "  near cache  {}", n.described);
    let _ = writeln!(
        s,
        "              answered {:.1}% of reads ({} of {}, never sent); the server got the other {}{}; {} evictions",
        n.hit_ratio * 100.0,
        count(n.hits),
        count(reads),
        count(n.misses),
        match n.expired {
            0 => String::new(),
            e => format!(" ({} past the TTL)", count(e)),
        },
        count(n.evictions),
    );
    let _ = writeln!(
        s,
        "              held at most {:.1} MiB, {} entries ({} thread{}, each its own)",
        n.peak_bytes as f64 / (1 << 20) as f64,
        count(n.peak_items),
        n.threads,
        if n.threads == 1 { "" } else { "s" },
    );
    if n.invalidation_messages > 0 || n.flushes > 0 {
        let delay = match (n.delay_p50_us, n.delay_p99_us, n.delay_max_us) {
            (Some(p50), Some(p99), Some(max)) => format!(
                "; from the write's acknowledgement to the invalidation p50 {} µs, p99 {} µs, max {} µs ({} timed, {} came before the acknowledgement)",
                num(p50),
                num(p99),
                num(max),
                count(n.delays_measured),
                count(n.before_ack)
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "              invalidations: {} messages naming {} keys, {} of them held{}{}",
            count(n.invalidation_messages),
            count(n.keys_invalidated),
            count(n.entries_invalidated),
            match n.flushes {
                0 => String::new(),
                f => format!(", {f} flushes"),
            },
            delay
        );
    }
}
