//! The report as Markdown (same tables as the HTML; charts are named, not drawn).

use std::fmt::Write as _;

use super::Report;
use super::table::Table;

/// A Markdown table.
pub fn table(t: &Table) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut s = format!(
        "### {}\n\n| {} |\n|{}|\n",
        t.title,
        t.headers
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | "),
        t.headers
            .iter()
            .map(|_| " --- ")
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in &t.rows {
        let _ = writeln!(
            s,
            "| {} |",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    s
}

/// Renders the whole report.
pub fn render(r: &Report) -> Vec<u8> {
    let mut s = format!("# {}\n\n", r.title);
    if !r.description.is_empty() {
        let _ = writeln!(s, "{}\n", r.description);
    }
    s.push_str("## Verdict\n\n");
    for v in &r.verdict {
        let _ = writeln!(s, "- {v}");
    }
    s.push_str("\n## Caveats\n\n");
    for c in &r.caveats {
        let _ = writeln!(s, "- {c}");
    }
    s.push('\n');
    for t in &r.tables {
        s.push_str(&table(t));
        s.push('\n');
    }
    if !r.charts.is_empty() {
        s.push_str("Charts (in report.html): ");
        s.push_str(
            &r.charts
                .iter()
                .map(|c| c.title.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        );
        s.push('\n');
    }
    s.into_bytes()
}
