//! A saved decision asked again (`kvlab decide --from`) with another stated
//! load: the same measurements, each run judged again against another goal
//! (refused where the goal is stricter than anything measured), the cores
//! stated for a server given by URL taken as stated now.

use super::ask::Asked;
use super::measure::Measured;
use super::measure::{CoresSource, Searched};
use crate::error::UsageError;
use crate::modes::capacity::{self, MoreLimits};
use crate::results::decide::StatedLoad;
use crate::results::stats::num;

/// `ask` asked again with the stated `load` (a new [`Asked`]), `m` judged
/// again for it.
pub fn apply(ask: &Asked, m: &mut Measured, load: StatedLoad) -> Result<Asked, UsageError> {
    let goal = |l: &StatedLoad| (l.p99_ms, l.p50_ms, l.p999_ms);
    if goal(&load) != goal(&ask.load) {
        rejudge(m, &load)?;
    }
    for (s, stated) in [
        (&mut m.db, load.target_cores),
        (&mut m.cache, load.cache_cores),
    ] {
        if s.cores_source != CoresSource::Measured {
            (s.cores, s.cores_source) = CoresSource::stated(stated);
        }
    }
    Ok(Asked {
        load,
        ..ask.clone()
    })
}

/// Every saved run judged against `load`'s goal: the searches' capacities
/// and brackets found again from their steps, the fixed-rate runs' verdicts.
fn rejudge(m: &mut Measured, load: &StatedLoad) -> Result<(), UsageError> {
    let more = MoreLimits {
        p50_ms: load.p50_ms,
        p999_ms: load.p999_ms,
    };
    let lowest =
        m.db.capacity
            .steps
            .iter()
            .map(|s| s.result.latency.latency_us.p99 / 1000.0)
            .fold(f64::INFINITY, f64::min);
    if load.p99_ms < lowest {
        return Err(UsageError::bad(
            "--p99-ms",
            format!(
                "{} ms is stricter than any step measured (the database's lowest p99 was {} ms)",
                load.p99_ms,
                num(lowest)
            ),
            "the saved runs cannot carry it: measure again without --from",
        ));
    }
    for s in [&mut m.db, &mut m.cache] {
        search_again(s, load.p99_ms, more);
    }
    if let Some(a) = m.aside.as_mut() {
        let rate = a.result.config.load.rate.unwrap_or(0.0);
        let v = capacity::judge(&a.result, rate, load.p99_ms, more);
        a.within_goal = v.is_ok();
        a.why_not = v.err();
    }
    for o in &mut m.others {
        if let Some((r, v)) = o.run.as_mut() {
            *v = capacity::judge(r, r.config.load.rate.unwrap_or(0.0), load.p99_ms, more);
        }
    }
    Ok(())
}

/// The search `s` judged again at `p99_ms` and `more`: the highest rate that
/// passes (a step kvlab itself could not offer stays failed), the lowest
/// above it that fails.
fn search_again(s: &mut Searched, p99_ms: f64, more: MoreLimits) {
    let c = &mut s.capacity;
    for st in c.steps.iter_mut() {
        let Some(rate) = st.rate else { continue };
        if st.client_limited {
            continue;
        }
        let v = capacity::judge(&st.result, rate, p99_ms, more);
        st.passed = v.is_ok();
        st.reason = v.err();
    }
    let rates = |passed: bool| {
        c.steps
            .iter()
            .filter(move |st| st.passed == passed)
            .filter_map(|st| st.rate)
    };
    c.capacity_rps = rates(true).fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    let cap = c.capacity_rps.unwrap_or(0.0);
    let fail = rates(false)
        .filter(|r| *r > cap)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))));
    c.bracket = c.capacity_rps.zip(fail).map(|(a, b)| [a, b]);
    c.p99_ms = p99_ms;
    c.limits = more;
    c.headroom = c
        .at_capacity()
        .map(|st| capacity::headroom(&st.result, p99_ms, more))
        .unwrap_or_default();
    // The cores at the capacity found, where they were measured.
    if s.cores_source == CoresSource::Measured
        && let Some(st) = c.at_capacity()
        && let Some(cpu) = st.result.server.server_cpu_s
    {
        s.cores = Some(cpu / st.result.totals.duration_s);
    }
}
