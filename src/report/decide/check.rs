//! A decision's check (`kvlab decide --check`) as words and as a section of
//! the decision's page: what was run, each figure predicted and measured side
//! by side with their difference and its tolerance, a line for each past its
//! tolerance, and the verdict. A pure function of the [`Check`].

use std::fmt::Write as _;

use crate::plan::CacheStart;
use crate::report::table::Table;
use crate::results::check::{Check, Checked, Compared, Figure, Outcome, Tolerance};
use crate::results::decide::bytes;
use crate::results::stats::num;

/// What a check runs, in one line (said before it runs).
pub fn checking(c: &Checked) -> String {
    format!(
        "kvlab decide --check: {} with {} ({}), at {} keys ({}), at {} req/s (the rate the decision's copy was measured at), on servers kvlab starts\n",
        c.architecture,
        match c.cache_memory_bytes {
            Some(b) => format!("a {} cache", bytes(b)),
            None => "a cache of no limit".into(),
        },
        match c.cache_start {
            CacheStart::Settle => "settled to its steady state before measuring",
            _ => "loaded with every key",
        },
        num(c.keys as f64),
        c.keys_why,
        num(c.rate_rps)
    )
}

/// The figure's name, with its server.
fn name(c: &Compared) -> String {
    match &c.server {
        Some(s) => format!("{}, {} {}", c.figure.name(), s.role.name(), s.product),
        None => c.figure.name().into(),
    }
}

/// A value of `figure` as said.
fn value(figure: Figure, x: Option<f64>) -> String {
    let Some(x) = x else {
        return "not known".into();
    };
    match figure {
        Figure::HitRatio => format!("{:.1}%", x * 100.0),
        Figure::DatabaseReads => format!("{x:.1}"),
        Figure::CpuPerRequest => format!("{x:.1} µs"),
        Figure::P99 => format!("{} ms", num(x)),
    }
}

/// A difference of `figure` as said, signed.
fn difference(figure: Figure, d: Option<f64>) -> String {
    let Some(d) = d else {
        return "-".into();
    };
    match figure {
        Figure::HitRatio => format!("{:+.1} points", d * 100.0),
        Figure::DatabaseReads => format!("{d:+.1}"),
        Figure::CpuPerRequest => format!("{d:+.1} µs"),
        Figure::P99 => format!("{d:+.2} ms"),
    }
}

/// A tolerance of `figure` as said.
fn tolerance(figure: Figure, t: Tolerance) -> String {
    match (t, figure) {
        (Tolerance::Absolute { within }, Figure::HitRatio) => {
            format!("±{} points", (within * 1000.0).round() / 10.0)
        }
        (Tolerance::Absolute { within }, _) => format!("±{within:.1}"),
        (Tolerance::Relative { share }, _) => format!("±{:.0}% of the measured", share * 100.0),
        (Tolerance::AtMost { limit }, _) => format!("≤ {limit} ms, the goal"),
    }
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Within => "within",
        Outcome::Past => "PAST",
        Outcome::NotKnown => "not known",
    }
}

/// The prediction of `c` as said: with the range its product's runs allow,
/// where it has one (`5.1 µs (2.0–20.0)`).
fn predicted(c: &Compared) -> String {
    let p = value(c.figure, c.predicted);
    match (c.predicted_range, c.predicted) {
        (Some([lo, hi]), Some(_)) => format!("{p} ({lo:.1}–{hi:.1})"),
        _ => p,
    }
}

/// One figure's cells: name, predicted, measured, difference, tolerance,
/// outcome.
fn cells(c: &Compared) -> Vec<String> {
    vec![
        name(c),
        predicted(c),
        value(c.figure, c.measured),
        difference(c.figure, c.difference),
        tolerance(c.figure, c.tolerance),
        outcome(c.outcome).into(),
    ]
}

const HEAD: [&str; 6] = [
    "figure",
    "predicted",
    "measured",
    "difference",
    "tolerance",
    "",
];

/// A figure past its tolerance, in one line.
pub fn past(c: &Compared) -> String {
    let (p, m) = (predicted(c), value(c.figure, c.measured));
    match c.tolerance {
        Tolerance::AtMost { limit } => format!(
            "{}: measured {m}, over the goal of {limit} ms (predicted {p})",
            name(c)
        ),
        t => format!(
            "{}: measured {m} against {p} predicted, {} apart: past {}",
            name(c),
            difference(c.figure, c.difference.map(f64::abs)).trim_start_matches('+'),
            tolerance(c.figure, t)
        ),
    }
}

/// The verdict in one line: pass, or how many figures are past.
pub fn verdict(c: &Check) -> String {
    match c.past().count() {
        0 => format!(
            "CHECK: {}: every figure measured is within its tolerance",
            c.verdict.name()
        ),
        n if c.host_busy.is_empty() => format!(
            "CHECK: {}: {n} figure(s) past their tolerance",
            c.verdict.name()
        ),
        n => format!(
            "CHECK: {}: {n} figure(s) past their tolerance, on a busy host: they may be the host's, not the decision's (run the check again on a quiet host)",
            c.verdict.name()
        ),
    }
}

/// The check as text: the figures side by side, a line for each past its
/// tolerance, the verdict.
pub fn text(c: &Check) -> String {
    let mut rows = vec![HEAD.map(String::from).to_vec()];
    rows.extend(c.figures.iter().map(cells));
    let widths: Vec<usize> = (0..HEAD.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut s = format!(
        "\nkvlab decide --check: the decision ({}) predicted, against a run at {} keys\n",
        c.decision,
        num(c.checked.keys as f64)
    );
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| match i {
                0 => format!("{cell:<w$}"),
                _ => format!("{cell:>w$}"),
            })
            .collect();
        let _ = writeln!(s, "  {}", line.join("  ").trim_end());
    }
    s.push('\n');
    for p in c.past() {
        let _ = writeln!(s, "PAST: {}.", past(p));
    }
    for b in &c.host_busy {
        let _ = writeln!(s, "NOTE: {b}.");
    }
    let _ = writeln!(s, "{}.", verdict(c));
    s
}

/// The check as a section of the decision's page.
pub fn section(c: &Check) -> String {
    let esc = crate::report::html::esc;
    let mut s = format!(
        "<h2 id=\"check\">Check (kvlab decide --check)</h2><p>{}</p><p class=\"answer\"><b>{}</b></p>",
        esc(checking(&c.checked).trim_end()),
        esc(&verdict(c))
    );
    s.push_str(&crate::report::html::table(&Table {
        title: "The decision's predictions against the check's run".into(),
        headers: HEAD.map(String::from).to_vec(),
        rows: c.figures.iter().map(cells).collect(),
    }));
    let past: Vec<String> = c.past().map(past).collect();
    if !past.is_empty() {
        s.push_str("<ul>");
        for p in past {
            let _ = write!(s, "<li>Past its tolerance: {}.</li>", esc(&p));
        }
        s.push_str("</ul>");
    }
    for b in &c.host_busy {
        let _ = write!(s, "<p><b>Note:</b> {}.</p>", esc(b));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::check::{Server, Tolerances, Verdict};
    use crate::results::usage::Role;

    fn figure(figure: Figure, pm: [f64; 2], tolerance: Tolerance, outcome: Outcome) -> Compared {
        Compared {
            figure,
            server: (figure == Figure::CpuPerRequest).then(|| Server {
                role: Role::Cache,
                product: "redis".into(),
            }),
            predicted: Some(pm[0]),
            predicted_range: None,
            measured: Some(pm[1]),
            difference: Some(pm[1] - pm[0]),
            tolerance,
            outcome,
        }
    }

    fn check() -> Check {
        Check {
            kvlab_version: "0".into(),
            decision: crate::results::decide::Verdict::KeepCache,
            stated_keys: 20_000,
            p99_goal_ms: 5.0,
            checked: Checked {
                architecture: "redis in front of postgres".into(),
                keys: 20_000,
                keys_why: "the stated keys".into(),
                cache_memory_bytes: Some(5 << 20),
                cache_start: CacheStart::Settle,
                rate_rps: 2000.0,
            },
            tolerances: Tolerances {
                hit_points: 0.03,
                cpu_share: 0.25,
            },
            figures: vec![
                figure(
                    Figure::HitRatio,
                    [0.62, 0.55],
                    Tolerance::Absolute { within: 0.03 },
                    Outcome::Past,
                ),
                figure(
                    Figure::CpuPerRequest,
                    [10.0, 11.0],
                    Tolerance::Relative { share: 0.25 },
                    Outcome::Within,
                ),
                figure(
                    Figure::P99,
                    [0.9, 7.25],
                    Tolerance::AtMost { limit: 5.0 },
                    Outcome::Past,
                ),
            ],
            verdict: Verdict::Fail,
            host_busy: Vec::new(),
            run: serde_json::from_str(include_str!("../../../tests/fixtures/client-result.json"))
                .unwrap(),
        }
    }

    #[test]
    fn the_check_is_said_side_by_side_with_a_line_for_each_figure_past() {
        let c = check();
        let t = text(&c);
        let row = |name: &str| {
            t.lines()
                .find(|l| l.trim_start().starts_with(name))
                .map(|l| {
                    l.split("  ")
                        .filter(|w| !w.is_empty())
                        .map(str::trim)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        assert_eq!(
            row("hit ratio"),
            [
                "hit ratio of all reads",
                "62.0%",
                "55.0%",
                "-7.0 points",
                "±3 points",
                "PAST"
            ],
            "{t}"
        );
        assert_eq!(
            row("CPU per request"),
            [
                "CPU per request, cache redis",
                "10.0 µs",
                "11.0 µs",
                "+1.0 µs",
                "±25% of the measured",
                "within"
            ],
            "{t}"
        );
        assert!(
            t.contains("PAST: hit ratio of all reads: measured 55.0% against 62.0% predicted, 7.0 points apart: past ±3 points.\n"),
            "{t}"
        );
        assert!(
            t.contains("PAST: p99: measured 7.25 ms, over the goal of 5 ms (predicted 0.90 ms).\n"),
            "{t}"
        );
        assert!(
            t.ends_with("CHECK: fail: 2 figure(s) past their tolerance.\n"),
            "{t}"
        );
        let html = section(&c);
        assert!(html.contains("Check (kvlab decide --check)"), "{html}");
        assert_eq!(html.matches("<li>Past its tolerance").count(), 2, "{html}");
        assert!(checking(&c.checked).contains("a 5.0 MiB cache (settled to its steady state"));
        // On a busy host the check says so, beside the figures past.
        let busy = Check {
            host_busy: vec![
                "the host was busy during the check's run: the load average was 11.0 on 2 cores"
                    .into(),
            ],
            ..c
        };
        let t = text(&busy);
        assert!(
            t.contains("NOTE: the host was busy during the check's run"),
            "{t}"
        );
        assert!(t.ends_with("CHECK: fail: 2 figure(s) past their tolerance, on a busy host: they may be the host's, not the decision's (run the check again on a quiet host).\n"), "{t}");
    }
}
