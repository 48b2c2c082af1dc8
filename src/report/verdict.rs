//! The verdict and caveats of a report: plain sentences with numbers, the
//! answer first, then what to keep in mind when reading them.

use std::fmt::Write;

use super::chart::short;
use super::fill;
use super::rows::{Row, describe, varies};
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
    // A target with swept server settings is judged once per setting.
    let settings_of = |r: &Row| -> String {
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
    };
    let mut targets: Vec<String> = Vec::new();
    for r in rows {
        let t = settings_of(r);
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    let within =
        |r: &Row| r.errors == 0 && goal.p99_ms.is_none_or(|ms| r.latency.p99 <= ms * 1000.0);
    let failed = |r: &Row| r.errors > 0 || r.not_sustained;
    let mut best: Vec<&Row> = Vec::new();
    for t in &targets {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| &settings_of(r) == t && !failed(r))
            .collect();
        let Some(top) = mine.iter().copied().max_by(|a, b| a.rps.total_cmp(&b.rps)) else {
            verdict.push(format!(
                "{t}: every point failed (errors, or an offered rate not sustained)."
            ));
            continue;
        };
        let product = match &top.aside {
            Some(a) => format!(" ({} in front of {}, {})", a.cache, top.product, a.policy),
            None if top.target == top.product => String::new(),
            None => format!(" ({})", top.product),
        };
        let mut s = format!(
            "{t}{product}: best {} req/s at {}, p50 {} µs, p99 {} µs",
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
        if let Some(ms) = goal.p99_ms {
            match mine
                .iter()
                .copied()
                .filter(|r| within(r))
                .max_by(|a, b| a.rps.total_cmp(&b.rps))
            {
                Some(g) => {
                    let how = match g.paced {
                        true => "open loop, latency from the intended start",
                        false => "closed loop, latency from the send",
                    };
                    let _ = write!(
                        s,
                        "; its fastest point within p99 ≤ {ms} ms served {} req/s ({}; {how})",
                        short(g.rps),
                        describe(g, axis)
                    );
                }
                None => {
                    let _ = write!(s, "; no point met p99 ≤ {ms} ms");
                }
            }
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
        verdict.push(s);
        best.push(top);
    }
    for sr in results {
        for c in &sr.capacity {
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
            verdict.push(line);
        }
    }
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
    let mut s = format!(
        "On the same work the best cache ({}) served {:.1}x the requests per second of the best database ({})",
        c.target,
        c.rps / d.rps.max(1e-9),
        d.target
    );
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

/// The caveats that matter for `results` and their merged `rows`.
pub(super) fn caveats(results: &[StudyResult], rows: &[Row]) -> Vec<String> {
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
    caveats.extend(unstable(results));
    for r in results {
        for c in crate::modes::study::core_caveats(&r.study, r.machine.cores) {
            if !caveats.contains(&c) {
                caveats.push(c);
            }
        }
        if r.study.scale.is_some() {
            let c = "Run at the original study's scale (--scale original).".to_string();
            if !caveats.contains(&c) {
                caveats.push(c);
            }
        }
        for t in &r.study.targets {
            if let Some(note) = &t.note {
                let c = format!("{}: {note}.", crate::modes::study::label(t));
                if !caveats.contains(&c) {
                    caveats.push(c);
                }
            }
        }
    }
    let ratios: Vec<&String> = rows.iter().map(|r| &r.ratio).collect();
    let fill_mode = results
        .iter()
        .any(|r| r.points.iter().any(|p| p.fill.is_some()));
    if ratios.is_empty() {
        if fill_mode {
            caveats.push("Memory was measured against each cache's configured limit and each table's on-disk size; a database also needs memory for its buffer pool to serve that table.".into());
        }
    } else if ratios.iter().all(|r| r.as_str() == "0:1") {
        caveats.push("Read-only point lookups (SET:GET 0:1): writes, invalidation and consistency were not measured (studies/cache-aside.toml measures them).".into());
    } else if rows.iter().all(|r| r.aside.is_none()) {
        let mut mixes: Vec<&str> = Vec::new();
        for r in &ratios {
            if !mixes.contains(&r.as_str()) {
                mixes.push(r);
            }
        }
        caveats.push(format!("Mixed load (SET:GET {}); the cost of keeping a cache consistent with its database was not measured here (studies/cache-aside.toml measures it).", mixes.join(", ")));
    }
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
            groups.entry(p.label()).or_default().push(r.throughput_rps);
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
