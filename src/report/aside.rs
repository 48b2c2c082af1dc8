//! The cache-aside part of a report: for each mix and write policy, the cache's
//! gain (hit ratio, database reads saved, latency) beside its price (stale
//! reads), next to the database alone.

use super::chart::{Chart, short};
use super::figures::StaleFigures;
use super::rows::Row;
use super::series::series_by_target;
use super::table::Table;
use crate::results::aside::HIT_RATIO_NAME;
use crate::results::stats::Leg;

/// The section's parts.
pub struct Section {
    /// Verdict lines (one per mix, then the race).
    pub verdict: Vec<String>,
    /// What to keep in mind.
    pub caveats: Vec<String>,
    /// Every point, database alone and behind each cache; then each leg's latency.
    pub tables: Vec<Table>,
    /// Hit ratio and stale reads by mix.
    pub charts: Vec<Chart>,
}

fn per_million(stale: &Option<StaleFigures>) -> Option<f64> {
    stale.as_ref().map(StaleFigures::per_million)
}

/// Why a cache serves stale data, after the figures.
const RACE: &str = "Why a cache serves stale data: under invalidate, a reader that missed the cache reads the old value from the database; a writer then updates the database and deletes the cache entry; the reader, finishing last, fills the cache with the old value, which then answers every read until the next write of that key or the TTL. Under update, the same late fill can overwrite the newer value the writer put in the cache. The database alone never serves a value older than the last completed write.";

/// What a stale read is, and where a cache-aside point starts.
const STALE: &str = "Stale reads: a read counts as stale when it returns a version older than the newest version whose write had completed before the read began; writes to one key never overlap (kvlab draws another key while one is being written), so writer-writer races are not part of the count. Unless a target says otherwise (cache_start), each cache-aside point starts from a cache loaded with every key.";

/// The section, when some target had a cache in front.
pub fn section(rows: &[Row]) -> Option<Section> {
    if rows.iter().all(|r| r.aside.is_none()) {
        return None;
    }
    Some(Section {
        verdict: verdict(rows),
        caveats: vec![STALE.into()],
        tables: vec![table(rows), legs(rows)],
        charts: charts(rows),
    })
}

/// A line per SET:GET mix (a sweep of more than four points per mix, e.g.
/// of cache sizes, is left to its own section), then the race.
fn verdict(rows: &[Row]) -> Vec<String> {
    let mut mixes: Vec<&str> = Vec::new();
    for r in rows {
        if !mixes.contains(&r.ratio.as_str()) {
            mixes.push(&r.ratio);
        }
    }
    let mut verdict = Vec::new();
    for mix in &mixes {
        let here: Vec<&Row> = rows.iter().filter(|r| r.ratio == *mix).collect();
        if here.len() > 4 {
            continue;
        }
        let parts: Vec<String> = here.iter().map(|r| figures(r)).collect();
        verdict.push(format!("SET:GET {mix}: {}.", parts.join("; ")));
    }
    verdict.push(RACE.into());
    verdict
}

/// A point's figures in the verdict: the database alone, or behind its
/// cache with the cache's gain; its stale reads and errors.
fn figures(r: &Row) -> String {
    let stale = match per_million(&r.stale) {
        Some(pm) => format!("{} stale reads per million", short(pm)),
        None => "no writes, so no stale reads".into(),
    };
    let errors = if r.errors > 0 {
        format!(", {} errors", r.errors)
    } else {
        String::new()
    };
    match &r.aside {
        None => format!(
            "{} {} req/s, p50 {} µs, p99 {} µs, {stale}{errors}",
            match r.target.contains("alone") {
                true => r.target.clone(),
                false => format!("{} alone", r.target),
            },
            short(r.rps),
            short(r.latency.p50),
            short(r.latency.p99)
        ),
        Some(a) => format!(
            "{} ({} {}) {} req/s, p50 {} µs, p99 {} µs, {} {:.1}%, {} database reads saved per second, {stale}{errors}",
            r.target,
            a.cache,
            a.policy,
            short(r.rps),
            short(r.latency.p50),
            short(r.latency.p99),
            HIT_RATIO_NAME,
            a.hit_ratio * 100.0,
            short(a.db_reads_saved_per_s)
        ),
    }
}

/// Every point, the database alone and behind each cache: the cache's gain
/// beside its stale reads.
fn table(rows: &[Row]) -> Table {
    let mut table = Table {
        title: "Cache-aside vs the database alone".into(),
        headers: [
            "target",
            "cache / policy",
            "SET:GET",
            "req/s",
            "p50 µs",
            "p99 µs",
            HIT_RATIO_NAME,
            "DB reads saved/s",
            "DB reads/s",
            "stale reads / M reads",
            "stale for (p50 ms)",
            "versions behind (mean / max)",
            "errors",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for r in rows {
        table.rows.push(cells(r));
    }
    table
}

/// A point's row of the table.
fn cells(r: &Row) -> Vec<String> {
    let (policy, hit, saved, made) = match &r.aside {
        Some(a) => (
            format!(
                "{} {}{}",
                a.cache,
                a.policy,
                if a.ttl_s > 0 {
                    format!(" ttl {} s", a.ttl_s)
                } else {
                    String::new()
                }
            ),
            format!("{:.2}%", a.hit_ratio * 100.0),
            format!("{:.0}", a.db_reads_saved_per_s),
            format!("{:.0}", a.db_reads_per_s),
        ),
        None => ("database alone".into(), "-".into(), "-".into(), "-".into()),
    };
    let stale = r.stale.as_ref().filter(|s| s.stale > 0);
    vec![
        r.target.clone(),
        policy,
        r.ratio.clone(),
        format!("{:.0}", r.rps),
        format!("{:.0}", r.latency.p50),
        format!("{:.0}", r.latency.p99),
        hit,
        saved,
        made,
        per_million(&r.stale).map_or("-".into(), |p| format!("{p:.1}")),
        stale.map_or("-".into(), |s| format!("{:.1}", s.age.p50 / 1e3)),
        stale.map_or("-".into(), |s| {
            format!("{:.2} / {}", s.versions_mean, s.versions_max)
        }),
        r.errors.to_string(),
    ]
}

/// Each leg's latency (p50 / p99) of every point behind a cache.
fn legs(rows: &[Row]) -> Table {
    let mut legs = Table {
        title: "Cache-aside legs: latency from send to reply (µs, p50 / p99)".into(),
        headers: ["target", "SET:GET"]
            .into_iter()
            .map(String::from)
            .chain(Leg::ALL.iter().map(|l| l.name().to_string()))
            .collect(),
        rows: Vec::new(),
    };
    for r in rows {
        let Some(a) = &r.aside else { continue };
        let mut row = vec![r.target.clone(), r.ratio.clone()];
        row.extend(
            a.legs
                .iter()
                .map(|p| p.map_or("-".into(), |p| format!("{:.0} / {:.0}", p.p50, p.p99))),
        );
        legs.rows.push(row);
    }
    legs
}

/// Stale reads (where any were judged) and the hit ratio by SET:GET mix.
fn charts(rows: &[Row]) -> Vec<Chart> {
    let by_mix = |title: &str, y_label: &str, (series, x_categories)| Chart {
        title: title.into(),
        x_label: "SET:GET".into(),
        y_label: y_label.into(),
        series,
        x_categories,
        log_x: false,
        markers: Vec::new(),
    };
    let mut charts = Vec::new();
    let stale = series_by_target(rows, "ratio", |r| per_million(&r.stale), "");
    if stale.0.iter().any(|s| !s.points.is_empty()) {
        charts.push(by_mix(
            "Stale reads per million reads by SET:GET mix",
            "stale reads per million reads",
            stale,
        ));
    }
    let hits = series_by_target(
        rows,
        "ratio",
        |r| r.aside.as_ref().map(|a| a.hit_ratio * 100.0),
        "",
    );
    charts.push(by_mix(
        "Cache hit ratio by SET:GET mix",
        "hit ratio (%)",
        hits,
    ));
    charts
}
