//! A [`Comparison`] as text (the terminal), Markdown and one self-contained
//! HTML page, through the report's shared table.

use std::fmt::Write as _;

use super::{Comparison, Verdict};
use crate::report::table::Table;
use crate::report::{html, markdown};

/// The headline: what B is against A, in one sentence per kind of verdict,
/// with the rule the verdicts followed.
pub fn headline(c: &Comparison) -> Vec<String> {
    let [better, worse, below, noise, busier] = c.tally();
    let f = factor(c.applied_pct);
    let busier = match busier {
        0 => String::new(),
        n => format!(", {n} not judged (the host busier on one side)"),
    };
    let mut lines = vec![format!(
        "{} against {}: {worse} figures worse, {better} better, {below} below threshold, {noise} within noise{busier} (a change counts from {}% either way: B/A ≥ {f} or ≤ 1/{f}, and p < 0.05; below threshold: p < 0.05 but smaller; within noise: not significant{})",
        c.b,
        c.a,
        c.applied_pct,
        match c.applied_pct > c.rules.threshold_pct {
            true => format!(
                "; {}% where a side has one run: repeat the points (a study's repeat) to tell smaller changes from drift",
                c.rules.one_run_pct
            ),
            false => String::new(),
        }
    )];
    for (point, f) in c.worse() {
        lines.push(format!(
            "worse: {point}: {} {} → {} ({:+.1}%; {})",
            f.name,
            num(f.a),
            num(f.b),
            f.change_pct,
            f.evidence
        ));
    }
    for p in &c.points {
        lines.extend(p.notes.iter().map(|n| format!("{}: {n}", p.label)));
    }
    if !c.unmatched.is_empty() {
        lines.push(format!("not compared: {}", c.unmatched.join(", ")));
    }
    lines
}

/// The figures as one table.
pub fn table(c: &Comparison) -> Table {
    let rows = c
        .points
        .iter()
        .flat_map(|p| {
            p.figures.iter().map(move |f| {
                vec![
                    p.label.clone(),
                    f.name.to_string(),
                    num(f.a),
                    num(f.b),
                    format!("{:+.1}%", f.change_pct),
                    f.verdict.name().to_string(),
                    f.evidence.clone(),
                ]
            })
        })
        .collect();
    Table {
        title: format!("{} (B) against {} (A)", c.b, c.a),
        headers: ["point", "figure", "A", "B", "change", "verdict", "evidence"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

/// For the terminal: the headline, then one line per figure.
pub fn text(c: &Comparison) -> String {
    let mut s = String::new();
    for l in headline(c) {
        let _ = writeln!(s, "{l}");
    }
    for p in &c.points {
        let _ = writeln!(s, "\n  {}", p.label);
        for f in &p.figures {
            let mark = match f.verdict {
                Verdict::Better => "better",
                Verdict::Worse => "WORSE",
                Verdict::BelowThreshold => "below threshold",
                Verdict::Noise => "within noise",
                Verdict::HostBusier => "host busier",
            };
            let _ = writeln!(
                s,
                "    {:<18} {:>12} → {:<12} {:>+7.1}%  {:<15}  {}",
                f.name,
                num(f.a),
                num(f.b),
                f.change_pct,
                mark,
                f.evidence
            );
        }
    }
    s
}

/// Markdown: the headline as a list, then the table.
pub fn markdown(c: &Comparison) -> Vec<u8> {
    let mut s = String::from("# kvlab compare\n\n");
    for l in headline(c) {
        let _ = writeln!(s, "- {l}");
    }
    s.push('\n');
    s.push_str(&markdown::table(&table(c)));
    s.into_bytes()
}

/// One self-contained HTML page, like the report's.
pub fn html(c: &Comparison) -> Vec<u8> {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvlab compare</title>",
    );
    s.push_str("<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222;padding:0 1em}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child,td:nth-child(2),td:last-child{text-align:left}li{margin:.4em 0}</style></head><body><h1>kvlab compare</h1><ul>");
    for l in headline(c) {
        let _ = write!(s, "<li>{}</li>", html::esc(&l));
    }
    s.push_str("</ul>");
    s.push_str(&html::table(&table(c)));
    s.push_str("<p><small>Made by kvlab from the results files alone.</small></p></body></html>\n");
    s.into_bytes()
}

/// 1 + `pct` / 100 as text, without trailing zeros: 50 → `1.5`.
fn factor(pct: f64) -> String {
    let s = format!("{:.4}", 1.0 + pct / 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A figure as text: thousands separated, small ones with decimals.
fn num(x: f64) -> String {
    match x.abs() < 100.0 {
        true => format!("{x:.2}"),
        false => crate::results::stats::num(x),
    }
}
