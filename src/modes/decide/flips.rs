//! Where the answer flips: the decision evaluated with the stated rate, the
//! write share and the key count moved over a range (the rate from a
//! hundredth to a hundred times the stated, the keys from a tenth to ten
//! times, the write share from 0 to 90%),
//! each change of answer found between two grid points and narrowed by
//! bisection to the first value with the new answer.

use super::ask::Asked;
use super::evaluate::{End, evaluate, with_load};
use super::measure::Measured;
use crate::results::decide::{Flip, StatedLoad, Variable, Verdict};
use crate::results::stats::num;
use crate::workload::trace::model::Model;

/// Bisection steps between two grid points that answer differently.
const NARROW: usize = 10;

impl Variable {
    /// The grid it is swept over, ascending.
    fn grid(self, ask: &Asked) -> Vec<f64> {
        let l = &ask.load;
        match self {
            Variable::Rps => ask
                .assumed
                .method
                .rate_factors()
                .map(|f| l.rps * f)
                .collect(),
            Variable::WriteShare => (0..=18).map(|k| k as f64 * 0.05).collect(),
            Variable::Keys => (-6..=6)
                .map(|k| {
                    (l.keys as f64 * 10f64.powf(k as f64 / 6.0))
                        .round()
                        .max(1.0)
                })
                .collect(),
        }
    }

    /// `l` with this figure at `v`.
    fn set(self, l: &mut StatedLoad, v: f64) {
        match self {
            Variable::Rps => l.rps = v,
            Variable::WriteShare => l.write_share = v,
            Variable::Keys => l.keys = v.round().max(1.0) as u64,
        }
    }

    /// The midpoint of `a` and `b` on this figure's scale.
    fn mid(self, a: f64, b: f64) -> f64 {
        match self {
            Variable::WriteShare => (a + b) / 2.0,
            _ => (a * b).sqrt(),
        }
    }

    /// `v` as said.
    fn said(self, v: f64) -> String {
        match self {
            Variable::Rps => format!("{} req/s", num(v)),
            Variable::WriteShare => format!("{:.0}% writes", v * 100.0),
            Variable::Keys => format!("{} keys", num(v)),
        }
    }
}

/// Every flip of the answer over the three sweeps.
pub(super) fn find(ask: &Asked, m: &Measured, model: &Model) -> Vec<Flip> {
    let mut out = Vec::new();
    for var in [Variable::Rps, Variable::WriteShare, Variable::Keys] {
        let answer = |v: f64| {
            let at = with_load(ask, |l| var.set(l, v));
            evaluate(&at, m, model, End::Mid).answer.answer
        };
        let grid = var.grid(ask);
        let answers: Vec<Verdict> = grid.iter().map(|&v| answer(v)).collect();
        for i in 1..grid.len() {
            if answers[i] == answers[i - 1] {
                continue;
            }
            let (mut lo, mut hi) = (grid[i - 1], grid[i]);
            for _ in 0..NARROW {
                let mid = var.mid(lo, hi);
                match answer(mid) == answers[i - 1] {
                    true => lo = mid,
                    false => hi = mid,
                }
            }
            let at = round(var, hi);
            out.push(Flip {
                variable: var,
                at,
                from: answers[i - 1],
                to: answer(hi),
                said: said(var, at, answers[i - 1], answer(hi)),
            });
        }
    }
    out
}

/// `v` to three significant figures (a write share to a tenth of a point).
fn round(var: Variable, v: f64) -> f64 {
    match var {
        Variable::WriteShare => (v * 1000.0).round() / 1000.0,
        _ => {
            let mag = 10f64.powf(v.abs().max(1.0).log10().floor() - 2.0);
            (v / mag).round() * mag
        }
    }
}

/// A flip in words: "the cache starts to pay from 61,000 req/s".
fn said(var: Variable, at: f64, from: Verdict, to: Verdict) -> String {
    let v = var.said(at);
    match (from, to) {
        (_, Verdict::KeepCache) => format!("the cache starts to pay from {v}"),
        (Verdict::KeepCache, Verdict::DropCache) => {
            format!("the cache stops paying from {v}: the database alone does")
        }
        (_, Verdict::CannotMeet) => format!("from {v} nothing meets the goal here"),
        (_, Verdict::CacheOnly) => format!("from {v} only the cache alone meets the goal"),
        (_, Verdict::DropCache) => format!("from {v} the database alone meets the goal: {to}"),
        (_, Verdict::NotMeasured) => format!("from {v} kvlab's measurements do not hold"),
    }
}
