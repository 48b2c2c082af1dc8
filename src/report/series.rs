//! Chart series from report rows: one line per target along the swept axis.

use std::collections::BTreeMap;

use super::chart::{Series, short};
use super::rows::{Row, target_order, varies};
use crate::results::study::StudyResult;

/// The p99 limit latency charts draw, µs, and its label: the study's goal,
/// else its `[thresholds]` limit (`None` where it states neither).
pub(super) fn p99_goal(results: &[StudyResult]) -> Option<(f64, String)> {
    let study = &results.first()?.study;
    let (ms, what) = match (study.goal.p99_ms, study.thresholds.p99_ms) {
        (Some(ms), _) => (ms, "goal"),
        (None, Some(ms)) => (ms, "limit"),
        (None, None) => return None,
    };
    Some((ms * 1e3, format!("p99 {what} {} ms", short(ms))))
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::chart::{Scale, svg};
    use crate::report::{Report, build};

    fn fixture() -> StudyResult {
        serde_json::from_str(include_str!("../../tests/fixtures/study.json")).unwrap()
    }

    fn chart<'a>(r: &'a Report, title: &str) -> &'a crate::report::chart::Chart {
        r.charts
            .iter()
            .find(|c| c.title.starts_with(title))
            .unwrap_or_else(|| panic!("no chart {title}"))
    }

    #[test]
    fn latency_charts_draw_the_studys_p99_goal() {
        let mut s = fixture();
        assert_eq!(s.study.goal.p99_ms, Some(2.0));
        let r = build(std::slice::from_ref(&s));
        let goal = (2000.0, "p99 goal 2 ms".to_string());
        for title in ["Latency p50 and p99", "Latency spectrum"] {
            let c = chart(&r, title);
            assert_eq!(c.y_label.lines, std::slice::from_ref(&goal), "{title}");
            let svg = svg(c);
            assert!(svg.contains("<line class=\"goal\"") && svg.contains(">p99 goal 2 ms<"));
        }
        assert!(chart(&r, "Throughput").y_label.lines.is_empty());
        // Without a goal, a threshold's p99 limit; with neither, no line.
        s.study.goal.p99_ms = None;
        assert_eq!(p99_goal(std::slice::from_ref(&s)), None);
        s.study.thresholds.p99_ms = Some(0.5);
        assert_eq!(
            p99_goal(std::slice::from_ref(&s)),
            Some((500.0, "p99 limit 0.5 ms".into()))
        );
    }

    #[test]
    fn the_spectrum_is_a_percentile_plot_on_log_latency() {
        let r = build(&[fixture()]);
        let c = chart(&r, "Latency spectrum");
        assert_eq!(c.x_label.scale, Scale::Percentile);
        assert_eq!(c.y_label.scale, Scale::Log);
        assert_eq!(c.x_categories, None);
        let xs: Vec<f64> = c.series[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [50.0, 90.0, 99.0, 99.9, 99.99, 99.999]);
        let svg = svg(c);
        for p in ["50%", "90%", "99%", "99.9%", "99.99%", "99.999%"] {
            assert!(svg.contains(&format!(">{p}</text>")), "{p}");
        }
    }

    #[test]
    fn a_study_of_one_point_per_target_draws_bars() {
        let mut s = fixture();
        s.points.retain(|p| p.params["connections"] == "4");
        let r = build(&[s]);
        for title in ["Throughput", "Latency p50 and p99", "Server CPU"] {
            let svg = svg(chart(&r, title));
            assert!(!svg.contains("<polyline"), "{title}");
            assert!(
                svg.contains("class=\"bar\"") && svg.contains("<circle"),
                "{title}"
            );
        }
    }
}
