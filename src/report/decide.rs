//! The decision for a stated load as words and as a page: the answer and
//! its reason first, then one row per architecture (each naming the
//! measurement it comes from), the miss-ratio curve, the cache loss, and
//! every extrapolation. A pure function of the [`Decision`].

use std::fmt::Write as _;

use crate::results::decide::{Architecture, CurvePoint, Decision, bytes};
use crate::results::stats::num;

/// A cost as said: whole units, cents below 10.
fn money(c: f64) -> String {
    match c < 10.0 {
        true => format!("{c:.2}"),
        false => num(c.round()),
    }
}

/// Bytes as said; `-` when not known.
fn gib(b: Option<u64>) -> String {
    b.map_or("-".into(), bytes)
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or("-".into(), f)
}

/// The cells of one point of the curve: memory, hit ratio, database reads
/// per second left at the stated rate, source.
fn curve_cells(p: &CurvePoint) -> [String; 4] {
    [
        gib(Some(p.cache_memory_bytes)),
        format!("{:.1}%", p.hit_ratio * 100.0),
        num(p.db_reads_per_s),
        match p.trace_hit_ratio {
            Some(t) => format!("{} (the trace's: {:.1}%)", p.source, t * 100.0),
            None => p.source.clone(),
        },
    ]
}

/// The cells of one architecture's row, in the table's order.
fn cells(d: &Decision, a: &Architecture) -> Vec<String> {
    vec![
        a.name.clone(),
        a.product.clone(),
        opt(a.server_cores, |c| format!("{c:.2}")),
        gib(a.memory_bytes),
        a.machines.map_or("-".into(), |m| m.to_string()),
        opt(a.monthly_cost, |c| {
            format!("{} {}", money(c), d.load.currency)
        }),
        opt(a.p99_ms, |p| format!("{} ms", num(p))),
        match (a.within_goal, &a.why_not) {
            (true, _) => "yes".into(),
            (false, Some(w)) => format!("no: {w}"),
            (false, None) => "no".into(),
        },
        opt(a.hit_ratio, |h| format!("{:.1}%", h * 100.0)),
        opt(a.stale_reads_per_million, |s| format!("{s:.1}")),
        a.on_cache_loss.clone().unwrap_or_else(|| "-".into()),
        a.measured_from.clone(),
    ]
}

const HEAD: [&str; 12] = [
    "architecture",
    "servers",
    "server cores",
    "memory",
    "machines",
    "monthly cost",
    "p99 measured",
    "within the goal",
    "hit ratio of all reads",
    "stale reads / M",
    "on cache loss",
    "measured from",
];

/// The load as stated, in one line.
fn load_line(d: &Decision) -> String {
    let l = &d.load;
    format!(
        "{} req/s, p99 ≤ {} ms, {} keys × {} B, SET:GET {}, {} keys",
        num(l.rps),
        l.p99_ms,
        num(l.keys as f64),
        l.value_size,
        l.ratio,
        l.distribution
    )
}

/// The decision as text: the answer first.
pub fn text(d: &Decision) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "kvlab decide: {}", load_line(d));
    let _ = writeln!(
        s,
        "\nDECISION: {}: {}.\n",
        d.decision.answer, d.decision.because
    );
    for b in &d.host_busy {
        let _ = writeln!(s, "NOTE: {b}.");
    }
    for a in &d.architectures {
        let c = cells(d, a);
        let _ = writeln!(
            s,
            "  {:<17} {} — {} cores, {}, {} machine(s), {} a month; p99 {}; within the goal: {}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        );
        let figures: Vec<String> = [
            a.hit_ratio
                .map(|_| format!("hit ratio of all reads {}", c[8])),
            a.stale_reads_per_million
                .map(|_| format!("stale reads per million {}", c[9])),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !figures.is_empty() {
            let _ = writeln!(s, "               {}", figures.join(", "));
        }
        if let Some(l) = &a.on_cache_loss {
            let _ = writeln!(s, "               on cache loss: {l}");
        }
        let _ = writeln!(s, "               from: {}", a.measured_from);
        if !a.servers.is_empty() {
            let _ = writeln!(s, "               sized: {}", servers_line(d, a));
        }
        if let Some(w) = &a.model_warning {
            let _ = writeln!(s, "               NOTE: {w}");
        }
    }
    if !d.miss_ratio_curve.is_empty() {
        let _ = writeln!(
            s,
            "\n  miss-ratio curve (cache memory at the stated data → hit ratio of all reads, database reads/s left at the stated rate):"
        );
        for [m, h, r, src] in d.miss_ratio_curve.iter().map(curve_cells) {
            let _ = writeln!(s, "    {m:>10} → {h}, {r} reads/s ({src})");
        }
    }
    let _ = writeln!(s, "\n  extrapolations:");
    for e in &d.extrapolations {
        let _ = writeln!(s, "    - {e}");
    }
    s
}

/// Each server of `a` as the one method sized it: its operations per second
/// at the stated load over its rate per core, its machines and their cost.
fn servers_line(d: &Decision, a: &Architecture) -> String {
    let each: Vec<String> = a
        .servers
        .iter()
        .map(|x| {
            format!(
                "{} {} {} ops/s ÷ {} per core = {} cores{}",
                x.role,
                x.product,
                num(x.ops_per_s),
                opt(x.ops_per_core, num),
                opt(x.cores, |c| format!("{c:.2}")),
                match (x.machines, x.monthly_cost) {
                    (Some(m), Some(c)) =>
                        format!(", {m} machine(s), {} {}", money(c), d.load.currency),
                    _ => String::new(),
                }
            )
        })
        .collect();
    each.join("; ")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The decision as a standalone HTML page.
pub fn html(d: &Decision) -> String {
    let mut s = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>kvlab decide</title><style>body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;font-size:90%}.answer{font-size:130%;background:#eef;padding:1em}</style></head><body>",
    );
    let _ = write!(
        s,
        "<h1>kvlab decide</h1><p>{}</p><p class=\"answer\"><b>{}</b>: {}.</p><h2>Architectures at the stated load</h2><table><tr>",
        esc(&load_line(d)),
        esc(&d.decision.answer),
        esc(&d.decision.because)
    );
    for h in HEAD {
        let _ = write!(s, "<th>{h}</th>");
    }
    s.push_str("</tr>");
    for a in &d.architectures {
        s.push_str("<tr>");
        for c in cells(d, a) {
            let _ = write!(s, "<td>{}</td>", esc(&c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    for b in &d.host_busy {
        let _ = write!(s, "<p><b>Note:</b> {}.</p>", esc(b));
    }
    s.push_str("<h2>Miss-ratio curve</h2><table><tr><th>cache memory</th><th>hit ratio of all reads</th><th>database reads/s at the stated rate</th><th>source</th></tr>");
    for cells in d.miss_ratio_curve.iter().map(curve_cells) {
        let _ = write!(s, "<tr><td>{}</td></tr>", cells.join("</td><td>"));
    }
    s.push_str("</table><h2>Extrapolations</h2><ul>");
    for e in &d.extrapolations {
        let _ = write!(s, "<li>{}</li>", esc(e));
    }
    s.push_str("</ul></body></html>\n");
    s
}
