//! `kvlab report`: rebuilds the report of study results offline (or, given the
//! results of a sharded run's clients, their merged summary).

use anyhow::Result;

use super::merge::merged;
use crate::cli::ReportArgs;
use crate::results::study::StudyResult;
use crate::{report, results::merge};

/// Runs `kvlab report`.
pub fn exec(args: &ReportArgs) -> Result<()> {
    if merge::file_is_run_result(&args.results[0]) {
        return merged(&merge::merge_files(&args.results)?, None);
    }
    let results: Vec<StudyResult> = args
        .results
        .iter()
        .map(|p| StudyResult::read(p))
        .collect::<Result<_>>()?;
    let out = args.out.clone().unwrap_or_else(|| {
        args.results[0]
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_default()
    });
    let path = write_report(&results, &out)?;
    println!("kvlab: wrote {}", path.display());
    Ok(())
}

/// Writes report.html and report.md for `results` into `out`; returns the HTML path.
pub fn write_report(results: &[StudyResult], out: &std::path::Path) -> Result<std::path::PathBuf> {
    std::fs::create_dir_all(out)?;
    let r = report::build(results);
    let html = out.join("report.html");
    std::fs::write(&html, report::html::render(&r))?;
    std::fs::write(out.join("report.md"), report::markdown::render(&r))?;
    Ok(html)
}
