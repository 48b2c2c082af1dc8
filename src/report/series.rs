//! Chart series from report rows: one line per target along the swept axis.

use std::collections::BTreeMap;

use super::chart::Series;
use super::rows::{Row, target_order, varies};

/// Where value `v` lies on the x axis: its number, else its place among `cats`.
fn x_of(v: &str, cats: &mut Vec<String>) -> f64 {
    v.parse::<f64>().unwrap_or_else(|_| {
        if !cats.iter().any(|c| c == v) {
            cats.push(v.to_string());
        }
        cats.iter().position(|c| c == v).unwrap_or(0) as f64
    })
}

/// One series per target (split by the other swept values) of `y` along `axis`,
/// and the axis' categories when its values are not numbers.
pub(super) fn series_by_target(
    rows: &[Row],
    axis: &str,
    y: impl Fn(&Row) -> Option<f64>,
    suffix: &str,
) -> (Vec<Series>, Option<Vec<String>>) {
    let targets = target_order(rows);
    let mut cats = Vec::new();
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut color_of: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows {
        let Some(v) = r.params.get(axis) else {
            continue;
        };
        let Some(yv) = y(r) else { continue };
        let x = x_of(v, &mut cats);
        // Other swept axes split a target into several lines.
        let others: Vec<String> = r
            .params
            .iter()
            .filter(|(k, _)| k.as_str() != axis && varies(rows, k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let name = if others.is_empty() {
            format!("{}{suffix}", r.target)
        } else {
            format!("{} {}{suffix}", r.target, others.join(" "))
        };
        if !order.contains(&name) {
            order.push(name.clone());
            color_of.insert(
                name.clone(),
                targets.iter().position(|t| *t == r.target).unwrap_or(0),
            );
        }
        by.entry(name).or_default().push((x, yv));
    }
    let series = order
        .into_iter()
        .map(|name| {
            let mut points = by.remove(&name).unwrap_or_default();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let color = color_of.get(&name).copied();
            Series {
                name,
                points,
                color,
                dashed: suffix == " p99",
            }
        })
        .collect();
    (series, (!cats.is_empty()).then_some(cats))
}
