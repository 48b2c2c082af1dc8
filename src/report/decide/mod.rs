//! The decision for a stated load as words and as a page: the answer and
//! its reason first, then one row per architecture (each naming the
//! measurement it comes from), the miss-ratio curve, the cache loss, and
//! every extrapolation; the page adds three pictures ([`charts`]) and its
//! tables render through the shared table code, and a decision's [`check`]
//! where there is one. A pure function of the [`Decision`] (and its
//! [`Check`]).

mod charts;
pub mod check;

use std::fmt::Write as _;

use crate::report::table::Table;
use crate::results::check::Check;
use crate::results::decide::bill::Placed;
use crate::results::decide::{Architecture, CurvePoint, Decision, bytes};
use crate::results::stats::num;

use crate::results::decide::bill::money;

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
        [
            Some(p.source.to_string()),
            p.measured_on_copy.map(|[m, model]| {
                format!(
                    "from {:.1}% measured on the copy (the model there: {:.1}%)",
                    m * 100.0,
                    model * 100.0
                )
            }),
            p.trace_hit_ratio
                .map(|t| format!("the trace's: {:.1}%", t * 100.0)),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; "),
    ]
}

/// The cells of one architecture's row, in the table's order.
fn cells(a: &Architecture) -> Vec<String> {
    vec![
        a.name.to_string(),
        a.product.clone(),
        opt(a.server_cores, |c| format!("{c:.2}")),
        gib(a.memory_bytes),
        shapes(a).unwrap_or_else(|| a.machines.map_or("-".into(), |m| m.to_string())),
        opt(a.monthly_cost, money),
        opt(a.p99_ms, |p| format!("{} ms", num(p))),
        match (a.within_goal, &a.why_not) {
            (true, _) => "yes".into(),
            (false, Some(w)) => format!("no: {w}"),
            (false, None) => "no".into(),
        },
        opt(a.hit_ratio, |h| format!("{:.1}%", h * 100.0)),
        opt(a.stale_reads_per_million, |s| format!("{s:.1}")),
        a.on_cache_loss.clone().unwrap_or_else(|| "-".into()),
        range_cell(a),
        a.measured_from.clone(),
    ]
}

/// A row's shapes on a catalogued deployment: `db.t4g.medium x1 +
/// cache.t4g.small x1` (`None`: own machines, or a server not placed).
fn shapes(a: &Architecture) -> Option<String> {
    let placed: Vec<&Placed> = a
        .servers
        .iter()
        .map(|s| s.placed.as_ref())
        .collect::<Option<_>>()?;
    (!placed.is_empty()).then(|| {
        placed
            .iter()
            .map(|p| p.said())
            .collect::<Vec<_>>()
            .join(" + ")
    })
}

/// The flips as said: each in its own words, but where the rate flips the
/// answer more than twice (over shapes each step up a shape is a step in
/// cost), the rates where the cache pays as ranges in one sentence.
fn flips_said(d: &Decision) -> Vec<String> {
    use crate::results::decide::{Variable, Verdict};
    let rate: Vec<_> = d
        .flips
        .iter()
        .filter(|f| f.variable == Variable::Rps)
        .collect();
    let others = d.flips.iter().filter(|f| f.variable != Variable::Rps);
    if rate.len() <= 2
        || !rate
            .iter()
            .all(|f| matches!(f.to, Verdict::KeepCache | Verdict::DropCache))
    {
        return d.flips.iter().map(|f| f.said.clone()).collect();
    }
    let mut ranges = Vec::new();
    let mut from = (rate[0].from == Verdict::KeepCache).then_some(None);
    for f in &rate {
        match (f.to, from) {
            (Verdict::KeepCache, _) => from = Some(Some(f.at)),
            (_, Some(start)) => {
                ranges.push(match start {
                    Some(a) => format!("{}–{}", num(a), num(f.at)),
                    None => format!("up to {}", num(f.at)),
                });
                from = None;
            }
            _ => {}
        }
    }
    if let Some(start) = from {
        ranges.push(start.map_or("at every rate".into(), |a| format!("from {}", num(a))));
    }
    let last = ranges.pop().unwrap_or_default();
    let listed = match ranges.is_empty() {
        true => last,
        false => format!("{} and {last}", ranges.join(", ")),
    };
    let first = format!(
        "by rate, the cache pays at {listed} req/s, the database alone at the rates beside (each step up a shape is a step in cost; decision.json's flips list each flip)"
    );
    std::iter::once(first)
        .chain(others.map(|f| f.said.clone()))
        .collect()
}

/// The break-even hit ratio in words, beside cache-aside's own.
fn break_even(d: &Decision) -> Option<String> {
    let b = d.break_even_hit_ratio?;
    let own = d
        .architectures
        .iter()
        .find(|a| a.name == crate::results::decide::ArchName::CacheAside)
        .and_then(|a| a.hit_ratio)
        .map_or(String::new(), |h| {
            format!(" (its hit ratio here: {:.1}%)", h * 100.0)
        });
    Some(format!(
        "below {:.1}% of reads hitting the cache, cache-aside costs more a month than the database alone at {} req/s{own}",
        b * 100.0,
        num(d.load.rps)
    ))
}

/// The prices used that are over a year old on the day they were priced,
/// as one note (`None`: none).
fn old_prices(d: &Decision) -> Option<String> {
    let mut old: Vec<(String, String)> = d
        .architectures
        .iter()
        .flat_map(|a| &a.servers)
        .filter_map(|s| s.placed.as_ref().filter(|p| p.old))
        .map(|p| (p.shape.clone(), p.price_date.clone()))
        .collect();
    old.sort();
    old.dedup();
    (!old.is_empty()).then(|| {
        format!(
            "prices over a year old on {} were used ({}): a current list price may differ; give yours with --prices FILE (kvlab prices shows the catalog's sources)",
            d.load.deployment.priced_on,
            old.iter()
                .map(|(s, date)| format!("{s} of {date}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// A row's range: cores and monthly cost low–high (`-`: none).
fn range_cell(a: &Architecture) -> String {
    let Some(r) = &a.range else {
        return "-".into();
    };
    let mut parts = Vec::new();
    if let Some([lo, hi]) = r.cores {
        parts.push(format!("{lo:.2}–{hi:.2} cores"));
    }
    if let Some([lo, hi]) = r.memory_bytes {
        parts.push(format!("{}–{}", bytes(lo), bytes(hi)));
    }
    if let Some([lo, hi]) = r.monthly_cost {
        parts.push(format!("{}–{} a month", money(lo), money(hi)));
    }
    parts.join(", ")
}

const HEAD: [&str; 13] = [
    "architecture",
    "servers",
    "server cores",
    "memory",
    "machines or shapes",
    "monthly cost",
    "p99 measured",
    "within the goal",
    "hit ratio of all reads",
    "stale reads / M",
    "on cache loss",
    "range (low–high)",
    "measured from",
];

/// The prices, named once: as given, or kvlab's examples and how to give
/// them.
fn prices_said(d: &Decision) -> String {
    if d.load.deployment.catalogued() {
        let built_in = d
            .load
            .deployment
            .catalog
            .as_ref()
            .is_some_and(|c| c.file.starts_with("built in"));
        return format!(
            "{}, {}: {}",
            d.load.currency,
            match built_in {
                true => "list prices on demand",
                false => "the prices of the catalog given",
            },
            d.load.deployment.said()
        );
    }
    match d.load.example_prices {
        true => format!(
            "{}; example prices: give --price-machine-month or --price-core-hour and --price-gib-hour",
            d.load.currency
        ),
        false => d.load.currency.clone(),
    }
}

/// The load as stated, in one line.
fn load_line(d: &Decision) -> String {
    let l = &d.load;
    let peak = match l.rate_shape {
        Some(s) => format!(
            " at the peak ({s}; {} req/s over the day: sized, and its cache lost, at the peak)",
            num(l.day_mean_rps())
        ),
        None => String::new(),
    };
    format!(
        "{} req/s{peak}, p99 ≤ {} ms, {} keys × {} B, SET:GET {}, {} keys",
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
    if let Some(c) = &d.decision.close_call {
        let _ = writeln!(s, "CLOSE CALL: {c}.\n");
    }
    for f in flips_said(d) {
        let _ = writeln!(s, "FLIP: {f}.");
    }
    if d.flips.is_empty() && d.decision.answer != crate::results::decide::Verdict::NotMeasured {
        let _ = writeln!(
            s,
            "FLIP: none: the answer holds from a hundredth to a hundred times the stated rate, a tenth to ten times the keys, and from 0 to 90% writes."
        );
    }
    if let Some(b) = break_even(d) {
        let _ = writeln!(s, "BREAK-EVEN: {b}.");
    }
    let _ = writeln!(s, "Prices: {}.\n", prices_said(d));
    for b in d.host_busy.iter().cloned().chain(old_prices(d)) {
        let _ = writeln!(s, "NOTE: {b}.");
    }
    for a in &d.architectures {
        let c = cells(a);
        let _ = writeln!(
            s,
            "  {:<17} {} — {} cores, {}, {}; p99 {}; within the goal: {}",
            c[0],
            c[1],
            c[2],
            c[3],
            match (shapes(a), a.monthly_cost) {
                (Some(x), _) => format!("{x} = {} {} a month", c[5], d.load.currency),
                (None, Some(_)) =>
                    format!("{} machine(s), {} {} a month", c[4], c[5], d.load.currency),
                (None, None) => "cost not known".into(),
            },
            c[6],
            c[7]
        );
        if a.range.is_some() {
            let _ = writeln!(s, "               range: {}", c[11]);
        }
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
        let _ = writeln!(s, "               from: {}", c[12]);
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
                match (&x.placed, x.machines, x.monthly_cost, &x.unpriced) {
                    (Some(p), ..) => format!(
                        " → {}, {} {} a month ({})",
                        p.said(),
                        money(p.monthly),
                        d.load.currency,
                        p.why
                    ),
                    (None, Some(m), Some(c), _) =>
                        format!(", {m} machine(s), {} {}", money(c), d.load.currency),
                    (None, _, _, Some(why)) => format!(", not priced: {why}"),
                    _ => String::new(),
                }
            )
        })
        .collect();
    each.join("; ")
}

fn esc(s: &str) -> String {
    crate::report::html::esc(s)
}

/// The decision as a standalone HTML page: the answer, its check where
/// `check` is one, the three pictures, the rows and the curve as tables, the
/// extrapolations.
pub fn html(d: &Decision, check: Option<&Check>) -> String {
    let mut s = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvlab decide</title><style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;font-size:85%}.answer{font-size:130%;background:#eef;padding:1em}.close{background:#fff4e0;padding:.6em 1em}figure{margin:1.5em 0}svg{max-width:100%;height:auto;border:1px solid #eee}</style></head><body>",
    );
    let _ = write!(
        s,
        "<h1>kvlab decide</h1><p>{}</p><p class=\"answer\"><b>{}</b>: {}.</p>",
        esc(&load_line(d)),
        esc(d.decision.answer.name()),
        esc(&d.decision.because)
    );
    if let Some(c) = &d.decision.close_call {
        let _ = write!(s, "<p class=\"close\"><b>Close call.</b> {}.</p>", esc(c));
    }
    s.push_str("<ul>");
    for f in flips_said(d) {
        let _ = write!(s, "<li>Where the answer flips: {}.</li>", esc(&f));
    }
    if d.flips.is_empty() && d.decision.answer != crate::results::decide::Verdict::NotMeasured {
        s.push_str("<li>The answer holds from a hundredth to a hundred times the stated rate, a tenth to ten times the keys, and from 0 to 90% writes.</li>");
    }
    if let Some(b) = break_even(d) {
        let _ = write!(s, "<li>Break-even: {}.</li>", esc(&b));
    }
    s.push_str("</ul>");
    for b in d.host_busy.iter().cloned().chain(old_prices(d)) {
        let _ = write!(s, "<p><b>Note:</b> {}.</p>", esc(&b));
    }
    if let Some(c) = check {
        s.push_str(&check::section(c));
    }
    s.push_str("<h2>Pictures</h2>");
    let pictures = [charts::cost(d), charts::curve(d)]
        .into_iter()
        .flatten()
        .chain(charts::loss(d));
    for c in pictures {
        let _ = write!(s, "<figure>{}</figure>", crate::report::chart::svg(&c));
    }
    s.push_str("<h2>Architectures at the stated load</h2>");
    let mut head: Vec<String> = HEAD.iter().map(|h| h.to_string()).collect();
    head[5] = format!("monthly cost ({})", d.load.currency);
    s.push_str(&crate::report::html::table(&Table {
        title: format!("Prices: {}", prices_said(d)),
        headers: head,
        rows: d.architectures.iter().map(cells).collect(),
    }));
    s.push_str(&crate::report::html::table(&Table {
        title: "Miss-ratio curve".into(),
        headers: [
            "cache memory",
            "hit ratio of all reads",
            "database reads/s at the stated rate",
            "source",
        ]
        .map(String::from)
        .to_vec(),
        rows: d
            .miss_ratio_curve
            .iter()
            .map(|p| curve_cells(p).to_vec())
            .collect(),
    }));
    s.push_str("<h2>Extrapolations</h2><ul>");
    for e in &d.extrapolations {
        let _ = write!(s, "<li>{}</li>", esc(e));
    }
    s.push_str("</ul></body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::decide::{Flip, Variable, Verdict};

    fn flip(at: f64, from: Verdict, to: Verdict) -> Flip {
        Flip {
            variable: Variable::Rps,
            at,
            from,
            to,
            said: format!("{from} to {to} at {at}"),
        }
    }

    #[test]
    fn rate_flips_over_shapes_read_as_the_ranges_where_the_cache_pays() {
        let mut d: Decision = serde_json::from_str(include_str!(
            "../../../tests/fixtures/decision-0.1/decision.json"
        ))
        .unwrap();
        let (k, o) = (Verdict::KeepCache, Verdict::DropCache);
        d.flips = vec![flip(100.0, o, k), flip(200.0, k, o)];
        assert_eq!(
            flips_said(&d),
            [
                "drop-cache to keep-cache at 100",
                "keep-cache to drop-cache at 200"
            ]
        );
        d.flips = vec![flip(100.0, o, k), flip(200.0, k, o), flip(1000.0, o, k)];
        assert_eq!(
            flips_said(&d)[0],
            "by rate, the cache pays at 100–200 and from 1,000 req/s, the database alone at the rates beside (each step up a shape is a step in cost; decision.json's flips list each flip)"
        );
        d.flips = vec![flip(100.0, k, o), flip(200.0, o, k), flip(300.0, k, o)];
        assert!(
            flips_said(&d)[0].contains("pays at up to 100 and 200–300 req/s"),
            "{:?}",
            flips_said(&d)
        );
    }
}
