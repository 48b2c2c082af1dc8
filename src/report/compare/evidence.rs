//! How sure a difference is: Welch's test over two series, worded as the
//! evidence; where a side has one run, the series of its per-second figures
//! and its percentiles' confidence intervals from its HDR histogram.

use super::stats::{Series, quantile_ci, welch};
use crate::results::RunResult;
use crate::results::stats::decode_histogram;

/// The evidence for figure `i` (throughput, p50, p99, p99.9, then CPU per
/// request) where a side has one run, `a` against `b`, and whether a test
/// found them apart (`None`: no test): throughput and the percentiles tested
/// over the runs' per-second figures, each percentile with both runs'
/// confidence intervals; CPU per request, one figure a run, untested.
pub(super) fn one_run_a_side(i: usize, a: &RunResult, b: &RunResult) -> (String, Option<bool>) {
    match i {
        0..=3 => {
            let (sa, sb) = (per_second(a, i), per_second(b, i));
            let how = match [a, b].iter().any(|r| has_minutes(r)) {
                true => "per second over each run's per-second part, autocorrelation-corrected",
                false => "per second, autocorrelation-corrected",
            };
            let (mut evidence, apart) = tested(sa.zip(sb), how);
            if let Some(q) = [None, Some(0.5), Some(0.99), Some(0.999)][i] {
                evidence.push_str(&intervals(a, b, q));
            }
            (evidence, apart)
        }
        _ => ("one figure a run: no test".to_string(), None),
    }
}

/// Welch's verdict on a pair of series: the evidence and whether they differ.
pub(super) fn tested(s: Option<(Series, Series)>, how: &str) -> (String, Option<bool>) {
    let Some((sa, sb)) = s else {
        return (format!("too few samples to test ({how})"), Some(false));
    };
    match welch(&sa, &sb) {
        None => (format!("identical ({how})"), Some(false)),
        Some(w) => (
            format!(
                "p = {}, 95% CI of B − A {:+.1} .. {:+.1} ({how}; n_eff {:.0} / {:.0})",
                p_text(w.p),
                w.ci.0,
                w.ci.1,
                sa.n_eff(),
                sb.n_eff()
            ),
            Some(w.p < 0.05),
        ),
    }
}

/// A p-value as text.
fn p_text(p: f64) -> String {
    match p < 0.0001 {
        true => "< 0.0001".into(),
        false => format!("{p:.4}"),
    }
}

/// Run `r`'s per-second series of figure `i` (0 throughput, 1 p50, 2 p99,
/// 3 p99.9) over the window's whole seconds.
///
/// Per-second entries only: past the timeline's per-second part
/// (`load.timeline_seconds`) its entries are minutes, whose means vary far
/// less than seconds do; mixed into one series they would break the test's
/// one-distribution assumption. A long run is tested on its first seconds
/// (the whole-run figures beside the test still cover the whole run).
pub(super) fn per_second(r: &RunResult, i: usize) -> Option<Series> {
    // A last second past the window's whole seconds is partial: left out.
    let whole = (r.totals.duration_s + 0.05).floor() as i64;
    let xs: Vec<f64> = r
        .timeline
        .iter()
        .filter(|s| s.span_s <= 1 && (0..whole).contains(&s.second))
        .filter_map(|s| match i {
            0 => Some((s.requests - s.errors.min(s.requests)) as f64),
            1 => Some(s.p50_us),
            2 => Some(s.p99_us),
            // Results from before p99.9 was kept per second have 0 there;
            // a sharded run's seconds keep their histograms.
            _ if s.p999_us > 0.0 => Some(s.p999_us),
            _ => {
                let h = decode_histogram(s.histogram.as_deref()?).ok()?;
                (!h.is_empty()).then(|| h.value_at_quantile(0.999) as f64 / 1000.0)
            }
        })
        .collect();
    Series::of(&xs)
}

/// Whether `r`'s timeline has entries of a minute (past its per-second part).
pub(super) fn has_minutes(r: &RunResult) -> bool {
    r.timeline.iter().any(|s| s.span_s > 1)
}

/// The 95% intervals of quantile `q` of two runs, from their whole-run HDR
/// histograms (order statistics; the requests worth as many independent
/// samples as their per-second p99s' autocorrelation leaves).
fn intervals(a: &RunResult, b: &RunResult, q: f64) -> String {
    let ci = |r: &RunResult| -> Option<(f64, f64)> {
        let h = decode_histogram(&r.histograms.histogram).ok()?;
        let share = per_second(r, 2).map_or(1.0, |s| s.n_eff() / s.n as f64);
        Some(quantile_ci(&h, q, h.len() as f64 * share))
    };
    match (ci(a), ci(b)) {
        (Some(x), Some(y)) => format!(
            "; the runs' 95% CIs (HDR) A {}..{}, B {}..{} µs",
            short(x.0),
            short(x.1),
            short(y.0),
            short(y.1)
        ),
        _ => String::new(),
    }
}

/// A latency as text: µs, whole beyond 100.
fn short(x: f64) -> String {
    match x < 100.0 {
        true => format!("{x:.1}"),
        false => format!("{x:.0}"),
    }
}
