//! The decision as one pure function of the stated load and the saved
//! measurements ([`decision`]): the rows at the measured figures and at both
//! ends of their ranges, the miss-ratio curve carried to the stated keys,
//! the cache loss, the answer (and whether it is a close call), where it
//! flips, and each row's cost over the rate. `kvlab decide --from` calls it
//! on a saved decision without running anything.

use super::carry::{self, Model};
use super::measure::{AsideRun, CurveRun, Searched};
use super::others::{self, Other};
use super::rows::{self, At};
use super::size::PerCore;
use super::{Ask, flips, rule};
use crate::results::decide::{
    Answer, Architecture, CacheLoss, Decision, Range, RatePoint, Scaled, StatedLoad,
};
use crate::results::stats::num;

/// What the runs of a decision measured (each step as saved under `--out`).
#[derive(Clone, Debug)]
pub struct Measured {
    /// The copy measured and the rate of the fixed-rate runs, and why.
    pub scaled: Scaled,
    /// The database alone's capacity search.
    pub db: Searched,
    /// The cache alone's.
    pub cache: Searched,
    /// The miss-ratio curve's settled runs.
    pub curve: Vec<CurveRun>,
    /// The cache-aside configuration chosen and its confirmation.
    pub aside: Option<AsideRun>,
    /// The cache loss.
    pub loss: Option<CacheLoss>,
    /// The other architectures' runs.
    pub others: Vec<Other>,
    /// The steps the host was busy in, said.
    pub host_busy: Vec<String>,
    /// The load the runs were made for.
    pub measured_for: StatedLoad,
}

/// Which figures a row is sized with: the measured ones, or one end of
/// their ranges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum End {
    /// The capacity found, the run's hit ratio.
    Mid,
    /// The capacity's bracket at its top, the hit ratio's best seconds.
    Low,
    /// The capacity found, the hit ratio's worst seconds.
    High,
}

/// The rows and the answer at one end.
pub(super) struct Evaluated {
    pub rows: Vec<Architecture>,
    pub answer: Answer,
    pub loss: Option<CacheLoss>,
}

/// The decision for `ask` (its stated load) from `m`.
pub fn decision(ask: &Ask, m: &Measured) -> Decision {
    let model = Model::new(&ask.plan.workload.distribution, m.measured_for.write_share);
    let mid = evaluate(ask, m, &model, End::Mid);
    let low = evaluate(ask, m, &model, End::Low);
    let high = evaluate(ask, m, &model, End::High);
    let mut architectures = mid.rows;
    for (i, r) in architectures.iter_mut().enumerate() {
        r.range = range([&low.rows[i], r, &high.rows[i]]);
    }
    let mut answer = mid.answer;
    answer.close_call = close_call(&answer, (&low.answer, &high.answer), m, ask);
    let per_key = ask.load.keys as f64 / m.scaled.keys.max(1) as f64;
    let scaled = Scaled {
        factor: m.scaled.keys as f64 / ask.load.keys.max(1) as f64,
        ..m.scaled.clone()
    };
    let mut extrapolations = rows::extrapolations(ask, &scaled);
    extrapolations.insert(2, carried_said(ask, m, &model));
    if m.measured_for != ask.load {
        extrapolations.push(format!(
            "Recomputed (kvlab decide --from) from runs made for {} req/s at p99 ≤ {} ms and {} keys; the runs' rates and the copy are as measured then.",
            num(m.measured_for.rps),
            m.measured_for.p99_ms,
            num(m.measured_for.keys as f64)
        ));
    }
    Decision {
        kvlab_version: env!("CARGO_PKG_VERSION").to_string(),
        load: ask.load.clone(),
        extrapolations,
        scaled,
        miss_ratio_curve: carry::curve(ask, m, &model, per_key),
        cache_loss: mid.loss,
        host_busy: m.host_busy.clone(),
        flips: flips::find(ask, m, &model),
        by_rate: by_rate(ask, m, &model, &architectures),
        architectures,
        decision: answer,
    }
}

/// The rows and the answer for `ask` at `end`.
pub(super) fn evaluate(ask: &Ask, m: &Measured, model: &Model, end: End) -> Evaluated {
    let per_key = ask.load.keys as f64 / m.scaled.keys.max(1) as f64;
    let at = at(ask, m, model, end);
    let db = rows::database(ask, &m.db, at.searched.db, per_key);
    let cache = rows::cache_alone(ask, &m.cache, at.searched.cache, per_key);
    let aside = rows::cache_aside(ask, m, &at, per_key);
    let mut loss = m.loss.clone();
    if let Some(l) = loss.as_mut() {
        l.database_alone_carries = db.within_goal;
    }
    let aside = rows::with_loss(aside, loss.as_ref(), &db, ask.load.rps);
    let answer = rule::answer(Some(&db), Some(&aside), Some(&cache));
    let others: Vec<Architecture> = m
        .others
        .iter()
        .map(|o| others::row(ask, o, per_key, (&at, m.db.bytes)))
        .collect();
    let (before, after) = others.split_at(others.len().min(1));
    let rows = [
        vec![db],
        before.to_vec(),
        vec![aside],
        after.to_vec(),
        vec![cache],
    ]
    .concat();
    Evaluated { rows, answer, loss }
}

/// The figures of `end`: operations per core from the searches, cache-aside's
/// hit ratio carried to the stated keys (and to the stated mix where it
/// differs from the measured one).
fn at(ask: &Ask, m: &Measured, model: &Model, end: End) -> At {
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
        let share = x.working_set.as_ref().map(|w| w.items as f64)? / m.scaled.keys.max(1) as f64;
        let carried = model.carry(hit, share, m.scaled.keys, ask.load.keys).hit * mix;
        Some((x.hit_ratio, carried))
    });
    At {
        searched,
        any,
        aside_hit: aside.map(|a| a.1),
        hit_delta: aside.map_or(0.0, |(measured, carried)| carried - measured),
    }
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
    ask: &Ask,
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

/// The rates of the sweeps: the stated one times 10^(k/6), k = -12..=12
/// (a hundredth to a hundred times: where the cache starts to pay is often
/// further than ten times away on machines of many cores).
pub(super) fn rate_factors() -> impl Iterator<Item = f64> {
    (-12..=12).map(|k| 10f64.powf(k as f64 / 6.0))
}

/// Each row's cost and the answer over the rates of [`rate_factors`].
fn by_rate(ask: &Ask, m: &Measured, model: &Model, rows: &[Architecture]) -> Vec<RatePoint> {
    rate_factors()
        .map(|f| {
            let at = with_load(ask, |l| l.rps *= f);
            let e = evaluate(&at, m, model, End::Mid);
            RatePoint {
                rps: at.load.rps,
                answer: e.answer.answer,
                monthly_cost: rows
                    .iter()
                    .zip(&e.rows)
                    .map(|(r, x)| (r.name.clone(), x.monthly_cost.filter(|_| x.within_goal)))
                    .collect(),
            }
        })
        .collect()
}

/// `ask` with its stated load changed by `change`.
pub(super) fn with_load(ask: &Ask, change: impl FnOnce(&mut StatedLoad)) -> Ask {
    let mut a = ask.clone();
    change(&mut a.load);
    a
}

/// How the measured hit ratios were carried to the stated keys, in words.
fn carried_said(ask: &Ask, m: &Measured, model: &Model) -> String {
    let (copy, stated) = (m.scaled.keys, ask.load.keys);
    if copy == stated {
        return "Hit ratios: measured on the whole data set (no carry).".into();
    }
    let gaps: Vec<f64> = m
        .curve
        .iter()
        .filter_map(|c| {
            let a = c.result.cache_aside.as_ref()?;
            let items = a.working_set.as_ref()?.items as f64;
            Some(model.hit(copy, items)? - a.hit_ratio)
        })
        .collect();
    let check = match gaps
        .iter()
        .map(|g| g.abs())
        .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))))
    {
        Some(g) => format!(
            "; on the copy the model is within {:.1} points of every measured point (its check)",
            g * 100.0
        ),
        None => String::new(),
    };
    format!(
        "Hit ratios: measured on the copy of {} keys and carried to the stated {} keys by the popularity model ({}): each measured point moved by the model's difference between the two key counts at the same share of keys held, what the cache did beyond the model kept{check}; the cache size is picked on the carried curve.",
        num(copy as f64),
        num(stated as f64),
        match &ask.plan.workload.distribution {
            crate::workload::KeyDistribution::Zipf { theta } =>
                format!("Che's approximation of an LRU cache for Zipf {theta}"),
            crate::workload::KeyDistribution::Uniform =>
                "uniform keys: a share of the keys holds the same share of reads at any count"
                    .into(),
            _ => "none for this distribution: carried as measured".into(),
        }
    )
}
