//! The statistics of `kvlab compare`: a series' mean, variance and lag-1
//! autocorrelation, its effective sample size (per-second samples of one run
//! are not independent: `n (1 − r1) / (1 + r1)`, as latte corrects them),
//! Welch's t-test on two series with those sizes, and the confidence interval
//! of a percentile read from an HDR histogram (distribution-free, from the
//! order statistics around its rank).

use hdrhistogram::Histogram;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The largest lag-1 autocorrelation kept (beyond it a series says almost
/// nothing: its effective size would fall to nearly 0).
const MAX_R1: f64 = 0.95;

/// A series of samples, summarised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Series {
    /// Samples.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Their variance (n − 1).
    pub var: f64,
    /// Lag-1 autocorrelation, clamped to `0..=MAX_R1` (0: independent).
    pub r1: f64,
}

impl Series {
    /// The summary of `xs` (`None` for fewer than 2 samples).
    pub fn of(xs: &[f64]) -> Option<Series> {
        let n = xs.len();
        if n < 2 {
            return None;
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let ss: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
        let var = ss / (n - 1) as f64;
        let r1 = match ss > 0.0 {
            true => {
                let c: f64 = xs.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
                (c / ss).clamp(0.0, MAX_R1)
            }
            false => 0.0,
        };
        Some(Series { n, mean, var, r1 })
    }

    /// Samples of independent worth: `n (1 − r1) / (1 + r1)`, at least 2.
    pub fn n_eff(&self) -> f64 {
        (self.n as f64 * (1.0 - self.r1) / (1.0 + self.r1)).max(2.0)
    }

    /// Coefficient of variation: standard deviation over mean (0 for a 0 mean).
    pub fn cv(&self) -> f64 {
        match self.mean.abs() > 0.0 {
            true => self.var.sqrt() / self.mean.abs(),
            false => 0.0,
        }
    }
}

/// Welch's test of `b`'s mean against `a`'s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// `b.mean − a.mean`.
    pub diff: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// The 95% confidence interval of `diff`.
    pub ci: (f64, f64),
}

/// Welch's t-test on `a` and `b` with their effective sizes (`None` when both
/// have no variance: nothing to test).
pub fn welch(a: &Series, b: &Series) -> Option<Welch> {
    let (na, nb) = (a.n_eff(), b.n_eff());
    let (va, vb) = (a.var / na, b.var / nb);
    let se2 = va + vb;
    let diff = b.mean - a.mean;
    if se2 <= 0.0 {
        return match diff == 0.0 {
            true => None,
            // No spread at all but different means: as certain as it gets.
            false => Some(Welch {
                diff,
                p: 0.0,
                ci: (diff, diff),
            }),
        };
    }
    let df = se2.powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0));
    let t = StudentsT::new(0.0, 1.0, df.max(1.0)).ok()?;
    let stat = diff / se2.sqrt();
    let p = 2.0 * (1.0 - t.cdf(stat.abs()));
    let half = t.inverse_cdf(0.975) * se2.sqrt();
    Some(Welch {
        diff,
        p: p.clamp(0.0, 1.0),
        ci: (diff - half, diff + half),
    })
}

/// The 95% confidence interval of quantile `q` of `h` (ns) in µs, when the
/// histogram's samples are worth `n_eff` independent ones: the values at the
/// quantiles `q ± 1.96 √(q (1 − q) / n_eff)` (the order statistics around
/// its rank).
pub fn quantile_ci(h: &Histogram<u64>, q: f64, n_eff: f64) -> (f64, f64) {
    if h.is_empty() {
        return (0.0, 0.0);
    }
    let dq = 1.96 * (q * (1.0 - q) / n_eff.max(1.0)).sqrt();
    let at = |x: f64| h.value_at_quantile(x.clamp(0.0, 1.0)) as f64 / 1000.0;
    (at(q - dq), at(q + dq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autocorrelated_series_count_for_less() {
        let flat = Series::of(&[1.0, 2.0, 1.0, 2.0, 1.0, 2.0]).unwrap();
        assert_eq!((flat.mean, flat.r1, flat.n_eff()), (1.5, 0.0, 6.0));
        let drift = Series::of(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!(drift.r1 > 0.5 && drift.n_eff() < 3.0, "{drift:?}");
        assert!(Series::of(&[3.0]).is_none());
        assert!((Series::of(&[9.0, 11.0]).unwrap().cv() - 0.1414).abs() < 1e-3);
    }

    #[test]
    fn welch_tells_a_shift_from_noise() {
        let a = Series::of(&[100.0, 102.0, 98.0, 101.0, 99.0, 100.0, 103.0, 97.0]).unwrap();
        let same = Series::of(&[101.0, 99.0, 100.0, 98.0, 102.0, 100.0, 97.0, 103.0]).unwrap();
        let lower = Series::of(&[80.0, 82.0, 78.0, 81.0, 79.0, 80.0, 83.0, 77.0]).unwrap();
        let w = welch(&a, &same).unwrap();
        assert!(w.p > 0.5 && w.ci.0 < 0.0 && w.ci.1 > 0.0, "{w:?}");
        let w = welch(&a, &lower).unwrap();
        assert!(w.p < 1e-6 && w.ci.1 < -15.0, "{w:?}");
        // The same shift, but each series drifting: far less certain.
        let up: Vec<f64> = (0..8).map(|i| 90.0 + 3.0 * i as f64).collect();
        let down: Vec<f64> = (0..8).map(|i| 70.0 + 3.0 * i as f64).collect();
        let drifting = welch(&Series::of(&up).unwrap(), &Series::of(&down).unwrap()).unwrap();
        assert!(drifting.p > w.p * 1e3, "{drifting:?}");
        let c = Series::of(&[5.0, 5.0]).unwrap();
        assert!(welch(&c, &c).is_none());
    }

    #[test]
    fn a_percentile_ci_narrows_with_more_samples() {
        let mut h = crate::results::stats::new_histogram();
        for i in 1..=100_000u64 {
            h.record(i * 10).unwrap();
        }
        let (lo, hi) = quantile_ci(&h, 0.99, 100_000.0);
        assert!(lo < 990.0 && hi > 990.0 && hi - lo < 20.0, "{lo} {hi}");
        let (lo2, hi2) = quantile_ci(&h, 0.99, 1_000.0);
        assert!(lo2 < lo && hi2 > hi, "{lo2} {hi2}");
    }
}
