//! The working-set part of a report: what a cache's memory buys (hit ratio,
//! database reads, latency, per key skew), how a cold cache warms up, and what
//! the database must survive when the cache is gone (events during a run).

use std::collections::BTreeMap;

use super::chart::{Axis, Chart, Series, short};
use super::series::p99_goal;
use super::table::Table;
use crate::plan::CacheStart;
use crate::results::study::StudyResult;
use crate::results::{RunResult, Second};

/// The section's parts.
pub struct Section {
    /// Verdict lines: what the memory bought, the warm-up, each event.
    pub verdict: Vec<String>,
    /// Tables: one row per cache size.
    pub tables: Vec<Table>,
    /// The hit-ratio curve, and timelines with the events marked.
    pub charts: Vec<Chart>,
}

/// One measured point: its target, swept values and (first) result.
struct Run<'a> {
    target: &'a str,
    params: &'a BTreeMap<String, String>,
    r: &'a RunResult,
}

impl Run<'_> {
    /// Its label: the target and the swept values that tell it apart.
    fn label(&self, keys: &[&str]) -> String {
        let parts: Vec<String> = keys
            .iter()
            .filter_map(|k| self.params.get(*k).map(|v| format!("{k}={v}")))
            .collect();
        match parts.is_empty() {
            true => self.target.to_string(),
            false => format!("{} {}", self.target, parts.join(" ")),
        }
    }

    fn distribution(&self) -> String {
        self.params
            .get("distribution")
            .cloned()
            .unwrap_or_else(|| self.r.config.workload.distribution.to_string())
    }

    fn rate(&self) -> Option<f64> {
        self.r.config.load.rate
    }
}

/// The section, when a study measured caches smaller than the data, a cold
/// or settling start, or events.
pub fn section(results: &[StudyResult]) -> Option<Section> {
    let mut runs: Vec<Run> = Vec::new();
    for sr in results {
        for p in &sr.points {
            if let Some(r) = &p.result
                && p.repetition <= 1
            {
                runs.push(Run {
                    target: &p.target,
                    params: &p.params,
                    r,
                });
            }
        }
    }
    let mut s = Section {
        verdict: Vec::new(),
        tables: Vec::new(),
        charts: Vec::new(),
    };
    sizes(&runs, &mut s);
    let goal_p99_ms = results.first().and_then(|r| r.study.goal.p99_ms);
    let goal = p99_goal(results);
    warmups(&runs, goal_p99_ms, goal.as_ref(), &mut s);
    events(&runs, goal.as_ref(), &mut s);
    (!s.verdict.is_empty() || !s.charts.is_empty()).then_some(s)
}

/// The cache's memory as a share of the data, %, and its hit ratio.
fn size_of(r: &RunResult) -> Option<(f64, f64)> {
    let a = r.cache_aside.as_ref()?;
    let w = a.working_set.as_ref()?;
    (w.memory_limit_bytes > 0 && w.data_bytes > 0).then(|| {
        (
            w.memory_limit_bytes as f64 * 100.0 / w.data_bytes as f64,
            a.hit_ratio,
        )
    })
}

/// A run's settings beside its cache's size and key skew: its swept values,
/// and its rate where that was not swept.
fn settings(run: &Run) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = run.params.clone();
    m.remove("distribution");
    if !m.contains_key("rate") {
        let rate = run.rate().map_or("closed-loop".into(), short);
        m.insert("rate".into(), rate);
    }
    m
}

/// Each run of `sized` labelled by the settings that differ between its
/// target's runs of one cache size (the rate, the keys): ` rate=500`, or
/// nothing. A setting that only changes with the size (`cache.memory-mb`)
/// draws no curve of its own.
fn apart(sized: &[&Run]) -> Vec<String> {
    let all: Vec<BTreeMap<String, String>> = sized.iter().map(|r| settings(r)).collect();
    let same_size = |i: usize, j: usize| {
        let size = |r: &Run| {
            r.r.cache_aside
                .as_ref()?
                .working_set
                .as_ref()
                .map(|w| w.memory_limit_bytes)
        };
        sized[i].target == sized[j].target
            && sized[i].distribution() == sized[j].distribution()
            && size(sized[i]) == size(sized[j])
    };
    let mut keys: Vec<&String> = all.iter().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.retain(|k| {
        (0..sized.len())
            .any(|i| (0..sized.len()).any(|j| same_size(i, j) && all[i].get(*k) != all[j].get(*k)))
    });
    all.iter()
        .map(|m| {
            keys.iter()
                .filter_map(|k| m.get(*k).map(|v| format!(" {k}={v}")))
                .collect()
        })
        .collect()
}

/// A curve of the hit ratio by cache size: its target (with the settings
/// that set it apart), key skew, and runs from the smallest cache up.
type Curve<'r, 'a> = ((String, String), Vec<&'r Run<'a>>);

/// What the memory bought: the hit ratio against the cache's size, a curve
/// per target, key skew and any other setting that differs at one size (each
/// rate its own), from the smallest cache to the largest.
fn sizes(runs: &[Run], s: &mut Section) {
    let curves = curves(runs);
    if curves.is_empty() {
        return;
    }
    let mut table = Table {
        title: "Hit ratio by cache size".into(),
        headers: [
            "target",
            "keys",
            "cache MiB",
            "% of values",
            "hit ratio",
            "database reads/s",
            "p50 µs",
            "p99 µs",
            "cache CPU µs/req",
            "database CPU µs/req",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let mut series = Vec::new();
    for (i, ((target, dist), v)) in curves.iter().enumerate() {
        let mut points = Vec::new();
        for run in v {
            let (pct, hit) = size_of(run.r).unwrap();
            points.push((pct, hit * 100.0));
            table.rows.push(size_row(target, dist, run.r));
        }
        series.push(Series {
            name: format!("{target} {dist}"),
            points,
            color: Some(i),
            dashed: false,
        });
        s.verdict
            .push(size_line(target, dist, v[0].r, v[v.len() - 1].r));
    }
    s.tables.push(table);
    s.charts.push(Chart {
        title: "Cache hit ratio vs cache memory".into(),
        x_label: "cache memory (% of the values' bytes)".into(),
        y_label: "hit ratio (%)".into(),
        series,
        x_categories: None,
        log_x: false,
        markers: Vec::new(),
    });
}

/// The runs with a sized cache as curves (see [`Curve`]) of two sizes or
/// more.
fn curves<'r, 'a>(runs: &'r [Run<'a>]) -> Vec<Curve<'r, 'a>> {
    let sized: Vec<&Run> = runs.iter().filter(|r| size_of(r.r).is_some()).collect();
    let mut by: Vec<Curve> = Vec::new();
    for (run, apart) in sized.iter().zip(apart(&sized)) {
        let key = (format!("{}{apart}", run.target), run.distribution());
        match by.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(run),
            None => by.push((key, vec![run])),
        }
    }
    by.retain_mut(|(_, v)| {
        v.sort_by(|a, b| size_of(a.r).unwrap().0.total_cmp(&size_of(b.r).unwrap().0));
        v.len() >= 2
    });
    by
}

/// The cache memory of run `r`, MiB (0 without a limit known).
fn cache_mib(r: &RunResult) -> f64 {
    r.cache_aside
        .as_ref()
        .and_then(|a| a.working_set.as_ref())
        .map_or(0.0, |w| w.memory_limit_bytes as f64 / (1u64 << 20) as f64)
}

/// The table row of run `r` (with a sized cache) on the curve of `target`
/// with `dist` keys.
fn size_row(target: &str, dist: &str, r: &RunResult) -> Vec<String> {
    let (pct, hit) = size_of(r).unwrap();
    let a = r.cache_aside.as_ref().unwrap();
    let per_req = |cpu: Option<f64>| {
        cpu.filter(|_| r.totals.requests > 0)
            .map_or("-".into(), |c| {
                format!("{:.1}", c * 1e6 / r.totals.requests as f64)
            })
    };
    vec![
        target.to_string(),
        dist.to_string(),
        format!("{:.1}", cache_mib(r)),
        format!("{pct:.1}"),
        format!("{:.1}%", hit * 100.0),
        short(a.db_reads_per_s),
        short(r.latency.latency_us.p50),
        short(r.latency.latency_us.p99),
        per_req(a.cache_cpu_s),
        per_req(a.db_cpu_s),
    ]
}

/// The verdict of a curve: what its smallest cache (`lo`) and its largest
/// (`hi`) hit and left the database.
fn size_line(target: &str, dist: &str, lo: &RunResult, hi: &RunResult) -> String {
    let (lp, lh) = size_of(lo).unwrap();
    let (hp, hh) = size_of(hi).unwrap();
    let (la, ha) = (
        lo.cache_aside.as_ref().unwrap(),
        hi.cache_aside.as_ref().unwrap(),
    );
    let data = la
        .working_set
        .as_ref()
        .map_or(0.0, |w| w.data_bytes as f64 / (1u64 << 20) as f64);
    format!(
        "With {dist} keys, {target}: a cache of {} MiB ({:.0}% of the {:.1} MiB of values) hit {:.1}% of reads and left the database {} reads/s (p99 {} µs); one of {} MiB ({:.0}%) hit {:.1}% and left it {} reads/s (p99 {} µs).",
        short(cache_mib(lo)),
        lp,
        data,
        lh * 100.0,
        short(la.db_reads_per_s),
        short(lo.latency.latency_us.p99),
        short(cache_mib(hi)),
        hp,
        hh * 100.0,
        short(ha.db_reads_per_s),
        short(hi.latency.latency_us.p99),
    )
}

/// A run's figure `f` of each timeline entry as chart points, at the entry's
/// start (where an event's marker is). Past the per-second part an entry is
/// a minute: `f` gives a count as a rate per second ([`Second::per_s`]).
fn curve(t: &[Second], f: impl Fn(&Second) -> Option<f64>) -> Vec<(f64, f64)> {
    t.iter()
        .filter_map(|s| f(s).map(|y| (s.second as f64, y)))
        .collect()
}

/// The study's p99 limit on a latency chart: µs and its label.
type Goal<'a> = Option<&'a (f64, String)>;

/// The timelines of `runs` (hit ratio, database reads, p99), events marked,
/// the p99 `goal` drawn on the p99 one.
fn timelines(title: &str, runs: &[&Run], keys: &[&str], goal: Goal, s: &mut Section) {
    let mut markers: Vec<(f64, String)> = Vec::new();
    for e in runs.iter().flat_map(|r| r.r.events.iter()) {
        let what = e.event.split_once(':').map_or(&*e.event, |(_, a)| a);
        // Runs of one sweep share their events: one line per second and action.
        if !markers.iter().any(|(x, w)| *x == e.at_s && w == what) {
            markers.push((e.at_s, what.to_string()));
        }
    }
    let mut chart = |what: &str, y: Axis, f: &dyn Fn(&Second) -> Option<f64>| {
        let series: Vec<Series> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| Series {
                name: r.label(keys),
                points: curve(&r.r.timeline, f),
                color: Some(i),
                dashed: false,
            })
            .filter(|x| !x.points.is_empty())
            .collect();
        if !series.is_empty() {
            s.charts.push(Chart {
                title: format!("{title}: {what}"),
                x_label: "second of the measured run".into(),
                y_label: y,
                series,
                x_categories: None,
                log_x: false,
                markers: markers.clone(),
            });
        }
    };
    chart("cache hit ratio per second", "hit ratio (%)".into(), &|s| {
        s.cache.as_ref()?.hit_ratio().map(|h| h * 100.0)
    });
    chart(
        "database reads per second",
        "reads per second".into(),
        &|s| Some(s.per_s(s.cache.as_ref().map_or(s.requests, |c| c.db_reads))),
    );
    let p99 = Axis::new("p99 latency (µs)");
    let p99 = match goal {
        Some((us, label)) => p99.with_line(*us, label.clone()),
        None => p99,
    };
    chart("p99 per second", p99, &|s| Some(s.p99_us));
}

/// A cold cache warming up: its curve, and whether the database alone could
/// carry the same rate (within the study's p99 goal, where it has one).
fn warmups(runs: &[Run], goal_p99_ms: Option<f64>, goal: Goal, s: &mut Section) {
    let cold: Vec<&Run> = runs
        .iter()
        .filter(|r| {
            r.r.events.is_empty()
                && r.r
                    .cache_aside
                    .as_ref()
                    .is_some_and(|a| a.start == CacheStart::Cold)
        })
        .collect();
    if cold.is_empty() {
        return;
    }
    for run in &cold {
        let t = &run.r.timeline;
        let (Some(first), Some(last)) = (t.first(), t.last()) else {
            continue;
        };
        let hit = |x: &Second| x.cache.as_ref().and_then(|c| c.hit_ratio()).unwrap_or(0.0);
        let db = |x: &Second| x.per_s(x.cache.as_ref().map_or(0, |c| c.db_reads));
        let alone = runs.iter().find(|o| {
            o.r.cache_aside.is_none()
                && o.rate() == run.rate()
                && o.r.config.target.kind == run.r.config.target.kind
        });
        let alone = match (run.rate(), alone) {
            (Some(rate), Some(a)) => format!(
                " The database alone at {} req/s: {} (p99 {} µs).",
                short(rate),
                alone_verdict(a.r, goal_p99_ms),
                short(a.r.latency.latency_us.p99)
            ),
            _ => String::new(),
        };
        s.verdict.push(format!(
            "{} started cold: its hit ratio went from {:.1}% in the first second to {:.1}% in second {}; the database's reads from {}/s to {}/s, p99 from {} to {} µs.{alone}",
            run.label(&["distribution", "rate"]),
            hit(first) * 100.0,
            hit(last) * 100.0,
            last.second + last.span(),
            short(db(first)),
            short(db(last)),
            short(first.p99_us),
            short(last.p99_us),
        ));
    }
    // Beside them, the database alone at the same rate.
    let mut shown = cold.clone();
    shown.extend(
        runs.iter()
            .filter(|o| o.r.cache_aside.is_none() && cold.iter().any(|c| c.rate() == o.rate())),
    );
    timelines("Cold start", &shown, &["distribution", "rate"], goal, s);
}

/// Whether the database alone carried a rate: never "carried" when its p99
/// missed the goal.
fn alone_verdict(r: &RunResult, goal_p99_ms: Option<f64>) -> String {
    let missed = goal_p99_ms.filter(|ms| r.latency.latency_us.p99 > ms * 1e3);
    match (
        r.latency
            .schedule
            .as_ref()
            .and_then(|x| x.not_sustained.as_ref()),
        missed,
    ) {
        (Some(_), _) => "it could not carry that rate".into(),
        (None, _) if !r.valid => "its run failed".into(),
        (None, Some(ms)) => format!("it kept the rate but missed the goal of p99 ≤ {ms} ms"),
        (None, None) if r.totals.errors > 0 => {
            format!("it kept the rate with {} errors", r.totals.errors)
        }
        (None, None) => match goal_p99_ms {
            Some(ms) => format!("it carried it within p99 ≤ {ms} ms"),
            None => "it carried it".into(),
        },
    }
}

/// Each event and its aftermath, and the timelines of the runs that had them.
fn events(runs: &[Run], goal: Goal, s: &mut Section) {
    let with: Vec<&Run> = runs.iter().filter(|r| !r.r.events.is_empty()).collect();
    if with.is_empty() {
        return;
    }
    for run in &with {
        let aside = run.r.cache_aside.is_some();
        for e in &run.r.events {
            let what = e.event.split_once(':').map_or(&*e.event, |(_, a)| a);
            if let Some(err) = &e.error {
                s.verdict
                    .push(format!("{}: event {what} failed: {err}", run.target));
                continue;
            }
            let errors: Vec<String> = e.errors.iter().map(|(k, n)| format!("{n} {k}")).collect();
            s.verdict.push(format!(
                "{}: at second {:.0}, {what}: the {} peaked at {} req/s ({}x the {} before), p99 at {} µs (from {}); {}; {}.",
                run.label(&["distribution", "cache.memory-mb"]),
                e.at_s,
                if aside { "database's reads" } else { "server's load" },
                short(e.db_peak_rps as f64),
                short(e.db_peak_rps as f64 / e.before.db_rps.max(1.0)),
                short(e.before.db_rps),
                short(e.worst_p99_us),
                short(e.before.p99_us),
                if errors.is_empty() {
                    "no request failed".to_string()
                } else {
                    format!("errors: {}", errors.join(", "))
                },
                match e.recovered_after_s {
                    Some(t) => format!("back near its level before after {t:.0} s"),
                    None => format!(
                        "not back near its level before by the end of the {:.0} s run",
                        run.r.totals.duration_s
                    ),
                },
            ));
        }
    }
    timelines(
        "Events",
        &with,
        &["distribution", "cache.memory-mb"],
        goal,
        s,
    );
}

#[cfg(test)]
mod tests;
