//! The decision's rows and answer at one end of the ranges and at one stated
//! load: what [`super::decision`] evaluates as measured, at both ends, and
//! over the sweeps of [`super::flips`].

use super::ask::Asked;
use super::carry;
use super::cpu::CpuCurves;
use super::measure::{Measured, Searched};
use super::others;
use super::rows::{self, At};
use super::size::PerCore;
use super::{loss_sized, rule};
use crate::results::decide::{Answer, ArchName, Architecture, CacheLoss, StatedLoad, Verdict};
use crate::workload::trace::model::Model;

/// Which figures a row is sized with: the measured ones, or one end of
/// their ranges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum End {
    /// The capacity found, the run's hit ratio.
    Mid,
    /// The capacity's bracket at its top, the hit ratio's best seconds.
    Low,
    /// The capacity found, the hit ratio's worst seconds.
    High,
}

/// The rows and the answer at one end.
pub struct Evaluated {
    pub rows: Vec<Architecture>,
    pub answer: Answer,
    pub loss: Option<CacheLoss>,
}

/// The rows and the answer for `ask` at `end`.
pub fn evaluate(ask: &Asked, m: &Measured, model: &Model, end: End) -> Evaluated {
    evaluate_at(ask, m, at(ask, m, model, end))
}

/// The hit ratio of all reads below which cache-aside (as the rule weighs
/// it) costs more a month than the database alone at the stated load, its
/// cache's memory as chosen (`None`: a cost not known, or no hit ratio
/// makes it cost less).
pub fn break_even_hit(ask: &Asked, m: &Measured, model: &Model) -> Option<f64> {
    let base = at(ask, m, model, End::Mid);
    let costs = |hit: f64| {
        let e = evaluate_at(
            ask,
            m,
            At {
                aside_hit: Some(hit),
                ..base.clone()
            },
        );
        let row = |n: ArchName| e.rows.iter().find(|r| r.name == n);
        let aside = weighed(
            ask,
            row(ArchName::CacheAside)?,
            row(ArchName::CacheAsideLossSized),
        );
        Some((row(ArchName::Database)?.monthly_cost?, aside.monthly_cost?))
    };
    let (db, best) = costs(1.0)?;
    if best > db {
        return None;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    if costs(0.0)?.1 <= db {
        return Some(0.0);
    }
    for _ in 0..30 {
        let mid = (lo + hi) / 2.0;
        match costs(mid)?.1 <= db {
            true => hi = mid,
            false => lo = mid,
        }
    }
    Some(hi)
}

/// The cache-aside row the rule weighs: sized to survive a cache loss where
/// the policy asks (`--survive-cache-loss`) and there is one, else `aside`.
fn weighed<'a>(
    ask: &Asked,
    aside: &'a Architecture,
    sized: Option<&'a Architecture>,
) -> &'a Architecture {
    match ask.assumed.policy.survive_cache_loss {
        true => sized.unwrap_or(aside),
        false => aside,
    }
}

/// The rows and the answer for `ask` with the figures `at`.
fn evaluate_at(ask: &Asked, m: &Measured, at: At) -> Evaluated {
    let per_key = m.copy.per_key(ask.load.keys);
    let db = rows::database(ask, &m.db, at.searched.db, per_key);
    let cache = rows::cache_alone(ask, &m.cache, at.searched.cache, per_key);
    let aside = rows::cache_aside(ask, m, &at, per_key);
    let mut loss = m.loss.clone();
    if let Some(l) = loss.as_mut() {
        l.database_alone_carries = db.within_goal;
    }
    let mut aside = rows::with_loss(aside, loss.as_ref(), &db, ask.load.rps);
    let sized = match ask.load.deployment.catalogued() {
        true => loss_sized::row(ask, &aside, loss.as_ref()),
        false => None,
    };
    if let Some(line) = loss
        .as_ref()
        .and_then(|l| loss_sized::on_shape(&aside, l, ask.load.rps, ask.load.write_share))
    {
        let before = aside.on_cache_loss.take().unwrap_or_default();
        aside.on_cache_loss = Some(format!("{before}; {line}"));
    }
    let p = &ask.assumed.policy;
    let w = rule::Weigh {
        keep_saving: p.keep_saving,
        keep_saving_month: p.keep_saving_month,
        currency: &ask.load.currency,
    };
    let mut answer = rule::answer(
        Some(&db),
        Some(weighed(ask, &aside, sized.as_ref())),
        Some(&cache),
        &w,
    );
    let weighs_aside = matches!(answer.answer, Verdict::KeepCache | Verdict::DropCache);
    if let Some(s) = sized.as_ref().filter(|_| weighs_aside) {
        answer.because = format!(
            "{}; {}",
            answer.because,
            loss_sized::weighed(&aside, s, p.survive_cache_loss, &w)
        );
    }
    let others: Vec<Architecture> = m
        .others
        .iter()
        .map(|o| others::row(ask, o, per_key, (&at, m.db.bytes)))
        .collect();
    rule::beside(&mut answer, &others, &w);
    let (before, after) = others.split_at(others.len().min(1));
    let rows = [
        vec![db],
        before.to_vec(),
        vec![aside],
        sized.into_iter().collect(),
        after.to_vec(),
        vec![cache],
    ]
    .concat();
    Evaluated { rows, answer, loss }
}

/// The figures of `end`: operations per core from the searches, cache-aside's
/// hit ratio carried to the stated keys (and to the stated mix where it
/// differs from the measured one), the searches' CPU curves.
fn at(ask: &Asked, m: &Measured, model: &Model, end: End) -> At {
    let pc = |s: &Searched| match end {
        End::Low => s.per_core_top(),
        _ => s.per_core(),
    };
    let searched = PerCore {
        db: pc(&m.db),
        cache: pc(&m.cache),
    };
    // Behind or beside a cache, a product whose search found no rate within
    // the goal (kvlab itself limited on a busy host, say) is sized by its
    // closed loop's rate per core, as the database behind a cache is.
    let any = PerCore {
        db: rows::any_per_core(&m.db, searched.db),
        cache: rows::any_per_core(&m.cache, searched.cache),
    };
    let read = |ws: f64| (1.0 - ws).max(1e-9);
    let mix = read(ask.load.write_share) / read(m.measured_for.write_share);
    let aside = m.aside.as_ref().and_then(|a| {
        let x = a.result.cache_aside.as_ref()?;
        let hit = match (end, carry::hit_spread(&a.result)) {
            (End::Low, Some([_, best])) => best.max(x.hit_ratio),
            (End::High, Some([worst, _])) => worst.min(x.hit_ratio),
            _ => x.hit_ratio,
        };
        let carried = model
            .carry_items(
                hit,
                carry::held_items(&a.result)?,
                m.copy.keys,
                ask.load.keys,
            )
            .hit
            * mix;
        Some((x.hit_ratio, carried))
    });
    At {
        searched,
        any,
        aside_hit: aside.map(|a| a.1),
        hit_delta: aside.map_or(0.0, |(measured, carried)| carried - measured),
        cpu: CpuCurves::searched(&m.db, &m.cache),
    }
}

/// `ask` with its stated load changed by `change`.
pub fn with_load(ask: &Asked, change: impl FnOnce(&mut StatedLoad)) -> Asked {
    let mut a = ask.clone();
    change(&mut a.load);
    a
}
