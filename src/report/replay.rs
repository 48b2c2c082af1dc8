//! The lines of a replay's summary: the trace, its operations and what was
//! sent for each, and what kvlab could not reproduce.

use std::fmt::Write as _;

use crate::results::RunResult;
use crate::results::stats::num;

/// The replay's lines of the summary (empty for a run that replayed nothing).
pub fn lines(r: &RunResult) -> String {
    let mut s = String::new();
    let Some(p) = &r.replay else { return s };
    let _ = writeln!(
        s,
        "  trace:    {}{} at {}x: {} lines over {:.1} s of trace, mean {} req/s; {}",
        p.trace,
        if p.compressed { " (zstd)" } else { "" },
        p.speed,
        num(p.lines as f64),
        p.span_s,
        num(p.offered_rps),
        match (p.finished, &p.read_error) {
            (_, Some(e)) => format!("read stopped: {e}"),
            (true, None) => "read to its end".to_string(),
            (false, None) => "the window ended before the trace".to_string(),
        }
    );
    let ops: Vec<String> = p
        .ops
        .iter()
        .map(|o| format!("{} {} ({})", o.op, num(o.lines as f64), o.sent_as))
        .collect();
    let _ = writeln!(s, "  trace ops: {}", ops.join(", "));
    let _ = writeln!(
        s,
        "  sent:     {} GETs and {} SETs (warm-up included) of the {} the reader read{}{}",
        num((r.totals.gets + r.warmup.gets) as f64),
        num((r.totals.sets + r.warmup.sets) as f64),
        num((p.handed_gets + p.handed_sets) as f64),
        p.keys_touched
            .map(|k| format!(
                ", which touch {} of {} keys",
                num(k as f64),
                num(r.config.workload.keys as f64)
            ))
            .unwrap_or_default(),
        match p.malformed {
            0 => String::new(),
            n => format!(", {n} malformed lines skipped"),
        },
    );
    for n in &p.not_reproduced {
        let _ = writeln!(s, "  not reproduced: {n}");
    }
    s
}
