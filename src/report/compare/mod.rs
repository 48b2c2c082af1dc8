//! `kvlab compare A B`: B's figures against A's, point by point — throughput,
//! p50, p99, p99.9 and CPU per request — each with its difference, how sure it
//! is, and a verdict: better, worse, below threshold or within noise. A pure
//! function of the results; rendered as text, Markdown and HTML by [`render`].
//!
//! How each figure is judged:
//! - with repetitions (a study that repeats its points, at least 2 a side):
//!   Welch's t-test over the repetitions' figures; their coefficient of
//!   variation is reported, and a point above the noise threshold is unstable;
//! - else throughput and the percentiles by Welch's t-test over the run's
//!   per-second figures, the sample size
//!   corrected for their autocorrelation; each percentile also shows the 95%
//!   confidence intervals of the two runs' figures, read from their HDR
//!   histograms (order statistics; the requests counted as worth as many
//!   independent samples as that autocorrelation leaves);
//! - CPU per request has one figure a run: without repetitions it is not
//!   tested, only held to the threshold.
//!
//! A difference is better or worse only when it is significant (p < 0.05) and
//! at least the threshold either way: the larger figure over the smaller is at
//! least 1 + threshold (B/A ≥ 1.5 or ≤ 1/1.5 at 50%), so `compare A B` and
//! `compare B A` always give mirrored verdicts (the change shown stays
//! (B − A) / A: +50% one way is −33.3% the other). The threshold is 5% by
//! default where both sides have repetitions, 50% where a side has one run
//! (per-second samples of one run say nothing of the next run's drift: two
//! runs of one configuration side by side on a shared 2-core machine differed
//! by up to 2x in client CPU per request and 1.5x in p50). A significant
//! difference smaller than that is below threshold; one not significant is
//! within noise.
//!
//! # Layout
//! - [`stats`]: the series, Welch's test, percentile intervals.
//! - `evidence`: a test's words, and one run's per-second series and
//!   percentile intervals.
//! - [`render`]: text, Markdown and HTML.

mod evidence;
pub mod render;
pub mod stats;

use std::collections::BTreeMap;

use crate::results::RunResult;
use crate::results::study::StudyResult;
use evidence::{one_run_a_side, tested};
use stats::Series;

/// What a difference is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// B is better, beyond noise and the threshold.
    Better,
    /// B is worse, beyond noise and the threshold.
    Worse,
    /// A significant difference (p < 0.05), but smaller than the threshold.
    BelowThreshold,
    /// Not shown to differ: not significant, or untested and smaller than the
    /// threshold.
    Noise,
    /// Beyond noise and the threshold, but the host was busy on one side
    /// only: not called better or worse on that alone.
    HostBusier,
}

impl Verdict {
    /// How it reads.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::BelowThreshold => "below threshold",
            Verdict::Noise => "within noise",
            Verdict::HostBusier => "host busier on one side",
        }
    }

    /// The verdict of the same figure with A and B swapped: better and worse
    /// trade places, the rest stay.
    pub fn mirrored(self) -> Verdict {
        match self {
            Verdict::Better => Verdict::Worse,
            Verdict::Worse => Verdict::Better,
            v => v,
        }
    }
}

/// How `kvlab compare` judges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rules {
    /// The smallest change, percent, called better or worse where both sides
    /// have repetitions.
    pub threshold_pct: f64,
    /// Repetitions varying more than this (coefficient of variation, percent)
    /// make a point unstable.
    pub noise_pct: f64,
    /// The smallest change, percent, called better or worse where a side has
    /// one run: a run's per-second figures say nothing of how the next run
    /// differs (a shared machine drifts by tens of percent between runs), and CPU
    /// per request is one figure a run, not tested at all.
    pub one_run_pct: f64,
}

impl Rules {
    /// The smallest change called better or worse, with repetitions on both
    /// sides or not.
    pub fn threshold(&self, reps: bool) -> f64 {
        match reps {
            true => self.threshold_pct,
            false => self.threshold_pct.max(self.one_run_pct),
        }
    }
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            threshold_pct: 5.0,
            noise_pct: 10.0,
            one_run_pct: 50.0,
        }
    }
}

/// One figure of one point, A against B.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Its name, e.g. `p99 µs`.
    pub name: &'static str,
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// (B − A) / A, percent.
    pub change_pct: f64,
    /// How sure: the p-value, the intervals, or why there is no test.
    pub evidence: String,
    /// Better, worse, below threshold or within noise.
    pub verdict: Verdict,
}

/// One point (a run, or a study point with its repetitions), compared.
#[derive(Clone, Debug, PartialEq)]
pub struct PointCmp {
    /// The point: its target and parameters.
    pub label: String,
    /// Its figures.
    pub figures: Vec<Figure>,
    /// What to keep in mind (unstable repetitions, errors).
    pub notes: Vec<String>,
    /// Figures whose repetitions vary past the noise limit on either side,
    /// e.g. `throughput req/s of A varies 35% between repetitions (over 10%)`:
    /// their verdicts cannot be trusted.
    pub unstable: Vec<String>,
    /// The host was busy on one side only, said (`host_load` of its runs):
    /// no figure is called better or worse on that alone.
    pub host_busier: Option<String>,
}

/// B against A.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// A's name (its file).
    pub a: String,
    /// B's name.
    pub b: String,
    /// The rules applied.
    pub rules: Rules,
    /// The smallest change called better or worse: the threshold where every
    /// point has repetitions, else the one-run threshold.
    pub applied_pct: f64,
    /// The points both have.
    pub points: Vec<PointCmp>,
    /// Points only one side has.
    pub unmatched: Vec<String>,
}

impl Comparison {
    /// Every figure B is worse in: (point, figure).
    pub fn worse(&self) -> Vec<(&str, &Figure)> {
        self.points
            .iter()
            .flat_map(|p| p.figures.iter().map(move |f| (p.label.as_str(), f)))
            .filter(|(_, f)| f.verdict == Verdict::Worse)
            .collect()
    }

    /// Every figure that varies past the noise limit between repetitions:
    /// (point, what varies).
    pub fn unstable(&self) -> Vec<(&str, &str)> {
        self.points
            .iter()
            .flat_map(|p| {
                p.unstable
                    .iter()
                    .map(move |u| (p.label.as_str(), u.as_str()))
            })
            .collect()
    }

    /// Every point the host was busier on one side of: (point, why).
    pub fn host_busier(&self) -> Vec<(&str, &str)> {
        self.points
            .iter()
            .filter_map(|p| Some((p.label.as_str(), p.host_busier.as_deref()?)))
            .collect()
    }

    /// Figures per verdict: better, worse, below threshold, within noise,
    /// host busier on one side.
    pub fn tally(&self) -> [usize; 5] {
        let mut t = [0; 5];
        for f in self.points.iter().flat_map(|p| &p.figures) {
            t[match f.verdict {
                Verdict::Better => 0,
                Verdict::Worse => 1,
                Verdict::BelowThreshold => 2,
                Verdict::Noise => 3,
                Verdict::HostBusier => 4,
            }] += 1;
        }
        t
    }
}

/// A results file: one run, or a study.
pub enum Results {
    /// `kvlab run --json`.
    Run(Box<RunResult>),
    /// `kvlab study`.
    Study(Box<StudyResult>),
}

impl Results {
    /// Its points: label → the runs of it (repetitions). A run is labelled
    /// by its architecture (a cache-aside run is not its database alone).
    fn points(&self) -> BTreeMap<String, Vec<&RunResult>> {
        let mut m: BTreeMap<String, Vec<&RunResult>> = BTreeMap::new();
        match self {
            Results::Run(r) => {
                m.insert(r.architecture(), vec![r]);
            }
            Results::Study(s) => {
                for p in &s.points {
                    if let Some(r) = p.result.as_ref() {
                        m.entry(p.label()).or_default().push(r);
                    }
                }
            }
        }
        m
    }
}

/// Compares `b` (named `bn`) against `a` (named `an`) under `rules`.
pub fn compare(a: &Results, an: &str, b: &Results, bn: &str, rules: Rules) -> Comparison {
    let (pa, pb) = (a.points(), b.points());
    let single = matches!((a, b), (Results::Run(_), Results::Run(_)));
    let mut points = Vec::new();
    let mut unmatched = Vec::new();
    for (label, ra) in &pa {
        // Two runs are one point whatever their targets are called.
        let rb = match single {
            true => pb.values().next(),
            false => pb.get(label),
        };
        match rb {
            Some(rb) => points.push(point(label, ra, rb, rules)),
            None => unmatched.push(format!("{label} (only in {an})")),
        }
    }
    if !single {
        unmatched.extend(
            pb.keys()
                .filter(|k| !pa.contains_key(*k))
                .map(|k| format!("{k} (only in {bn})")),
        );
    }
    let reps = |p: &BTreeMap<String, Vec<&RunResult>>| p.values().all(|r| r.len() >= 2);
    Comparison {
        a: an.to_string(),
        b: bn.to_string(),
        rules,
        applied_pct: rules.threshold(reps(&pa) && reps(&pb)),
        points,
        unmatched,
    }
}

/// Which way is better for a figure.
#[derive(Clone, Copy)]
enum Better {
    Higher,
    Lower,
}

/// One point's figures.
fn point(label: &str, a: &[&RunResult], b: &[&RunResult], rules: Rules) -> PointCmp {
    let label = match (a.len(), b.len()) {
        (1, 1) if a[0].architecture() != b[0].architecture() => {
            format!("{} → {}", a[0].architecture(), b[0].architecture())
        }
        _ => label.to_string(),
    };
    let mut notes = Vec::new();
    let mut unstable = Vec::new();
    let reps = a.len() >= 2 && b.len() >= 2;
    type Get = fn(&RunResult) -> Option<f64>;
    let whole: [(&'static str, Better, Get); 6] = [
        ("throughput req/s", Better::Higher, |r| {
            Some(r.totals.throughput_rps)
        }),
        ("p50 µs", Better::Lower, |r| Some(r.latency.latency_us.p50)),
        ("p99 µs", Better::Lower, |r| Some(r.latency.latency_us.p99)),
        ("p99.9 µs", Better::Lower, |r| {
            Some(r.latency.latency_us.p999)
        }),
        ("client CPU µs/req", Better::Lower, |r| {
            Some(r.client.client_cpu_us_per_request)
        }),
        ("server CPU µs/req", Better::Lower, |r| {
            r.server.server_cpu_us_per_request
        }),
    ];
    let mut figures = Vec::new();
    for (i, (name, better, get)) in whole.into_iter().enumerate() {
        let va: Vec<f64> = a.iter().filter_map(|r| get(r)).collect();
        let vb: Vec<f64> = b.iter().filter_map(|r| get(r)).collect();
        if va.is_empty() || vb.is_empty() {
            continue;
        }
        let (ma, mb) = (mean(&va), mean(&vb));
        let change = pct(ma, mb);
        // Whether a test found them apart (p < 0.05); `None`: no test.
        let (evidence, apart) = if reps {
            let (sa, sb) = (Series::of(&va), Series::of(&vb));
            for (side, s) in [("A", sa), ("B", sb)] {
                if let Some(s) = s.filter(|s| s.cv() * 100.0 > rules.noise_pct) {
                    let what = format!(
                        "{name} of {side} varies {:.0}% between repetitions (over {}%)",
                        s.cv() * 100.0,
                        rules.noise_pct
                    );
                    notes.push(format!("unstable: {what}"));
                    unstable.push(what);
                }
            }
            tested(sa.zip(sb), "over repetitions")
        } else {
            one_run_a_side(i, a[0], b[0])
        };
        let verdict = judge(ma, mb, apart, rules.threshold(reps), better);
        figures.push(Figure {
            name,
            a: ma,
            b: mb,
            change_pct: change,
            evidence,
            verdict,
        });
    }
    notes.extend(not_valid(a, b));
    let host_busier = busier(a, b);
    if let Some(why) = &host_busier {
        notes.push(format!(
            "{why}: a difference may be the host's, not the change; none is called better or worse on that alone (run both on a quiet host)"
        ));
        for f in &mut figures {
            if matches!(f.verdict, Verdict::Better | Verdict::Worse) {
                f.verdict = Verdict::HostBusier;
            }
        }
    }
    PointCmp {
        label,
        figures,
        notes,
        unstable,
        host_busier,
    }
}

/// A note for each side, `a` then `b`, that had errors or a result that is
/// not valid.
fn not_valid(a: &[&RunResult], b: &[&RunResult]) -> Vec<String> {
    let mut notes = Vec::new();
    for (side, rs) in [("A", a), ("B", b)] {
        let errors: u64 = rs.iter().map(|r| r.totals.errors).sum();
        if errors > 0 || rs.iter().any(|r| !r.valid) {
            notes.push(format!(
                "{side} had {errors} errors or a result that is not valid: its figures may not be the target's"
            ));
        }
    }
    notes
}

/// The host busy (past kvlab's limits, as a decision weighs its steps)
/// during the runs of one side and not the other's, said; `None` where
/// both or neither were, or a run did not record it.
fn busier(a: &[&RunResult], b: &[&RunResult]) -> Option<String> {
    let busy = |rs: &[&RunResult]| -> Option<Option<String>> {
        let loads: Vec<_> = rs.iter().map(|r| r.host.host_load).collect::<Option<_>>()?;
        Some(
            loads
                .iter()
                .find_map(crate::results::host_load::busy_by_kvlab),
        )
    };
    match (busy(a)?, busy(b)?) {
        (Some(why), None) => Some(format!("the host was busy during A only ({why})")),
        (None, Some(why)) => Some(format!("the host was busy during B only ({why})")),
        _ => None,
    }
}

/// The verdict on A's figure `a` against B's `b`: `apart` says whether a test
/// found them significantly apart (`None`: no test, the threshold alone
/// decides). The size is judged either way ([`ratio`]), so swapping A and B
/// mirrors the verdict.
fn judge(a: f64, b: f64, apart: Option<bool>, threshold_pct: f64, better: Better) -> Verdict {
    let big = ratio(a, b) >= 1.0 + threshold_pct / 100.0;
    match (apart, big, better) {
        (Some(false), ..) | (None, false, _) => Verdict::Noise,
        (Some(true), false, _) => Verdict::BelowThreshold,
        (_, true, Better::Higher) if b > a => Verdict::Better,
        (_, true, Better::Lower) if b < a => Verdict::Better,
        (_, true, _) => Verdict::Worse,
    }
}

/// The size of a change whichever side is A: the larger magnitude over the
/// smaller (1 for none, infinite from 0 to anything else, NaN for NaN).
pub fn ratio(a: f64, b: f64) -> f64 {
    let (a, b) = (a.abs(), b.abs());
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == b {
        return 1.0;
    }
    a.max(b) / a.min(b)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// (b − a) / a, percent (0 when both are 0, infinite from 0 to anything else).
fn pct(a: f64, b: f64) -> f64 {
    match (a.abs() > 0.0, b == a) {
        (_, true) => 0.0,
        (true, false) => (b - a) / a.abs() * 100.0,
        (false, false) => (b - a) * f64::INFINITY,
    }
}

#[cfg(test)]
mod tests;
