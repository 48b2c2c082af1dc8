//! A cache-aside run's lines of the summary: the cache, its hit ratio (the
//! one definition, [`crate::results::aside::hit_ratio`]), database reads,
//! memory, each leg and the cache's counters; and what came before the window.

use std::fmt::Write as _;

use crate::plan::CacheStart;
use crate::plan::events::EventOn;
use crate::results::aside::Steady;
use crate::results::stats::num;
use crate::results::{AsideReport, RunResult};

/// The lines of a cache-aside run (none for a run without a cache).
pub(super) fn section(s: &mut String, r: &RunResult) {
    if let Some(a) = &r.cache_aside {
        lines(s, r, a);
    }
}

/// The lines of cache-aside run `r` with its report `a`.
fn lines(s: &mut String, r: &RunResult, a: &AsideReport) {
    let _ = writeln!(
        s,
        "  cache-aside: {} {}{} in front, write policy {}{}; cache {} {:.2}%{} ({}, {} misses{})",
        a.cache.product,
        a.cache.version,
        a.cache_query_mode
            .as_ref()
            .map(|m| format!(" ({m} protocol)"))
            .unwrap_or_default(),
        a.write_policy,
        if a.ttl_s > 0 {
            format!(", TTL {} s", a.ttl_s)
        } else {
            String::new()
        },
        crate::results::aside::HIT_RATIO_NAME,
        a.hit_ratio * 100.0,
        a.hit_ratio_ceiling
            .map(|c| format!(
                " of at most {:.2}% (the reads whose previous access to their key was a read)",
                c * 100.0
            ))
            .unwrap_or_default(),
        match &r.near_cache {
            Some(n) => format!(
                "{} hits, {} of them in the near cache",
                a.cache_hits, n.hits
            ),
            None => format!("{} hits", a.cache_hits),
        },
        a.cache_misses,
        match a.cache_bypassed {
            0 => String::new(),
            n => format!(", {n} around the unreachable cache"),
        }
    );
    let _ = writeln!(
        s,
        "  database reads saved {} /s, made {} /s (misses and reads around the cache)",
        num(a.db_reads_saved_per_s),
        num(a.db_reads_per_s)
    );
    if a.cache_bypassed > 0 {
        let _ = writeln!(
            s,
            "  {} reads went around the cache while it was unreachable (to the database)",
            a.cache_bypassed
        );
    }
    if let Some(w) = &a.working_set {
        working_set(s, a.start, w);
    }
    if let Some(n) = &a.note {
        let _ = writeln!(s, "  NOTE: {n}");
    }
    for leg in crate::results::stats::Leg::ALL {
        let name = leg.name();
        let Some(l) = a.legs.get(name).filter(|l| l.replies > 0) else {
            continue;
        };
        let _ = writeln!(
            s,
            "    leg {name:<11} {} replies, {} errors, µs p50 {}  p99 {}  max {}",
            l.replies,
            l.errors,
            num(l.latency_us.p50),
            num(l.latency_us.p99),
            num(l.latency_us.max)
        );
    }
    if let Some(cc) = &a.cache_counters {
        let slack = format!(
            "agree, {} (kvlab sent at most {} more, in flight at the kill)",
            super::checks::counted_across(r, EventOn::Cache),
            cc.slack
        );
        let verdict = if cc.agrees() && cc.slack > 0 {
            &slack
        } else if cc.agrees() {
            "agree"
        } else if cc.exclusive {
            "DISAGREE"
        } else {
            "differ (other clients may use this cache)"
        };
        super::checks::counter_line(
            s,
            r,
            "cache",
            &format!("GET {} / SET {}", cc.server.gets, cc.server.sets),
            &format!("GET {} / SET {}", cc.kvlab_gets, cc.kvlab_sets),
            verdict,
        );
    }
}

/// The cache's start and its memory against the data.
fn working_set(s: &mut String, start: CacheStart, w: &crate::results::WorkingSet) {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let start = match (start, w.steady) {
        (CacheStart::Settle, Some(steady)) => settled_start(steady, w),
        (CacheStart::Settle, None) => match w.settled_after_s {
            Some(t) => format!("started empty, settled after {t:.0} s of the workload"),
            None => "started empty; its hit ratio had not settled when measuring began".into(),
        },
        (CacheStart::Cold, _) => "started empty (cold), measured from the first request".into(),
        (CacheStart::Warm, _) => "every key loaded first (warm)".into(),
    };
    let _ = writeln!(
        s,
        "  cache memory: {start}; {:.1} MiB in use of {} for {:.1} MiB of data ({} items held), {} evicted in the window",
        mib(w.memory_used_bytes),
        match w.memory_limit_bytes {
            0 => "no limit".to_string(),
            l => format!("{:.1} MiB", mib(l)),
        },
        mib(w.data_bytes),
        w.items,
        w.evictions
    );
}

/// How a settling cache reached its steady state, in words.
fn settled_start(steady: Steady, w: &crate::results::WorkingSet) -> String {
    let filled = w
        .filled_keys
        .map(|k| format!(" ({k} keys written coldest first)"))
        .unwrap_or_default();
    let turned = match (w.settled_after_s, w.settle_evictions) {
        (Some(t), Some(e)) => format!(", settled after {t:.0} s of the workload and {e} evictions"),
        (Some(t), None) => format!(", settled after {t:.0} s of the workload"),
        (None, _) => String::new(),
    };
    match steady {
        Steady::HoldsTheData => steady.said().to_string(),
        Steady::FilledByKvlab => format!("steady state {}{filled}{turned}", steady.said()),
        Steady::FilledByWorkload => format!("steady state {}{turned}", steady.said()),
        Steady::NotReached => format!(
            "STEADY STATE NOT REACHED: not full, not turned over or its hit ratio still moving after {} s of the workload{filled}",
            w.settle_curve.len()
        ),
    }
}

/// What came before the measured window: the warm-up, and a settling cache's
/// warming before it.
pub(super) fn before_window(r: &RunResult) -> String {
    let warmup = format!("{} s warm-up", r.config.load.warmup_s);
    let settle = r
        .cache_aside
        .as_ref()
        .filter(|a| a.start == CacheStart::Settle)
        .and_then(|a| a.working_set.as_ref());
    match settle {
        Some(w) if w.steady == Some(Steady::HoldsTheData) => {
            format!("every key loaded into the cache (it holds the data), then {warmup}")
        }
        Some(w) => match w.settled_after_s {
            Some(t) => format!("{t:.0} s of the cache settling, then {warmup}"),
            None => format!("the cache's settling (it did not settle), then {warmup}"),
        },
        None => warmup,
    }
}
