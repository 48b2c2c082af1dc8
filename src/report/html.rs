//! The report as one self-contained HTML file: inline CSS and SVG, no scripts,
//! nothing fetched from the network.

use std::fmt::Write as _;

use super::table::Table;
use super::{Report, chart};

/// `s` with HTML's special characters escaped.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An HTML table.
pub fn table(t: &Table) -> String {
    let mut s = format!("<h3>{}</h3><table><thead><tr>", esc(&t.title));
    for h in &t.headers {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

/// Renders the whole report.
pub fn render(r: &Report) -> Vec<u8> {
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(s, "<title>{}</title>", esc(&r.title));
    s.push_str("<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222;padding:0 1em}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child,td:nth-child(2){text-align:left}.verdict li{margin:.4em 0;font-size:15px}figure{margin:1.5em 0}svg{max-width:100%;height:auto;border:1px solid #eee}</style></head><body>");
    let _ = write!(s, "<h1>{}</h1>", esc(&r.title));
    if !r.description.is_empty() {
        let _ = write!(s, "<p>{}</p>", esc(&r.description));
    }
    s.push_str("<h2>Verdict</h2><ul class=\"verdict\">");
    for v in &r.verdict {
        let _ = write!(s, "<li>{}</li>", esc(v));
    }
    s.push_str("</ul><h2>Caveats</h2><ul>");
    for c in &r.caveats {
        let _ = write!(s, "<li>{}</li>", esc(c));
    }
    s.push_str("</ul><h2>Charts</h2>");
    for c in &r.charts {
        let _ = write!(s, "<figure>{}</figure>", chart::svg(c));
    }
    s.push_str("<h2>Data</h2>");
    for t in &r.tables {
        s.push_str(&table(t));
    }
    s.push_str("<p><small>Made by kvlab from the results files alone.</small></p></body></html>\n");
    s.into_bytes()
}
