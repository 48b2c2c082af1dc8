//! `kvlab study`: runs a study file's points, saving the results after each,
//! then writes the report and prints the verdict (also the demo's path).

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::report::write_report;
use crate::cli::StudyArgs;
use crate::modes::study::exec::{Estimate, duration_text};
use crate::results::study::{PointResult, StudyResult};
use crate::{modes::study, report, runner};

/// Runs `kvlab study`.
pub fn exec(args: &StudyArgs, shutdown: &AtomicBool) -> Result<()> {
    let study = study::load(&args.file, args.scale)?;
    let out = args
        .out
        .clone()
        .or_else(|| study.output.clone())
        .unwrap_or_else(|| std::path::PathBuf::from("results").join(&study.name));
    if !args.dry_run {
        args.metrics
            .start(study.metrics.as_deref(), &study.name, None)?;
    }
    let done = match study.decide.is_some() {
        true => super::decide::exec_study(&study, &out, args.dry_run, shutdown),
        false => run_study(&study, &out, args.dry_run, shutdown),
    };
    crate::cli::metrics::hold(shutdown);
    done
}

/// Runs a study, then writes and summarises its report.
pub fn run_study(
    s: &study::StudyFile,
    out: &std::path::Path,
    dry_run: bool,
    shutdown: &AtomicBool,
) -> Result<()> {
    let points = study::expand(s)?;
    let time = study::exec::estimate(s, &points);
    println!(
        "kvlab study {}{}: {} points over {} target(s), {}",
        s.name,
        if s.scale.is_some() {
            " at the original's scale"
        } else {
            ""
        },
        points.len(),
        s.targets.len(),
        time.text()
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for c in study::core_caveats(s, cores) {
        eprintln!("kvlab: warning: {c}");
    }
    let axes = study::Point::varying(&points);
    if dry_run {
        print_plan(s, &points, &axes, &time);
        return Ok(());
    }
    let opts = runner::RunOptions {
        progress: true,
        notes: false,
    };
    let total = points.len();
    let mut on_point = |p: &study::Point, r: &PointResult| {
        if let Some(line) = point_line(p, r, &axes, total) {
            println!("{line}");
        }
    };
    let plans: Vec<_> = points
        .iter()
        .map(|p| (&p.plan, p.plan.workload.keys))
        .collect();
    let guard = runner::foreign::Guard::open(&plans, opts)?;
    let path = study::exec::run(s, out, opts, shutdown, &mut on_point);
    guard.finish();
    let path = path?;
    println!("kvlab: results in {}", path.display());
    let results = vec![StudyResult::read(&path)?];
    let report = write_report(&results, out)?;
    print_verdict(&report::build(&results));
    println!("\nkvlab: report in {}", report.display());
    check_outcome(s, &results[0])
}

/// A finished point's progress line: its figures, its fill, or its error.
fn point_line(p: &study::Point, r: &PointResult, axes: &[String], total: usize) -> Option<String> {
    let n = p.index + 1;
    let label = p.label(axes);
    match (&r.result, &r.error, &r.fill) {
        (Some(x), _, _) => Some(format!(
            "  [{n}/{total}] {label}: {:.0} req/s, p99 {:.0} µs, errors {}{}",
            x.totals.throughput_rps,
            x.latency.latency_us.p99,
            x.totals.errors,
            x.server
                .server_cpu_us_per_request
                .map(|u| format!(", server {u:.1} µs/req"))
                .unwrap_or_default()
                + &x.cache_aside
                    .as_ref()
                    .map(|a| {
                        format!(
                            ", {} {:.1}%",
                            crate::results::aside::HIT_RATIO_NAME,
                            a.hit_ratio * 100.0
                        )
                    })
                    .unwrap_or_default()
                + &x.consistency
                    .as_ref()
                    .map(|c| format!(", {} stale reads", c.stale_reads))
                    .unwrap_or_default()
        )),
        (None, None, Some(f)) => Some(format!(
            "  [{n}/{total}] {}: {} items held, {:.0} items per GiB of {} ({:.0} B per item), stopped by {}",
            p.target, f.items, f.items_per_gib, f.basis, f.bytes_per_item, f.stopped_by
        )),
        (None, Some(e), _) => Some(format!(
            "  [{n}/{total}] {label}: {}: {e}",
            if r.interrupted {
                "INTERRUPTED"
            } else {
                "FAILED"
            }
        )),
        _ => None,
    }
}

/// Prints the report's verdict and caveats.
fn print_verdict(r: &report::Report) {
    println!("\nVerdict:");
    for v in &r.verdict {
        println!("  - {v}");
    }
    for c in &r.caveats {
        println!("  ({c})");
    }
}

/// Fails when every point failed, or (a gate) a `[thresholds]` limit was
/// not met.
fn check_outcome(s: &study::StudyFile, results: &StudyResult) -> Result<()> {
    if let Some(why) = results.all_failed() {
        anyhow::bail!(
            "every point of study '{}' failed (the first: {why})",
            s.name
        );
    }
    let failed: Vec<String> = crate::results::thresholds::check(&s.thresholds, &results.points)
        .into_iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{}: {} (got {})", c.point, c.limit, c.value))
        .collect();
    if !failed.is_empty() {
        return Err(crate::error::GateFailed(format!(
            "thresholds: {} failed: {}; the results and report are written",
            failed.len(),
            failed.join("; ")
        ))
        .into());
    }
    Ok(())
}

/// Prints the plan of `--dry-run`: the settings every point shares, those of
/// each target, the time the study takes by part, then each point with its
/// values of `axes` (the settings that vary).
fn print_plan(s: &study::StudyFile, points: &[study::Point], axes: &[String], time: &Estimate) {
    let parts: Vec<String> = time
        .parts
        .iter()
        .map(|(part, secs)| format!("{part} {}", duration_text(*secs)))
        .collect();
    println!("time: {}", parts.join(", "));
    if time.at_most_s > time.about_s + 1.0 {
        println!(
            "  (at most {}: {})",
            duration_text(time.at_most_s),
            time.bounds.join("; ")
        );
    }
    let sets: Vec<Vec<(String, String)>> = points.iter().map(study::Point::settings).collect();
    // A setting is shared by every point, else by a target's, else per point.
    let mut every: Vec<String> = vec![
        format!("repetitions={}", s.repetitions),
        format!("mode={}", s.mode.as_deref().unwrap_or("measure")),
    ];
    let names = sets
        .first()
        .map(|f| f.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>());
    for k in names.unwrap_or_default() {
        if let Some(v) = fixed(&k, &sets) {
            every.push(format!("{k}={v}"));
        }
    }
    for (key, cpus) in [
        ("server_cpus", &s.server_cpus),
        ("client_cpus", &s.client_cpus),
    ] {
        if let Some(c) = cpus {
            every.push(format!("{key}={c}"));
        }
    }
    println!("every point:");
    wrap("  ", &every);
    for (name, table) in [
        ("goal", pairs(&s.goal)),
        ("thresholds", pairs(&s.thresholds)),
    ] {
        if !table.is_empty() {
            wrap(&format!("  {name}: "), &table);
        }
    }
    for t in s.targets.iter().map(study::label) {
        let mine: Vec<(&study::Point, &Vec<(String, String)>)> = points
            .iter()
            .zip(&sets)
            .filter(|(p, _)| p.target == t)
            .collect();
        let Some((point, first)) = mine.first() else {
            continue;
        };
        let own: Vec<String> = first
            .iter()
            .filter(|(k, _)| fixed(k, &sets).is_none() && !axes.contains(k))
            .filter_map(|(k, _)| {
                fixed(k, mine.iter().map(|(_, set)| *set)).map(|v| format!("{k}={v}"))
            })
            .collect();
        let plan = &point.plan;
        let what = match &plan.cache {
            Some(c) => format!(
                "{}, {}, {} start",
                crate::results::architecture_name(
                    plan.target.kind.name(),
                    Some(c.cache.kind.name()),
                    plan.target.pooler.as_deref(),
                ),
                c.policy.name(),
                c.start.name()
            ),
            None => crate::results::architecture_name(
                plan.target.kind.name(),
                None,
                plan.target.pooler.as_deref(),
            ),
        };
        println!("target {t} ({what}):");
        if !own.is_empty() {
            wrap("  ", &own);
        }
    }
    println!("points:");
    for p in points {
        println!("  {:>3} #{} {}", p.index + 1, p.repetition, p.label(axes));
    }
}

/// The value of setting `k` when every one of `sets` has the same.
fn fixed<'a>(
    k: &str,
    sets: impl IntoIterator<Item = &'a Vec<(String, String)>>,
) -> Option<&'a String> {
    let mut values = sets
        .into_iter()
        .map(|set| set.iter().find(|(n, _)| n == k).map(|(_, v)| v));
    let first = values.next().flatten();
    values.all(|v| v == first).then_some(first).flatten()
}

/// A study table's settings as `key=value` (unset and false ones left out).
fn pairs<T: serde::Serialize>(table: &T) -> Vec<String> {
    match toml::Value::try_from(table) {
        Ok(toml::Value::Table(t)) => t
            .iter()
            .filter(|(_, v)| **v != toml::Value::Boolean(false))
            .map(|(k, v)| match v {
                toml::Value::String(s) => format!("{k}={s}"),
                toml::Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => {
                    format!("{k}={}", *f as i64)
                }
                v => format!("{k}={v}"),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Prints `items` space-separated, wrapped at 100 columns, each line led by
/// `lead` (the first) or as many spaces.
fn wrap(lead: &str, items: &[String]) {
    let indent = " ".repeat(lead.chars().count());
    let mut line = lead.to_string();
    let mut empty = true;
    for item in items {
        if !empty && line.chars().count() + 1 + item.len() > 100 {
            println!("{line}");
            line = indent.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(item);
        empty = false;
    }
    println!("{line}");
}
