//! The verdict and caveats of a report: plain sentences with numbers, the
//! answer first, then what to keep in mind when reading them.

use std::fmt::Write;

use super::chart::short;
use super::fill;
use super::rows::{Row, describe, varies};
use crate::plan::study::{Goal, label};
use crate::results::study::StudyResult;

/// The verdict lines of `results` and the best row of each target (per swept
/// server setting), in target order. `axis` is the swept axis the rows are
/// described by; `fill` is the memory-efficiency section, when there is one.
pub(super) fn verdict<'a>(
    results: &[StudyResult],
    rows: &'a [Row],
    axis: Option<&str>,
    fill: Option<&fill::Section>,
) -> (Vec<String>, Vec<&'a Row>) {
    let goal = results
        .first()
        .map(|r| r.study.goal.clone())
        .unwrap_or_default();
    let mut verdict = Vec::new();
    let points: usize = results.iter().map(|r| r.points.len()).sum();
    let why: Option<Vec<String>> = results.iter().map(StudyResult::all_failed).collect();
    if let Some(why) = why.and_then(|w| w.into_iter().next()) {
        verdict.push(format!(
            "Every point of this study failed ({points}); nothing was measured. The first: {why}"
        ));
        return (verdict, Vec::new());
    }
    let mut best: Vec<&Row> = Vec::new();
    for t in &targets(rows) {
        let (line, top) = judge(t, rows, &goal, axis);
        verdict.push(line);
        best.extend(top);
    }
    verdict.extend(capacity(results));
    // Memory efficiency (mode = "fill").
    if let Some(f) = fill {
        verdict.extend(f.verdict.iter().cloned());
        if let Some(h) = &f.headline {
            verdict.insert(0, h.clone());
        }
    }
    if let Some(line) = cache_against_database(&best) {
        verdict.insert(0, line);
    }
    (verdict, best)
}

/// A row's target with its swept server settings: a target with swept
/// server settings is judged once per setting.
fn settings_of(rows: &[Row], r: &Row) -> String {
    let v: Vec<String> = r
        .params
        .iter()
        .filter(|(k, _)| k.starts_with("server.") && varies(rows, k))
        .map(|(k, v)| format!("{}={v}", &k[7..]))
        .collect();
    if v.is_empty() {
        r.target.clone()
    } else {
        format!("{} {}", r.target, v.join(" "))
    }
}

/// The targets judged (each with its swept server settings), in row order.
fn targets(rows: &[Row]) -> Vec<String> {
    let mut targets: Vec<String> = Vec::new();
    for r in rows {
        let t = settings_of(rows, r);
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    targets
}

/// Target `t`'s verdict line, and its best row when it has one: every point
/// failed, none met the goal, or its best.
fn judge<'a>(
    t: &str,
    rows: &'a [Row],
    goal: &Goal,
    axis: Option<&str>,
) -> (String, Option<&'a Row>) {
    let failed = |r: &Row| r.errors > 0 || r.not_sustained;
    let mine: Vec<&Row> = rows
        .iter()
        .filter(|r| settings_of(rows, r) == t && !failed(r))
        .collect();
    if mine.is_empty() {
        let line = format!("{t}: every point failed (errors, or an offered rate not sustained).");
        return (line, None);
    }
    match best_of(&mine, goal.p99_ms) {
        Some((top, best_is)) => (best_line(t, top, &best_is, goal, axis), Some(top)),
        None => (
            missed_goal(t, &mine, goal.p99_ms.unwrap_or(0.0), axis),
            None,
        ),
    }
}

/// The line of target `t`'s best row `top` (named `best_is`): its rate,
/// latency and server CPU; how latency was read, and the goal's rate.
fn best_line(t: &str, top: &Row, best_is: &str, goal: &Goal, axis: Option<&str>) -> String {
    let product = match &top.aside {
        Some(a) => format!(" ({} in front of {}, {})", a.cache, top.product, a.policy),
        None if top.target == top.product => String::new(),
        None => format!(" ({})", top.product),
    };
    let mut s = format!(
        "{t}{product}: {best_is} {} req/s at {}, p50 {} µs, p99 {} µs",
        short(top.rps),
        describe(top, axis),
        short(top.latency.p50),
        short(top.latency.p99)
    );
    if let Some(us) = top.server_us {
        let _ = write!(
            s,
            "; it spent {:.2} server CPU cores per 100k req/s",
            us * 0.1
        );
        if let Some((name, Some(p))) = &top.pooler {
            let _ = write!(
                s,
                " ({name} {:.0}% of it, {:.1} µs/request)",
                p * 100.0 / us.max(1e-9),
                p
            );
        }
    }
    // The best is within the goal already: say how its latency was read.
    if goal.p99_ms.is_some() {
        let _ = write!(
            s,
            "; {}",
            match top.paced {
                true => "open loop, latency from the intended start",
                false => "closed loop, latency from the send",
            }
        );
    }
    if let Some(rps) = goal.rps {
        let _ = write!(
            s,
            "; goal {} req/s {}",
            short(rps),
            if top.rps >= rps { "met" } else { "not met" }
        );
    }
    s.push('.');
    s
}

/// A line per capacity search: the rate found within the goal, and whether
/// kvlab itself limited it.
fn capacity(results: &[StudyResult]) -> Vec<String> {
    let mut lines = Vec::new();
    for c in results.iter().flat_map(|r| &r.capacity) {
        let mut line = match c.search.capacity_rps {
            Some(rate) => format!(
                "{}: capacity search (open loop at a fixed rate, latency from the intended start, which also counts queueing before the send) found {} req/s within p99 ≤ {} ms.",
                c.target,
                short(rate),
                c.search.p99_ms
            ),
            None => format!(
                "{}: capacity search found no rate within p99 ≤ {} ms without errors.",
                c.target, c.search.p99_ms
            ),
        };
        let limited = c.search.steps.iter().filter(|s| s.client_limited).count();
        if limited > 0 {
            let _ = write!(
                line,
                " {limited} of its failing steps were limited by kvlab, not the server (see the steps): the figure is a lower bound for the server; raise --threads or --connections."
            );
        }
        lines.push(line);
    }
    lines
}

/// The best of a target's points that did not fail, and how to name it: with
/// a p99 goal, only points within it count (`None`: none was); where every
/// point was offered the same rate, the best is the lowest p99 at that rate
/// (throughputs then differ by noise), else the highest throughput.
fn best_of<'a>(mine: &[&'a Row], p99_ms: Option<f64>) -> Option<(&'a Row, String)> {
    let ok: Vec<&Row> = mine
        .iter()
        .copied()
        .filter(|r| p99_ms.is_none_or(|ms| r.latency.p99 <= ms * 1000.0))
        .collect();
    let first = ok.first()?;
    let one_rate = first.offered.is_some() && ok.iter().all(|r| r.offered == first.offered);
    match one_rate {
        true => ok
            .iter()
            .copied()
            .min_by(|a, b| a.latency.p99.total_cmp(&b.latency.p99))
            .map(|r| (r, "lowest p99 at the offered rate:".to_string())),
        false => ok
            .iter()
            .copied()
            .max_by(|a, b| a.rps.total_cmp(&b.rps))
            .map(|r| {
                let name = match p99_ms {
                    Some(ms) => format!("best within p99 ≤ {ms} ms:"),
                    None => "best".to_string(),
                };
                (r, name)
            }),
    }
}

/// A target none of whose points met the p99 goal: its lowest p99 and what to
/// run to find a point that meets it.
fn missed_goal(t: &str, mine: &[&Row], ms: f64, axis: Option<&str>) -> String {
    let Some(low) = mine
        .iter()
        .min_by(|a, b| a.latency.p99.total_cmp(&b.latency.p99))
    else {
        return format!("{t}: no point met p99 ≤ {ms} ms.");
    };
    format!(
        "{t}: no point met p99 ≤ {ms} ms; the lowest p99 was {} µs at {} req/s ({}). To find the rate it carries within the goal: kvlab capacity --p99-ms {ms} on it, or lower rates in the study's [sweep].",
        short(low.latency.p99),
        short(low.rps),
        describe(low, axis)
    )
}

/// The best cache against the best database (without a cache in front), when
/// the study has both.
fn cache_against_database(best: &[&Row]) -> Option<String> {
    let c = best
        .iter()
        .filter(|r| r.cache)
        .max_by(|a, b| a.rps.total_cmp(&b.rps))?;
    let d = best
        .iter()
        .filter(|r| !r.cache && r.aside.is_none())
        .max_by(|a, b| a.rps.total_cmp(&b.rps))?;
    // At one offered rate both carried it: their throughputs differ by noise.
    let mut s = match (c.offered, d.offered) {
        (Some(x), Some(y)) if x == y => format!(
            "At the same offered {} req/s the best cache ({}) had p99 {} µs and the best database ({}) {} µs",
            short(x),
            c.target,
            short(c.latency.p99),
            d.target,
            short(d.latency.p99)
        ),
        _ => format!(
            "On the same work the best cache ({}) served {:.1}x the requests per second of the best database ({})",
            c.target,
            c.rps / d.rps.max(1e-9),
            d.target
        ),
    };
    if let (Some(cu), Some(du)) = (c.server_us, d.server_us) {
        // "0.8x less" reads wrong: say which side spent more, and how much.
        if du >= cu {
            let _ = write!(
                s,
                " and spent {:.1}x less server CPU per request",
                du / cu.max(1e-9)
            );
        } else {
            let _ = write!(
                s,
                " and spent {:.1}x more server CPU per request",
                cu / du.max(1e-9)
            );
        }
    }
    s.push('.');
    Some(s)
}

/// The caveats that matter for `results` and their merged `rows`: the
/// machine, unstable repetitions, the study's own notes, the workload, then
/// what befell the points.
pub(super) fn caveats(results: &[StudyResult], rows: &[Row]) -> Vec<String> {
    let mut caveats = machine(results);
    caveats.extend(unstable(results));
    for c in study(results) {
        if !caveats.contains(&c) {
            caveats.push(c);
        }
    }
    caveats.extend(workload(results, rows));
    caveats.extend(network(results));
    caveats.extend(points(results, rows));
    caveats
}

/// The round trips kvlab emulated, if any: what they are and are not.
fn network(results: &[StudyResult]) -> Option<String> {
    let mut trips: Vec<String> = Vec::new();
    for r in results
        .iter()
        .flat_map(|r| &r.points)
        .filter_map(|p| p.result.as_ref())
    {
        let l = &r.config.load;
        for d in l
            .rtt
            .iter()
            .chain(l.cache_rtt.iter().filter(|_| r.config.cache.is_some()))
        {
            let d = d.to_string();
            if !trips.contains(&d) {
                trips.push(d);
            }
        }
    }
    (!trips.is_empty()).then(|| format!(
        "Round trips of {} were emulated by kvlab on the connections (half before a request reaches its server, half before its reply counts; a cache-aside run's cache over its own): a delay only, with no loss, no bandwidth limit and no TCP window effects. Latency includes them; the servers' figures do not.",
        trips.join(", ")
    ))
}

/// The machine client and servers shared, and what makes its figures
/// suspect.
fn machine(results: &[StudyResult]) -> Vec<String> {
    let mut caveats = Vec::new();
    if let Some(m) = results.first().map(|r| &r.machine) {
        caveats.push(format!("Client and server shared one machine: {} cores of {} with {} MiB, kernel {}; on separate machines both sides would get more CPU.", m.cores, m.cpu, m.memory_mib, m.kernel));
        let w = &results[0].study.workload;
        for c in m.suspicions(w.keys.saturating_mul(w.value_size as u64)) {
            let mut c = c;
            if let Some(f) = c.get_mut(0..1) {
                f.make_ascii_uppercase();
            }
            caveats.push(format!("{c}."));
        }
    }
    caveats
}

/// What each study said of itself: what it cannot show on its machine (its
/// caveats, found when it ran), its scale, its targets' notes.
fn study(results: &[StudyResult]) -> Vec<String> {
    let mut caveats = Vec::new();
    for r in results {
        caveats.extend(r.caveats.iter().cloned());
        if r.study.scale.is_some() {
            caveats.push("Run at the original study's scale (--scale original).".to_string());
        }
        for t in &r.study.targets {
            if let Some(note) = &t.note {
                caveats.push(format!("{}: {note}.", label(t)));
            }
        }
    }
    caveats
}

/// What the workload did not measure: writes (read-only), the cost of
/// consistency (a mixed load without a cache), a database's buffer pool
/// (fill).
fn workload(results: &[StudyResult], rows: &[Row]) -> Option<String> {
    let ratios: Vec<&String> = rows.iter().map(|r| &r.ratio).collect();
    let fill_mode = results
        .iter()
        .any(|r| r.points.iter().any(|p| p.fill.is_some()));
    if ratios.is_empty() {
        return fill_mode.then(|| "Memory was measured against each cache's configured limit and each table's on-disk size; a database also needs memory for its buffer pool to serve that table.".into());
    }
    if ratios.iter().all(|r| r.as_str() == "0:1") {
        return Some("Read-only point lookups (SET:GET 0:1): writes, invalidation and consistency were not measured (studies/cache-aside.toml measures them).".into());
    }
    if rows.iter().any(|r| r.aside.is_some()) {
        return None;
    }
    let mut mixes: Vec<&str> = Vec::new();
    for r in &ratios {
        if !mixes.contains(&r.as_str()) {
            mixes.push(r);
        }
    }
    Some(format!(
        "Mixed load (SET:GET {}); the cost of keeping a cache consistent with its database was not measured here (studies/cache-aside.toml measures it).",
        mixes.join(", ")
    ))
}

/// What befell the points: kvlab saturated, errors, update's race, rates
/// not carried, points that failed, an interruption.
fn points(results: &[StudyResult], rows: &[Row]) -> Vec<String> {
    let mut caveats = Vec::new();
    if rows.iter().any(|r| r.saturated) {
        caveats.push("Some points saturated kvlab's own threads: their figures describe the client or CPU contention, not the server.".into());
    }
    if rows.iter().any(|r| r.errors > 0) {
        caveats
            .push("Some points had errors; they are excluded from the best figures above.".into());
    }
    if let Some(n) = results
        .iter()
        .flat_map(|r| &r.points)
        .find_map(|p| p.result.as_ref()?.cache_aside.as_ref()?.note.as_ref())
    {
        caveats.push(format!("Cache-aside with --write-policy update: {n}."));
    }
    let short_of: Vec<String> = rows
        .iter()
        .filter(|r| r.not_sustained)
        .map(|r| {
            let at: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{} ({})", r.target, at.join(" "))
        })
        .collect();
    if !short_of.is_empty() {
        caveats.push(format!(
            "{} open-loop point(s) did not carry their offered rate and are excluded from the best figures above: {}.",
            short_of.len(),
            short_of.join(", ")
        ));
    }
    let failed: usize = results
        .iter()
        .map(|r| {
            r.points
                .iter()
                .filter(|p| p.result.is_none() && p.fill.is_none())
                .count()
        })
        .sum();
    if failed > 0 {
        caveats.push(format!(
            "{failed} point(s) failed to run; see the results file for the reasons."
        ));
    }
    if results
        .iter()
        .any(|r| r.interrupted || r.points.len() < r.planned)
    {
        caveats.push("The study was interrupted: only finished points are shown.".into());
    }
    caveats
}

/// Repetitions whose throughput varies more than 10% (coefficient of
/// variation): those points are unstable, their figures not to be trusted to
/// better than that.
fn unstable(results: &[StudyResult]) -> Vec<String> {
    let mut groups: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for p in results.iter().flat_map(|r| &r.points) {
        if let Some(r) = &p.result {
            groups
                .entry(p.label())
                .or_default()
                .push(r.totals.throughput_rps);
        }
    }
    groups
        .into_iter()
        .filter_map(|(point, xs)| {
            let cv = crate::report::compare::stats::Series::of(&xs)?.cv();
            (cv > 0.10).then(|| {
                format!(
                    "Unstable: the {} repetitions of {point} vary {:.0}% in throughput (over 10%); compare such points with care.",
                    xs.len(),
                    cv * 100.0
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rows::rows;

    fn fixture(p99_ms: f64, fixed_rate: bool) -> StudyResult {
        let mut s: StudyResult =
            serde_json::from_str(include_str!("../../tests/fixtures/study.json")).unwrap();
        s.study.goal.p99_ms = Some(p99_ms);
        for p in &mut s.points {
            let r = p.result.as_mut().unwrap();
            if fixed_rate {
                r.config.load.rate = Some(20_000.0);
                r.latency.schedule = Some(Default::default());
            }
        }
        s
    }

    /// The fixture's verdict at a p99 goal of `p99_ms` (every point offered
    /// one rate when `fixed_rate`), and its best rows' targets.
    fn judged(p99_ms: f64, fixed_rate: bool) -> (Vec<String>, Vec<String>) {
        let s = [fixture(p99_ms, fixed_rate)];
        let rs = rows(&s);
        let (v, best) = verdict(&s, &rs, Some("connections"), None);
        (v, best.iter().map(|r| r.target.clone()).collect())
    }

    /// The verdict line of `target`.
    fn line<'a>(v: &'a [String], target: &str) -> &'a str {
        v.iter().find(|l| l.starts_with(target)).unwrap()
    }

    #[test]
    fn a_point_that_missed_the_goal_is_never_the_best() {
        // redis meets p99 ≤ 0.15 ms at 4 connections (124 µs), postgres never
        // (its lowest p99 is 200 µs).
        let (v, best) = judged(0.15, false);
        let redis = line(&v, "redis");
        assert!(redis.contains("best within p99 ≤ 0.15 ms:"), "{redis}");
        assert!(redis.contains("at connections 4,"), "{redis}");
        let pg = line(&v, "postgres");
        assert!(
            pg.contains("no point met p99 ≤ 0.15 ms; the lowest p99 was 200 µs"),
            "{pg}"
        );
        assert!(pg.contains("kvlab capacity --p99-ms 0.15"), "{pg}");
        assert!(!pg.contains("best"), "{pg}");
        assert!(best.iter().all(|t| t == "redis"));
    }

    #[test]
    fn at_one_offered_rate_the_best_is_the_lowest_p99() {
        // Every point offered the same rate: throughputs differ by noise, so
        // the best is the lowest p99 (4 connections), not the most req/s.
        let (v, _) = judged(2.0, true);
        let redis = line(&v, "redis");
        assert!(redis.contains("lowest p99 at the offered rate:"), "{redis}");
        assert!(redis.contains("at connections 4,"), "{redis}");
        assert!(!redis.contains("best"), "{redis}");
        let head = &v[0];
        assert!(
            head.starts_with("At the same offered 20k req/s the best cache (redis) had p99 124 µs"),
            "{head}"
        );
    }
}
