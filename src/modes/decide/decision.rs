//! The decision as one pure function of the stated load and the saved
//! measurements ([`decision`]): the rows at the measured figures and at both
//! ends of their ranges, the miss-ratio curve carried to the stated keys,
//! the cache loss, the answer (and whether it is a close call), where it
//! flips, and each row's cost over the rate. `kvlab decide --from` calls it
//! on a saved decision without running anything.

use super::ask::Asked;
use super::carry;
use super::evaluate::{self, End, evaluate, with_load};
pub use super::measure::Measured;
use super::{flips, held};
use crate::results::decide::said::Extrapolated;
use crate::results::decide::{Answer, Architecture, Decision, Range, RatePoint, Scaled, Verdict};
use crate::results::stats::num;
use crate::workload::trace::model::Model;

/// The decision for `ask` (its stated load) from `m`.
pub fn decision(ask: &Asked, m: &Measured) -> Decision {
    let model = carry::model_of(ask, m.measured_for.write_share);
    let mid = evaluate(ask, m, &model, End::Mid);
    let low = evaluate(ask, m, &model, End::Low);
    let high = evaluate(ask, m, &model, End::High);
    let mut architectures = mid.rows;
    for (i, r) in architectures.iter_mut().enumerate() {
        r.range = range([&low.rows[i], r, &high.rows[i]]);
    }
    let mut answer = mid.answer;
    answer.close_call = close_call(&answer, (&low.answer, &high.answer), m, ask);
    // Only from measurements that held: else no answer, and none at other
    // loads either.
    let unheld = held::unheld(ask, m);
    if !unheld.is_empty() {
        answer = Answer {
            answer: Verdict::NotMeasured,
            because: format!(
                "kvlab could not measure what the answer rests on, so it gives none: {}",
                unheld.join("; ")
            ),
            close_call: None,
        };
    }
    let measured = unheld.is_empty();
    let per_key = m.copy.per_key(ask.load.keys);
    let scaled = Scaled {
        keys: m.copy.keys,
        factor: m.copy.factor(ask.load.keys),
        why: m.copy.why.clone(),
        bytes_per_key: m.copy.bytes_per_key,
        rate: m.rate,
        rate_why: m.rate_why.clone(),
    };
    let (check, ttl) = carry::said_of(ask, m, &model);
    let extrapolations = Extrapolated {
        load: &ask.load,
        measured_for: &m.measured_for,
        scaled: &scaled,
        assumed: &ask.assumed,
        distribution: &ask.plan.workload.distribution,
        quick: ask.quick,
        run_s: ask.run_s(),
        given_by_url: ask.plan.target.external.is_some() || ask.cache.cache.external.is_some(),
        check,
        ttl,
        cpu: measured_cpu(m),
    }
    .said();
    Decision {
        kvlab_version: env!("CARGO_PKG_VERSION").to_string(),
        load: ask.load.clone(),
        extrapolations,
        scaled,
        miss_ratio_curve: carry::curve(ask, m, &model, per_key),
        cache_loss: mid.loss,
        host_busy: m.host_busy.iter().map(|(_, b)| b.clone()).collect(),
        flips: match measured {
            true => flips::find(ask, m, &model),
            false => Vec::new(),
        },
        break_even_hit_ratio: measured
            .then(|| evaluate::break_even_hit(ask, m, &model))
            .flatten(),
        by_rate: by_rate(ask, m, &model, &architectures)
            .into_iter()
            .map(|mut p| {
                if !measured {
                    p.answer = Verdict::NotMeasured;
                }
                p
            })
            .collect(),
        cleanup: Vec::new(),
        architectures,
        assumptions: ask.assumed,
        decision: answer,
    }
}

/// The CPU model of the machine that measured, from the database's search.
fn measured_cpu(m: &Measured) -> Option<&str> {
    let step = m.db.capacity.steps.first()?;
    step.result.host.machine.as_ref().map(|x| x.cpu.as_str())
}

/// A row's range from its figures at the low end, as measured, and at the
/// high end (`None`: no figure at all).
fn range(rows: [&Architecture; 3]) -> Option<Range> {
    fn span<T: Copy + PartialOrd>(v: [Option<T>; 3]) -> Option<[T; 2]> {
        let v: Vec<T> = v.into_iter().collect::<Option<Vec<T>>>()?;
        let lo = v
            .iter()
            .copied()
            .fold(v[0], |a, b| if b < a { b } else { a });
        let hi = v
            .iter()
            .copied()
            .fold(v[0], |a, b| if b > a { b } else { a });
        Some([lo, hi])
    }
    let r = Range {
        cores: span(rows.map(|r| r.server_cores)),
        memory_bytes: span(rows.map(|r| r.memory_bytes)),
        monthly_cost: span(rows.map(|r| r.monthly_cost)),
    };
    (r.cores.is_some() || r.memory_bytes.is_some() || r.monthly_cost.is_some()).then_some(r)
}

/// A close call: the answer at one end of the ranges is another, and what
/// would settle it.
fn close_call(
    mid: &Answer,
    (low, high): (&Answer, &Answer),
    m: &Measured,
    ask: &Asked,
) -> Option<String> {
    if low.answer == mid.answer && high.answer == mid.answer {
        return None;
    }
    let mut settle = Vec::new();
    if let Some([pass, fail]) = m.db.capacity.bracket {
        settle.push(format!(
            "a finer capacity search of the database (its capacity lies between {} and {} req/s{})",
            num(pass),
            num(fail),
            match ask.quick {
                true => "; drop --quick for more steps",
                false => "",
            }
        ));
    }
    if let Some([worst, best]) = m.aside.as_ref().and_then(|a| carry::hit_spread(&a.result)) {
        settle.push(format!(
            "longer runs (--duration) for the cache's hit ratio (its seconds ranged {:.1}–{:.1}%)",
            worst * 100.0,
            best * 100.0
        ));
    }
    if settle.is_empty() {
        settle.push("a longer measurement (drop --quick, a larger --duration)".into());
    }
    Some(format!(
        "a close call: at the low end of the ranges (the capacity searches' brackets at their top, the cache's best seconds) the answer is {}, at the high end (the capacity found, the cache's worst seconds) {}; what would settle it: {}",
        low.answer,
        high.answer,
        settle.join("; ")
    ))
}

/// Each row's cost and the answer over the rates of the method's sweep.
fn by_rate(ask: &Asked, m: &Measured, model: &Model, rows: &[Architecture]) -> Vec<RatePoint> {
    ask.assumed
        .method
        .rate_factors()
        .map(|f| {
            let at = with_load(ask, |l| l.rps *= f);
            let e = evaluate(&at, m, model, End::Mid);
            RatePoint {
                rps: at.load.rps,
                answer: e.answer.answer,
                monthly_cost: rows
                    .iter()
                    .zip(&e.rows)
                    .map(|(r, x)| (r.name, x.monthly_cost.filter(|_| x.within_goal)))
                    .collect(),
            }
        })
        .collect()
}
