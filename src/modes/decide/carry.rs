//! The copy's measured hit ratios carried to the stated keys. A copy of
//! fewer keys drawn by the same Zipf law does not hold the same share of its
//! traffic in the same share of its keys: at more keys the head holds more
//! (Zipf 0.99, a cache of 9% of the keys: 71.3% at 100,000 keys, 75.7% at
//! 1,000,000). Each measured point is moved by the popularity model's
//! difference between the two key counts at the same share held (Che's
//! approximation, [`crate::workload::trace::model`]), so what the real cache
//! did beyond the model (its own eviction, writes in flight) is kept; the
//! model's figure on the copy is kept beside it as its check.

use super::ask::Asked;
use super::measure::Measured;
use super::trace;
use crate::results::RunResult;
use crate::results::decide::said::{CarryCheck, TtlFloor};
use crate::results::decide::{CurvePoint, CurveSource, StatedLoad, db_load};
use crate::workload::trace::model::{Model, ttl_bound};
use crate::workload::trace::policy::Policy;

/// The eviction policy `load`'s curves are drawn for (exact LRU where none
/// was read) and its stated rate, the clock of Redis's policies.
pub fn policy_of(load: &StatedLoad) -> (Policy, f64) {
    let p = load.eviction.as_ref().map(|e| e.policy).unwrap_or_default();
    (p, load.rps)
}

/// The model of `ask`'s load (its keys' distribution, the cache's policy at
/// the stated rate, and its `--cache-ttl`) with `write_share` writes, the
/// share the copy was measured at.
pub fn model_of(ask: &Asked, write_share: f64) -> Model {
    Model::new(
        &ask.plan.workload.distribution,
        write_share,
        policy_of(&ask.load),
    )
    .with_ttl(f64::from(ask.cache.ttl_s))
}

/// The items the cache of cache-aside run `r` held as its window ended
/// (`None`: not known, and its hit ratio is carried as it is).
pub fn held_items(r: &RunResult) -> Option<f64> {
    Some(r.cache_aside.as_ref()?.working_set.as_ref()?.items as f64)
}

/// What the popularity model says of `ask`'s carry, for the decision's
/// words: its check on the copy of `m` (each settled curve run's distance
/// from the model at the items it held: the model's hit ratio less the one
/// measured), and the floor a `--cache-ttl` puts under the curve at the
/// stated load (`None`: no TTL, or no model for the distribution).
pub fn said_of(ask: &Asked, m: &Measured, model: &Model) -> (CarryCheck, Option<TtlFloor>) {
    let copy = m.copy.keys;
    let gaps = m
        .curve
        .iter()
        .filter_map(|c| {
            let a = c.result.cache_aside.as_ref()?;
            let items = a.working_set.as_ref()?.items as f64;
            Some(model.hit(copy, items)? - a.hit_ratio)
        })
        .collect();
    let l = &ask.load;
    let reads_per_s = l.rps * (1.0 - l.write_share);
    let ttl = said_of_ttl(ask).map(|(miss, live)| TtlFloor {
        ttl_s: ask.cache.ttl_s,
        reads_per_s,
        miss,
        live,
        per_key_bytes: m.copy.bytes_per_key,
    });
    let check = CarryCheck {
        copy,
        stated: l.keys,
        gaps,
    };
    (check, ttl)
}

/// The floor a `--cache-ttl` puts under the miss ratio at `ask`'s stated
/// load, and the keys live under it (`None`: no TTL, or no model for the
/// distribution).
fn said_of_ttl(ask: &Asked) -> Option<(f64, f64)> {
    let l = &ask.load;
    let ttl_s = ask.cache.ttl_s;
    let reads_per_s = l.rps * (1.0 - l.write_share);
    let dist = &ask.plan.workload.distribution;
    (ttl_s > 0)
        .then(|| ttl_bound(dist, l.keys, reads_per_s, f64::from(ttl_s)))
        .flatten()
}

/// `points` (of one source) held to the shape every miss-ratio curve has:
/// none above `ceiling` (what a TTL allows at the stated load: runs shorter
/// than the TTL do not see it), and the hit ratio rising with memory (a dip
/// is noise: pooled with its neighbours, pool-adjacent violators). A point
/// moved keeps its figure in `before_held`.
fn hold_shape(points: &mut [CurvePoint], ceiling: Option<f64>) {
    points.sort_by_key(|p| p.cache_memory_bytes);
    let hits: Vec<f64> = points
        .iter()
        .map(|p| ceiling.map_or(p.hit_ratio, |c| p.hit_ratio.min(c)))
        .collect();
    // Blocks of (sum, count), merged while one falls below the one before.
    let mut blocks: Vec<(f64, usize)> = Vec::new();
    for h in hits {
        blocks.push((h, 1));
        while let [.., (s0, n0), (s1, n1)] = blocks[..] {
            if s1 / n1 as f64 >= s0 / n0 as f64 {
                break;
            }
            blocks.pop();
            *blocks.last_mut().expect("two blocks") = (s0 + s1, n0 + n1);
        }
    }
    let held = blocks
        .into_iter()
        .flat_map(|(s, n)| std::iter::repeat_n(s / n as f64, n));
    for (p, h) in points.iter_mut().zip(held) {
        if (p.hit_ratio - h).abs() > 1e-12 {
            p.before_held = Some(p.hit_ratio);
            p.hit_ratio = h;
        }
    }
}

/// The spread of a cache-aside run's hit ratio over its seconds: the 10th
/// and 90th percentiles of the seconds with at least 100 reads (`None`:
/// fewer than three such seconds).
pub fn hit_spread(r: &RunResult) -> Option<[f64; 2]> {
    let mut per: Vec<f64> = r
        .timeline
        .iter()
        .filter(|s| s.span_s == 1)
        .filter_map(|s| {
            let c = s.cache.as_ref()?;
            let reads = c.hits + c.misses + c.bypassed;
            (reads >= 100).then(|| c.hits as f64 / reads as f64)
        })
        .collect();
    if per.len() < 3 {
        return None;
    }
    per.sort_by(f64::total_cmp);
    let at = |q: f64| per[((per.len() - 1) as f64 * q).round() as usize];
    Some([at(0.1), at(0.9)])
}

/// The miss-ratio curve at the stated data: each settled run measured on
/// the copy, each carried to the stated keys (where the copy has fewer),
/// then the model's points for a cache kvlab did not start (measured at one
/// size only) and, with `--trace`, the trace's own curve. A point's trace
/// figure is the trace's at the items the cache holds at the stated keys.
pub(super) fn curve(ask: &Asked, m: &Measured, model: &Model, per_key: f64) -> Vec<CurvePoint> {
    let (copy, stated) = (m.copy.keys.max(1), ask.load.keys.max(1));
    let l = &ask.load;
    let at_trace = |share: f64| {
        ask.trace
            .as_ref()
            .map(|t| trace::at_share(&t.curve, stated, share))
    };
    let point = |bytes: u64, hit: f64, source: CurveSource, share: Option<f64>| CurvePoint {
        cache_memory_bytes: bytes,
        hit_ratio: hit,
        source,
        db_reads_per_s: db_load(l.rps, l.write_share, hit),
        trace_hit_ratio: None,
        share_of_keys: share,
        measured_on_copy: None,
        before_held: None,
    };
    let base = cache_base(m);
    let held = held(m, false);
    let (mut measured, mut carried) = (Vec::new(), Vec::new());
    for c in &m.curve {
        let Some(a) = c.result.cache_aside.as_ref() else {
            continue;
        };
        let ws = a.working_set.as_ref();
        let used = ws.map(|w| w.memory_used_bytes);
        let bytes = provisioned(c.memory_mb, used, m.cache.bytes).unwrap_or(0);
        let share = ws.map(|w| w.items as f64 / copy as f64);
        let at = at_stated(bytes, base, per_key);
        let mut p = point(at, a.hit_ratio, CurveSource::Measured, share);
        match (share, copy == stated) {
            (share, true) => p.trace_hit_ratio = share.and_then(at_trace),
            (Some(sh), false) => {
                let k = model.carry(a.hit_ratio, sh, copy, stated);
                let mut q = point(at, k.hit, CurveSource::Carried, Some(sh));
                q.trace_hit_ratio = at_trace(sh);
                q.measured_on_copy = k.model_on_copy.map(|on| [a.hit_ratio, on]);
                carried.push(q);
            }
            (None, false) => {}
        }
        measured.push(p);
    }
    let ceiling = said_of_ttl(ask).map(|(miss, _)| 1.0 - miss);
    for group in [&mut measured, &mut carried] {
        hold_shape(group, ceiling);
        for p in group.iter_mut() {
            p.db_reads_per_s = db_load(l.rps, l.write_share, p.hit_ratio);
        }
    }
    let mut points = [measured, carried].concat();
    match (&ask.trace, memory_of_items(&held)) {
        // A cache kvlab did not start is measured at its one size: the rest
        // of the curve is the popularity model's, said as such.
        (None, Some(memory)) if ask.cache.cache.external.is_some() => {
            for share in [0.05, 0.15, 0.4] {
                let Some(hit) = model.hit(stated, share * stated as f64) else {
                    continue;
                };
                let bytes = at_stated(memory(share * copy as f64) as u64, base, per_key);
                points.push(point(bytes, hit, CurveSource::Model, Some(share)));
            }
        }
        (Some(t), Some(memory)) => {
            let bytes =
                |share: f64| at_stated(memory(share * copy as f64) as u64, base, per_key) as f64;
            points.extend(trace::points(
                &t.curve,
                stated,
                &bytes,
                (l.rps, l.write_share),
            ));
        }
        _ => {}
    }
    points
}

/// Each settled curve run's (items held, cache memory), bytes; `limited`:
/// only the runs at a memory limit (a cache of no limit is measured by its
/// resident memory, which counts more than its limit does).
fn held(m: &Measured, limited: bool) -> Vec<(f64, f64)> {
    m.curve
        .iter()
        .filter(|c| !limited || c.memory_mb.is_some())
        .filter_map(|c| {
            let w = c.result.cache_aside.as_ref()?.working_set.as_ref()?;
            let used = Some(w.memory_used_bytes);
            let bytes = provisioned(c.memory_mb, used, m.cache.bytes)?;
            Some((w.items as f64, bytes as f64))
        })
        .collect()
}

/// The cache's memory holding nothing, bytes: the base of its memory for
/// the items it held over the measured curve's limits (`held`), fitted
/// ([`memory_of_items`]); at most half the smallest size, 0 where no fit.
fn base(held: &[(f64, f64)]) -> f64 {
    let smallest = held.iter().map(|h| h.1).fold(f64::INFINITY, f64::min);
    match fit(held) {
        Some((base, _)) if smallest.is_finite() => base.min(smallest / 2.0),
        _ => 0.0,
    }
}

/// The cache's memory holding nothing over the decision's curve `m`
/// ([`base`]), for the check's cache size.
pub(super) fn cache_base(m: &Measured) -> f64 {
    base(&held(m, true))
}

/// A cache of `bytes` on the copy, at `ratio` times its keys holding the
/// same share of them: its base memory (`base`, which holds no key) as is,
/// the rest times `ratio`. (Memory per key alone would carry a small
/// cache's base tenfold, and size it larger than what it held.)
pub(super) fn at_stated(bytes: u64, base: f64, ratio: f64) -> u64 {
    let base = base.clamp(0.0, bytes as f64);
    (base + (bytes as f64 - base) * ratio).round() as u64
}

/// The cache's memory for a number of items held, fitted to the measured
/// points' (items, memory): a base plus a size per item (least squares).
fn memory_of_items(held: &[(f64, f64)]) -> Option<impl Fn(f64) -> f64> {
    fit(held).map(|(base, per_item)| move |items: f64| base + per_item * items)
}

/// The least-squares line of memory on items held (`held`): (base, bytes
/// per item), the base at least 0; `None` without a positive size per item.
fn fit(held: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = held.len() as f64;
    let (mx, my) = (
        held.iter().map(|p| p.0).sum::<f64>() / n,
        held.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = held.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = held.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let per_item = match sxx > 0.0 {
        true => sxy / sxx,
        false => my / mx,
    };
    let base = (my - per_item * mx).max(0.0);
    (mx > 0.0 && per_item > 0.0).then_some((base, per_item))
}

/// The memory of a cache limited to `mb` MiB (`None`: no limit) for the
/// measured copy: the limit, or, with none, what the cache alone holding the
/// whole copy took (`full`), at least what was in use; `None`: not known.
pub(super) fn provisioned(mb: Option<u64>, used: Option<u64>, full: Option<u64>) -> Option<u64> {
    match (mb, full, used) {
        (Some(mb), _, _) => Some(mb << 20),
        (None, Some(f), u) => Some(f.max(u.unwrap_or(0))),
        (None, None, u) => u,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caches_base_is_carried_as_is_and_the_rest_per_key() {
        let mib = (1u64 << 20) as f64;
        // 1 MiB holding nothing, then 64 B an item: 7, 13 and 28 MiB hold
        // 98,304, 196,608 and 442,368 items.
        let held: Vec<(f64, f64)> = [7.0, 13.0, 28.0]
            .iter()
            .map(|mb: &f64| ((mb - 1.0) * mib / 64.0, mb * mib))
            .collect();
        assert!((base(&held) - mib).abs() < 1.0, "{}", base(&held));
        // At ten times the keys the same share: 1 + 6 × 10 MiB.
        assert_eq!(at_stated(7 << 20, mib, 10.0), 61 << 20);
        assert_eq!(at_stated(7 << 20, 0.0, 10.0), 70 << 20);
        // A base above the size (a fit gone wrong) is held to it; none fits
        // from one point.
        assert_eq!(at_stated(1 << 20, 8.0 * mib, 10.0), 1 << 20);
        assert_eq!(base(&held[..1]), 0.0);
        assert!(base(&[]) == 0.0);
    }

    #[test]
    fn a_curve_rises_with_memory_and_stays_under_its_ttls_floor() {
        let at = |mb: u64, hit: f64| CurvePoint {
            cache_memory_bytes: mb << 20,
            hit_ratio: hit,
            source: CurveSource::Carried,
            db_reads_per_s: 0.0,
            trace_hit_ratio: None,
            share_of_keys: None,
            measured_on_copy: None,
            before_held: None,
        };
        // 79.1% at 19.7 MiB, 76.0% at 40.7: pooled, 77.55% both.
        let mut p = vec![at(40, 0.760), at(20, 0.791), at(80, 0.85)];
        hold_shape(&mut p, None);
        let hits: Vec<f64> = p.iter().map(|p| p.hit_ratio).collect();
        assert!(
            (hits[0] - 0.7755).abs() < 1e-9 && (hits[1] - 0.7755).abs() < 1e-9,
            "{hits:?}"
        );
        assert_eq!((p[0].before_held, p[2].before_held), (Some(0.791), None));
        // 89.6% above a TTL's floor of 12.5% misses: held to 87.5%.
        let mut p = vec![at(100, 0.80), at(213, 0.896)];
        hold_shape(&mut p, Some(0.875));
        assert_eq!(p[1].hit_ratio, 0.875);
        assert_eq!((p[0].before_held, p[1].before_held), (None, Some(0.896)));
    }
}
