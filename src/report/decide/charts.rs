//! The three pictures of a decision, drawn by the shared chart code from the
//! decision's own fields: the monthly cost of each architecture against the
//! request rate (the stated load and the flips marked), the miss-ratio curve
//! (measured on the copy, carried to the stated keys, the trace's; the size
//! chosen marked), and the cache loss second by second (the database's
//! reads, p99 against the goal).

use crate::report::chart::{Axis, Chart, Scale, Series};
use crate::results::decide::{ArchName, CurveSource, Decision, Variable};

/// A chart with `title`, its axes, lines and markers.
fn chart(
    title: &str,
    (x, y): (Axis, Axis),
    series: Vec<Series>,
    markers: Vec<(f64, String)>,
) -> Chart {
    Chart {
        title: title.into(),
        log_x: x.scale == Scale::Log,
        x_label: x,
        y_label: y,
        series,
        x_categories: None,
        markers,
    }
}

fn line(name: &str, points: Vec<(f64, f64)>, color: usize, dashed: bool) -> Series {
    Series {
        name: name.into(),
        points,
        color: Some(color),
        dashed,
    }
}

/// A log scale where the values span more than `ratio`, else linear.
fn scale_for(values: impl Iterator<Item = f64>, ratio: f64) -> Scale {
    let (lo, hi) = values
        .filter(|v| *v > 0.0)
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    match hi > 0.0 && hi / lo > ratio {
        true => Scale::Log,
        false => Scale::Linear,
    }
}

/// Each architecture's monthly cost against the request rate.
pub fn cost(d: &Decision) -> Option<Chart> {
    let names: Vec<&str> = d
        .by_rate
        .first()?
        .monthly_cost
        .iter()
        .map(|c| c.0.name())
        .collect();
    let series: Vec<Series> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let points = d
                .by_rate
                .iter()
                .filter_map(|p| Some((p.rps, p.monthly_cost.get(i)?.1?)))
                .collect();
            line(name, points, i, false)
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return None;
    }
    let costs = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let y = Axis::new(format!("monthly cost ({})", d.load.currency)).scaled(scale_for(costs, 20.0));
    let mut markers = vec![(d.load.rps, "stated load".to_string())];
    // Over shapes the answer may flip often (a step up a shape is a step in
    // cost): the flips nearest the stated load each side are named, the
    // rest only marked, so that their words do not overlap.
    let rps: Vec<_> = d
        .flips
        .iter()
        .filter(|f| f.variable == Variable::Rps)
        .collect();
    let below = rps.iter().rposition(|f| f.at <= d.load.rps);
    let above = rps.iter().position(|f| f.at > d.load.rps);
    markers.extend(rps.iter().enumerate().map(|(i, f)| {
        let named = Some(i) == below || Some(i) == above;
        (
            f.at,
            match named {
                true => format!("{} from here", f.to),
                false => String::new(),
            },
        )
    }));
    Some(chart(
        "Monthly cost of each architecture against the request rate (outside the goal: no point)",
        (Axis::new("requests per second").scaled(Scale::Log), y),
        series,
        markers,
    ))
}

/// The miss-ratio curve: hit ratio of all reads against the cache's memory.
pub fn curve(d: &Decision) -> Option<Chart> {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let of = |source: CurveSource| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = d
            .miss_ratio_curve
            .iter()
            .filter(|p| p.source == source && p.cache_memory_bytes > 0)
            .map(|p| (mib(p.cache_memory_bytes), p.hit_ratio * 100.0))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    let series: Vec<Series> = [
        ("measured on the copy", CurveSource::Measured, false),
        ("carried to the stated keys", CurveSource::Carried, false),
        ("the popularity model", CurveSource::Model, true),
        ("the trace's own curve", CurveSource::Trace, true),
    ]
    .iter()
    .enumerate()
    .map(|(i, (name, source, dashed))| line(name, of(*source), i, *dashed))
    .filter(|s| !s.points.is_empty())
    .collect();
    if series.is_empty() {
        return None;
    }
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let x = Axis::new("cache memory at the stated data (MiB)").scaled(scale_for(xs, 20.0));
    let chosen = d
        .architectures
        .iter()
        .find(|a| a.name == ArchName::CacheAside)
        .and_then(|a| a.cache_memory_bytes)
        .map(|b| (mib(b), "chosen size".to_string()));
    Some(chart(
        "Miss-ratio curve: hit ratio of all reads by the cache's memory",
        (x, Axis::new("hit ratio of all reads (%)")),
        series,
        chosen.into_iter().collect(),
    ))
}

/// The cache loss second by second: the database's reads, and p99 against
/// the goal.
pub fn loss(d: &Decision) -> Vec<Chart> {
    let Some(l) = d.cache_loss.as_ref().filter(|l| !l.seconds.is_empty()) else {
        return Vec::new();
    };
    let at = vec![(l.at_s as f64, "cache lost".to_string())];
    let reads = l
        .seconds
        .iter()
        .map(|s| (s.second as f64, s.db_reads_per_s))
        .collect();
    let p99 = l
        .seconds
        .iter()
        .map(|s| (s.second as f64, s.p99_ms))
        .collect();
    let x = || Axis::new("second of the run");
    vec![
        chart(
            &format!(
                "Cache loss at {} req/s: the database's reads",
                crate::results::stats::num(l.rate_rps)
            ),
            (x(), Axis::new("database reads per second")),
            vec![line("database reads/s", reads, 0, false)],
            at.clone(),
        ),
        chart(
            "Cache loss: p99 latency of all requests against the goal",
            (
                x(),
                Axis::new("p99 latency (ms)").with_line(d.load.p99_ms, "goal"),
            ),
            vec![line("p99", p99, 1, false)],
            at,
        ),
    ]
}
