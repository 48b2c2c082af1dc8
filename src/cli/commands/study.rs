//! `kvlab study`: runs a study file's points, saving the results after each,
//! then writes the report and prints the verdict (also the demo's path).

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::report::write_report;
use crate::cli::StudyArgs;
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
    let done = run_study(&study, &out, args.dry_run, shutdown);
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
    println!(
        "kvlab study {}{}: {} points over {} target(s), about {:.0} s of load",
        s.name,
        if s.scale.is_some() {
            " at the original's scale"
        } else {
            ""
        },
        points.len(),
        s.targets.len(),
        points.len() as f64 * (s.duration + s.warmup)
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for c in study::core_caveats(s, cores) {
        eprintln!("kvlab: warning: {c}");
    }
    if dry_run {
        for p in &points {
            let params: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let cache = p
                .plan
                .cache
                .as_ref()
                .map(|c| {
                    format!(
                        " (behind {} {}, ttl {} s)",
                        c.cache.kind.name(),
                        c.policy.name(),
                        c.ttl_s
                    )
                })
                .unwrap_or_default();
            println!(
                "  {:>3} {}{cache} #{} {}",
                p.index + 1,
                p.target,
                p.repetition,
                params.join(" ")
            );
        }
        return Ok(());
    }
    let opts = runner::RunOptions {
        progress: true,
        notes: false,
    };
    let total = points.len();
    let swept = study::swept_axes(s);
    let mut on_point = |p: &study::Point, r: &PointResult| {
        let params: Vec<String> = p
            .params
            .iter()
            .filter(|(k, _)| swept.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        match (&r.result, &r.error) {
            (Some(x), _) => println!(
                "  [{}/{total}] {} {}: {:.0} req/s, p99 {:.0} µs, errors {}{}",
                p.index + 1,
                p.target,
                params.join(" "),
                x.throughput_rps,
                x.latency_us.p99,
                x.errors,
                x.server_cpu_us_per_request
                    .map(|u| format!(", server {u:.1} µs/req"))
                    .unwrap_or_default()
                    + &x.cache_aside
                        .as_ref()
                        .map(|a| format!(", hit ratio {:.1}%", a.hit_ratio * 100.0))
                        .unwrap_or_default()
                    + &x.consistency
                        .as_ref()
                        .map(|c| format!(", {} stale reads", c.stale_reads))
                        .unwrap_or_default()
            ),
            (None, None) if r.fill.is_some() => {
                let f = r.fill.as_ref().expect("checked");
                println!(
                    "  [{}/{total}] {}: {} items held, {:.0} items per GiB of {} ({:.0} B per item), stopped by {}",
                    p.index + 1,
                    p.target,
                    f.items,
                    f.items_per_gib,
                    f.basis,
                    f.bytes_per_item,
                    f.stopped_by
                );
            }
            (None, Some(e)) => println!(
                "  [{}/{total}] {} {}: {}: {e}",
                p.index + 1,
                p.target,
                params.join(" "),
                if r.interrupted {
                    "INTERRUPTED"
                } else {
                    "FAILED"
                }
            ),
            _ => {}
        }
    };
    let path = study::exec::run(s, out, opts, shutdown, &mut on_point)?;
    println!("kvlab: results in {}", path.display());
    let results = vec![StudyResult::read(&path)?];
    let report = write_report(&results, out)?;
    let r = report::build(&results);
    println!("\nVerdict:");
    for v in &r.verdict {
        println!("  - {v}");
    }
    for c in &r.caveats {
        println!("  ({c})");
    }
    println!("\nkvlab: report in {}", report.display());
    if let Some(why) = results[0].all_failed() {
        anyhow::bail!(
            "every point of study '{}' failed (the first: {why})",
            s.name
        );
    }
    let failed: Vec<String> = crate::results::thresholds::check(&s.thresholds, &results[0].points)
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
