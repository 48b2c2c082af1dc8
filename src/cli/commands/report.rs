//! `kvlab report`: rebuilds the report of study results offline (or, given the
//! results of `kvlab run`, their summary, merged when they are a sharded run's
//! clients). Only results of one study share a report.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;

use super::merge::merged;
use crate::error::UsageError;
use crate::report;
use crate::report::summary::summary;
use crate::results::study::StudyResult;
use crate::results::{RunResult, merge};

/// Flags of `kvlab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results files written by `kvlab study` (several files of one study
    /// share one report; other studies are refused, see --separate), or the
    /// results of `kvlab run` (the clients of one sharded run are merged as
    /// `kvlab merge` does).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Directory for report.html and report.md [default: that of the first file].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Results of different studies: one report each (in a directory per file
    /// under --out, else beside each file) instead of refusing to mix them.
    #[arg(long)]
    pub separate: bool,
}

/// Runs `kvlab report`.
pub fn exec(args: &ReportArgs) -> Result<()> {
    once_each(&args.results)?;
    if merge::file_is_run_result(&args.results[0]) {
        return run_report(args);
    }
    let results: Vec<StudyResult> = args
        .results
        .iter()
        .map(|p| StudyResult::read(p))
        .collect::<Result<_>>()?;
    let name = |i: usize| args.results[i].display().to_string();
    if args.separate {
        for (i, r) in results.iter().enumerate() {
            let out = match &args.out {
                Some(o) => o.join(stem(&args.results[i])),
                None => parent(&args.results[i]),
            };
            let path = write_report(std::slice::from_ref(r), &out)?;
            println!("kvlab: wrote {} ({})", path.display(), name(i));
        }
        return Ok(());
    }
    for (i, r) in results.iter().enumerate().skip(1) {
        if let Some(why) = results[0].differs(&name(0), r, &name(i)) {
            bail!("{why}");
        }
    }
    let out = args.out.clone().unwrap_or_else(|| parent(&args.results[0]));
    let path = write_report(&results, &out)?;
    println!("kvlab: wrote {}", path.display());
    Ok(())
}

/// Refuses a file given twice (by its path, however it is spelled).
fn once_each(paths: &[PathBuf]) -> Result<()> {
    let mut seen: Vec<(PathBuf, &Path)> = Vec::new();
    for p in paths {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if let Some((_, first)) = seen.iter().find(|(r, _)| *r == real) {
            bail!(
                "{} is given twice (also as {}): give each results file once",
                p.display(),
                first.display()
            );
        }
        seen.push((real, p));
    }
    Ok(())
}

/// Results of `kvlab run`: one file, or the clients of one sharded run
/// (merged); their summary on stdout, and with `--out` as summary.md and
/// result.json there (report.html charts a study's points; a run has one).
fn run_report(args: &ReportArgs) -> Result<()> {
    if args.separate {
        return Err(UsageError::conflict(
            "--separate",
            "these are results of `kvlab run`, not of studies",
            "drop --separate",
        )
        .into());
    }
    let r: RunResult = match args.results.as_slice() {
        [one] => match merge::read(one)? {
            r if r.shard.is_none() => r,
            _ => merge::merge_files(&args.results)?,
        },
        many => merge::merge_files(many)?,
    };
    let Some(out) = &args.out else {
        return merged(&r, None);
    };
    std::fs::create_dir_all(out)?;
    let md = out.join("summary.md");
    std::fs::write(&md, format!("```\n{}```\n", summary(&r)))?;
    let json = out.join("result.json");
    merged(&r, Some(&json))?;
    println!(
        "kvlab: wrote {} (a run's results get a summary; report.html is written for study results, kvlab study)",
        md.display()
    );
    Ok(())
}

/// The directory a results file lies in.
fn parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// A results file's name without its extension.
fn stem(p: &Path) -> String {
    p.file_stem()
        .map_or("results".into(), |s| s.to_string_lossy().into_owned())
}

/// Writes report.html and report.md for `results` into `out`; returns the HTML path.
pub fn write_report(results: &[StudyResult], out: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    let r = report::build(results);
    let html = out.join("report.html");
    std::fs::write(&html, report::html::render(&r))?;
    std::fs::write(out.join("report.md"), report::markdown::render(&r))?;
    Ok(html)
}
