//! Axes: how values map onto a chart's axis (linear, logarithmic, or spread as
//! percentiles the way HdrHistogram plots them), the range an axis spans and
//! its ticks.

use super::short;

/// How values map onto an axis.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Scale {
    /// Evenly.
    #[default]
    Linear,
    /// By their logarithm (values must be above zero).
    Log,
    /// Percentiles in % (50, 99, 99.9) at `log10(1 / (1 - p))`: each further
    /// nine takes the same room (HdrHistogram's percentile plot).
    Percentile,
}

impl Scale {
    /// Where `v` lies along the scale's own straight line.
    pub fn pos(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log => v.max(1e-9).log10(),
            Scale::Percentile => (100.0 / (100.0 - v).max(1e-9)).log10(),
        }
    }
}

/// One axis of a chart: its label with unit, its scale, the most it shows and
/// lines across the plot. A label converts into a linear axis (`"req/s".into()`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Axis {
    /// Label with unit, e.g. `latency (µs)`.
    pub label: String,
    /// How values map onto it.
    pub scale: Scale,
    /// The most the axis shows where every value is within it: a share in %
    /// stops at 100 rather than at the next round number above it.
    pub max: Option<f64>,
    /// Dashed lines across the plot at a value, with a label (on the y axis:
    /// a p99 goal); the axis reaches far enough to show them.
    pub lines: Vec<(f64, String)>,
}

impl Axis {
    /// A linear axis; a label whose unit is `(%)` is a share, capped at 100.
    pub fn new(label: impl Into<String>) -> Axis {
        let label = label.into();
        let max = label.trim_end().ends_with("(%)").then_some(100.0);
        Axis {
            label,
            scale: Scale::Linear,
            max,
            lines: Vec::new(),
        }
    }

    /// The same axis on scale `scale`.
    pub fn scaled(self, scale: Scale) -> Axis {
        Axis { scale, ..self }
    }

    /// The same axis with a dashed line across the plot at `at`.
    pub fn with_line(mut self, at: f64, label: impl Into<String>) -> Axis {
        self.lines.push((at, label.into()));
        self
    }
}

impl From<&str> for Axis {
    fn from(label: &str) -> Axis {
        Axis::new(label)
    }
}

impl From<String> for Axis {
    fn from(label: String) -> Axis {
        Axis::new(label)
    }
}

/// The span of an axis along its scale's line, and its labelled ticks.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Span {
    /// Lowest position shown.
    pub lo: f64,
    /// Highest position shown.
    pub hi: f64,
    /// Ticks: value and label.
    pub ticks: Vec<(f64, String)>,
}

/// The smallest round number (1, 2, 2.5, 5 times a power of ten) at or above `v`.
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if v <= m * p {
            return m * p;
        }
    }
    10.0 * p
}

/// Percentiles a percentile axis labels, where its data reach.
const PERCENTILES: [f64; 9] = [
    0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999, 99.99999,
];

/// A percentile as a tick label: `99.99%`.
pub(super) fn percent(p: f64) -> String {
    format!("{}%", (p * 1e6).round() / 1e6)
}

/// The value axis (y) of `a` over values `ys` (its lines included): from 0
/// (linear) or the decade below the least value (log) to a round number
/// above the most, never past `a.max` where every value is within it.
pub(super) fn value_span(a: &Axis, ys: &[f64]) -> Span {
    let all = ys.iter().copied().chain(a.lines.iter().map(|l| l.0));
    let top = all.clone().fold(0.0, f64::max);
    match a.scale {
        Scale::Linear => {
            let mut hi = nice_max(top * 1.05);
            if let Some(max) = a.max.filter(|m| top <= *m && *m > 0.0) {
                hi = hi.min(max);
            }
            let ticks = (0..=5)
                .map(|i| {
                    let v = hi * i as f64 / 5.0;
                    (v, short(v))
                })
                .collect();
            Span { lo: 0.0, hi, ticks }
        }
        Scale::Log => {
            let least = all.filter(|v| *v > 0.0).fold(f64::MAX, f64::min);
            let (least, top) = match least == f64::MAX {
                true => (1.0, 10.0),
                false => (least, top),
            };
            let lo = least.log10().floor();
            let mut hi = top.log10().ceil();
            if hi <= lo {
                hi = lo + 1.0;
            }
            let steps: &[f64] = if hi - lo <= 2.0 {
                &[1.0, 2.0, 5.0]
            } else {
                &[1.0]
            };
            let mut ticks = Vec::new();
            for d in lo as i32..=hi as i32 {
                for m in steps {
                    let v = m * 10f64.powi(d);
                    if v.log10() <= hi + 1e-9 {
                        ticks.push((v, short(v)));
                    }
                }
            }
            Span { lo, hi, ticks }
        }
        Scale::Percentile => percentile_span(ys),
    }
}

/// A percentile axis over percentiles `ps`: from the least to the most, its
/// ticks the usual ones (50%, 90%, 99%, 99.9% ...) in between.
fn percentile_span(ps: &[f64]) -> Span {
    let s = Scale::Percentile;
    let lo = ps.iter().copied().fold(f64::MAX, f64::min);
    let hi = ps.iter().copied().fold(f64::MIN, f64::max);
    let (lo, hi) = match lo > hi {
        true => (50.0, 99.9),
        false => (lo, hi),
    };
    let ticks = PERCENTILES
        .iter()
        .filter(|p| **p >= lo - 1e-9 && **p <= hi + 1e-9)
        .map(|p| (*p, percent(*p)))
        .collect();
    let (lo, hi) = (s.pos(lo), s.pos(hi));
    match hi - lo < 1e-12 {
        true => Span {
            lo: lo - 0.5,
            hi: hi + 0.5,
            ticks,
        },
        false => Span { lo, hi, ticks },
    }
}

/// The position axis (x) of `a` over values `xs`: from the least to the most
/// (half a step either side of a single one), a tick at each distinct value
/// labelled by `label` (past [`MOST_TICKS`] values, round ones: 1, 2 and 5
/// times a power of ten on a log axis, every n-th value on a linear one);
/// percentiles get the usual percentile ticks instead.
pub(super) fn place_span(a: &Axis, xs: &[f64], label: &dyn Fn(f64) -> String) -> Span {
    if a.scale == Scale::Percentile {
        return percentile_span(xs);
    }
    let mut distinct = xs.to_vec();
    distinct.sort_by(|a, b| a.total_cmp(b));
    distinct.dedup();
    let (mut lo, mut hi) = match (distinct.first(), distinct.last()) {
        (Some(a_), Some(b)) => (a.scale.pos(*a_), a.scale.pos(*b)),
        _ => (0.0, 1.0),
    };
    if (hi - lo).abs() < 1e-12 {
        lo -= 0.5;
        hi += 0.5;
    }
    Span {
        lo,
        hi,
        ticks: thinned(a.scale, &distinct)
            .into_iter()
            .map(|x| (x, label(x)))
            .collect(),
    }
}

/// The most ticks an axis labels before it labels round values only.
pub const MOST_TICKS: usize = 12;

/// Where an axis of `distinct` values (ascending) puts its ticks.
fn thinned(scale: Scale, distinct: &[f64]) -> Vec<f64> {
    if distinct.len() <= MOST_TICKS {
        return distinct.to_vec();
    }
    let (lo, hi) = (distinct[0], distinct[distinct.len() - 1]);
    if scale == Scale::Log && lo > 0.0 {
        let round: Vec<f64> = (lo.log10().floor() as i32..=hi.log10().ceil() as i32)
            .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
            .filter(|v| *v >= lo * 0.999 && *v <= hi * 1.001)
            .collect();
        if round.len() >= 3 {
            let step = round.len().div_ceil(MOST_TICKS);
            return round.into_iter().step_by(step).collect();
        }
    }
    let step = distinct.len().div_ceil(MOST_TICKS - 2);
    distinct.iter().copied().step_by(step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_stops_at_100_and_other_axes_round_up() {
        let share = Axis::from("hit ratio (%)");
        assert_eq!(share.max, Some(100.0));
        assert_eq!(value_span(&share, &[12.0, 100.0]).hi, 100.0);
        // Past 100 (not a share after all) it rounds up as any axis.
        assert_eq!(value_span(&share, &[130.0]).hi, 200.0);
        assert_eq!(value_span(&Axis::from("req/s"), &[100.0]).hi, 200.0);
        assert_eq!(value_span(&Axis::from("req/s"), &[90.0]).hi, 100.0);
    }

    #[test]
    fn a_log_axis_spans_whole_decades_and_reaches_its_lines() {
        let a = Axis::new("latency (µs)")
            .scaled(Scale::Log)
            .with_line(100_000.0, "goal");
        let s = value_span(&a, &[30.0, 56_000.0]);
        assert_eq!((s.lo, s.hi), (1.0, 5.0));
        let labels: Vec<&str> = s.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["10", "100", "1k", "10k", "100k"]);
        let narrow = value_span(&Axis::new("x").scaled(Scale::Log), &[30.0, 80.0]);
        assert_eq!((narrow.lo, narrow.hi), (1.0, 2.0));
        assert!(narrow.ticks.iter().any(|t| t.1 == "50"));
    }

    #[test]
    fn percentiles_take_equal_room_per_nine() {
        let s = Scale::Percentile;
        assert!((s.pos(90.0) - 1.0).abs() < 1e-9);
        assert!((s.pos(99.999) - 5.0).abs() < 1e-6);
        let span = percentile_span(&[50.0, 90.0, 99.0, 99.9, 99.99, 99.999]);
        let labels: Vec<&str> = span.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["50%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
    }
}
