//! Reports: a pure function from study results to a verdict, tables and charts,
//! rendered as Markdown and as one self-contained HTML file with inline SVG.
//! Repetitions and files merge by histogram, never by averaging percentiles.

pub mod aside;
mod baseline;
pub mod chart;
pub mod compare;
pub mod decide;
mod figures;
pub mod fill;
pub mod html;
pub mod markdown;
pub mod observe;
mod points;
pub mod replay;
mod rows;
mod series;
pub mod summary;
mod table;
mod verdict;
mod working_set;

use crate::results::study::StudyResult;
use chart::Chart;
pub use figures::{AsideFigures, StaleFigures};
use rows::axis;
pub use rows::{Row, rows};
pub use table::Table;

/// Everything a report shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Title.
    pub title: String,
    /// What the study asked.
    pub description: String,
    /// Plain sentences with numbers: the answer first.
    pub verdict: Vec<String>,
    /// Caveats that matter.
    pub caveats: Vec<String>,
    /// Tables.
    pub tables: Vec<Table>,
    /// Charts.
    pub charts: Vec<Chart>,
}

/// Builds the report for `results` (one or more study runs): the verdict and
/// caveats, every point's table and charts, then the sections the study has.
pub fn build(results: &[StudyResult]) -> Report {
    let rows = rows(results);
    let axis = axis(&rows);
    let study = results.first().map(|r| &r.study);
    let fill = fill::section(results);
    let (mut verdict, best) = verdict::verdict(results, &rows, axis.as_deref(), fill.as_ref());
    if let Some(s) = study {
        verdict.extend(baseline::lines(&s.comparisons(), &rows));
    }
    let mut report = Report {
        title: study.map_or("kvlab report".into(), |s| {
            format!("kvlab study: {}", s.name)
        }),
        description: study.map(|s| s.description.clone()).unwrap_or_default(),
        verdict,
        caveats: verdict::caveats(results, &rows),
        tables: Vec::new(),
        charts: points::charts(results, &rows, axis.as_deref(), &best),
    };
    if let Some(f) = fill {
        report.charts.insert(0, f.chart);
        report.tables.push(f.table);
    }
    report.add_sections(results, &rows);
    let table = points::table(&rows);
    if !table.rows.is_empty() {
        report.tables.push(table);
    }
    report
}

impl Report {
    /// Adds the sections a study has, each where it reads best: cache-aside
    /// and working set after the points, thresholds first.
    fn add_sections(&mut self, results: &[StudyResult], rows: &[Row]) {
        if let Some(a) = aside::section(rows) {
            self.verdict.extend(a.verdict);
            self.caveats.extend(a.caveats);
            self.tables.extend(a.tables);
            self.charts.extend(a.charts);
        }
        if let Some(w) = working_set::section(results) {
            self.verdict.extend(w.verdict);
            self.tables.extend(w.tables);
            self.charts.extend(w.charts);
        }
        if let Some((line, t)) = thresholds(results) {
            self.verdict.insert(0, line);
            self.tables.insert(0, t);
        }
    }
}

/// The study's `[thresholds]` checked on every point: the verdict's first
/// line and the table of pass and fail (`None` without thresholds).
fn thresholds(results: &[StudyResult]) -> Option<(String, Table)> {
    let t = &results.first()?.study.thresholds;
    if t.is_empty() {
        return None;
    }
    let checks: Vec<_> = results
        .iter()
        .flat_map(|r| crate::results::thresholds::check(t, &r.points))
        .collect();
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{}: {} (got {})", c.point, c.limit, c.value))
        .collect();
    let line = match failed.is_empty() {
        true => format!("Thresholds: all {} checks passed.", checks.len()),
        false => format!(
            "Thresholds: {} of {} checks FAILED: {}.",
            failed.len(),
            checks.len(),
            failed.join("; ")
        ),
    };
    let table = Table {
        title: "Thresholds".into(),
        headers: ["point", "limit", "measured", "result"]
            .map(String::from)
            .to_vec(),
        rows: checks
            .into_iter()
            .map(|c| {
                let result = if c.passed { "pass" } else { "FAIL" };
                vec![c.point, c.limit, c.value, result.to_string()]
            })
            .collect(),
    };
    Some((line, table))
}
