//! The memory-efficiency part of a report (`mode = "fill"`): items each target
//! holds per GiB, as verdict lines, a table and a chart.

use super::chart::{Chart, Series, short};
use super::table::Table;
use crate::results::fill::FillResult;
use crate::results::study::StudyResult;

/// The section's parts.
pub struct Section {
    /// One line per target.
    pub verdict: Vec<String>,
    /// The best against the worst, when they differ (goes first in the verdict).
    pub headline: Option<String>,
    /// Every fill.
    pub table: Table,
    /// Items held per GiB by target.
    pub chart: Chart,
}

/// The section, when some point was a fill.
pub fn section(results: &[StudyResult]) -> Option<Section> {
    let fills: Vec<(&String, &FillResult)> = results
        .iter()
        .flat_map(|r| {
            r.points
                .iter()
                .filter_map(|p| Some((&p.target, p.fill.as_ref()?)))
        })
        .collect();
    if fills.is_empty() {
        return None;
    }
    let verdict = fills
        .iter()
        .map(|(t, f)| {
            format!(
                "{t}: {} items of {} B per GiB of {} ({:.0} bytes per item; stopped by {}).",
                short(f.items_per_gib),
                f.value_size,
                f.basis,
                f.bytes_per_item,
                f.stopped_by
            )
        })
        .collect();
    let best = fills
        .iter()
        .max_by(|a, b| a.1.items_per_gib.total_cmp(&b.1.items_per_gib));
    let worst = fills
        .iter()
        .min_by(|a, b| a.1.items_per_gib.total_cmp(&b.1.items_per_gib));
    let headline = match (best, worst) {
        (Some(b), Some(w)) if b.0 != w.0 => Some(format!(
            "{} stores {:.0}% more items per GiB than {}.",
            b.0,
            (b.1.items_per_gib / w.1.items_per_gib.max(1e-9) - 1.0) * 100.0,
            w.0
        )),
        _ => None,
    };
    let table = Table {
        title: "Memory efficiency".into(),
        headers: [
            "target",
            "value bytes",
            "keys written",
            "items held",
            "measured against",
            "bytes",
            "items per GiB",
            "bytes per item",
            "stopped by",
        ]
        .map(String::from)
        .to_vec(),
        rows: fills
            .iter()
            .map(|(t, f)| {
                vec![
                    t.to_string(),
                    f.value_size.to_string(),
                    f.written.to_string(),
                    f.items.to_string(),
                    f.basis.clone(),
                    f.bytes.to_string(),
                    format!("{:.0}", f.items_per_gib),
                    format!("{:.0}", f.bytes_per_item),
                    f.stopped_by.clone(),
                ]
            })
            .collect(),
    };
    let chart = Chart {
        title: "Items held per GiB".into(),
        x_label: "target".into(),
        y_label: "items per GiB".into(),
        series: vec![Series {
            name: format!("{} B values", fills[0].1.value_size),
            points: fills
                .iter()
                .enumerate()
                .map(|(i, (_, f))| (i as f64, f.items_per_gib))
                .collect(),
            color: None,
            dashed: false,
        }],
        x_categories: Some(fills.iter().map(|(t, _)| t.to_string()).collect()),
        log_x: false,
        markers: Vec::new(),
    };
    Some(Section {
        verdict,
        headline,
        table,
        chart,
    })
}
