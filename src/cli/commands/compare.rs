//! `kvlab compare A B`: B's results against A's (two runs, or two studies'
//! points), each figure better, worse, below threshold or within noise (the
//! same verdicts mirrored when A and B swap); text on stdout, Markdown and HTML
//! with `--out`, and a gate for CI (`--fail-on-worse`).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;

use crate::error::{CannotJudge, GateFailed, UsageError};
use crate::report::compare::{self, Results, Rules, render};
use crate::results::merge;
use crate::results::study::StudyResult;

/// Flags of `kvlab compare`.
#[derive(Debug, Args)]
#[command(
    after_help = "Verdicts: better or worse when significant (p < 0.05) and at least the threshold either way (at 50%: B/A >= 1.5 or <= 1/1.5, so swapping A and B swaps better and worse); below threshold when significant but smaller; within noise when not significant.

Exit codes: 0 compared (and, with --fail-on-worse, nothing worse); 1 an error; 2 a command-line error; 3 --fail-on-worse and a figure is worse (below threshold and within noise never fail); 4 --fail-on-worse and nothing worse, but repetitions vary past --noise (unstable): the gate cannot judge.

Examples:
  kvlab compare before.json after.json
  kvlab compare results/s0-old/s0-1763900000.json results/s0/s0-1764000000.json --out cmp --fail-on-worse"
)]
pub struct CompareArgs {
    /// The baseline (A): a `kvlab run --json` file or a study's results.json.
    pub a: PathBuf,
    /// The candidate (B), of the same kind as A.
    pub b: PathBuf,
    /// The smallest change, percent either way (B/A ≥ 1 + PCT/100 or ≤ its
    /// inverse), called better or worse (when significant) where both sides
    /// have repetitions.
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub threshold: f64,
    /// Repetitions varying more than this (coefficient of variation, percent)
    /// make a point unstable.
    #[arg(long, default_value_t = 10.0, value_name = "PCT")]
    pub noise: f64,
    /// The smallest change, percent either way, called better or worse where a
    /// side has one run (its per-second figures say nothing of the next run's
    /// drift).
    #[arg(long, default_value_t = 50.0, value_name = "PCT")]
    pub one_run_threshold: f64,
    /// Directory for compare.md and compare.html.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Exit with code 3 when B is worse in any figure (a CI gate), or 4 when
    /// none is but either side's repetitions vary past `--noise` (it cannot
    /// judge).
    #[arg(long)]
    pub fail_on_worse: bool,
}

/// Runs `kvlab compare`.
pub fn exec(args: &CompareArgs) -> Result<()> {
    for (flag, v) in [
        ("--threshold", args.threshold),
        ("--noise", args.noise),
        ("--one-run-threshold", args.one_run_threshold),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(
                UsageError::bad(flag, format!("{v} is not a percentage"), "give e.g. 5").into(),
            );
        }
    }
    let (a, b) = (read(&args.a)?, read(&args.b)?);
    if matches!(
        (&a, &b),
        (Results::Run(_), Results::Study(_)) | (Results::Study(_), Results::Run(_))
    ) {
        bail!(
            "{} and {}: one is a run's result and the other a study's; compare two runs or two studies",
            args.a.display(),
            args.b.display()
        );
    }
    let rules = Rules {
        threshold_pct: args.threshold,
        noise_pct: args.noise,
        one_run_pct: args.one_run_threshold,
    };
    let name = |p: &Path| p.display().to_string();
    let c = compare::compare(&a, &name(&args.a), &b, &name(&args.b), rules);
    if c.points.is_empty() {
        bail!(
            "{} and {} share no point (same target and parameters) to compare",
            args.a.display(),
            args.b.display()
        );
    }
    print!("{}", render::text(&c));
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| {
            UsageError::bad(
                "--out",
                format!("cannot create {}: {e}", dir.display()),
                "give a directory kvlab may create",
            )
        })?;
        for (file, bytes) in [
            ("compare.md", render::markdown(&c)),
            ("compare.html", render::html(&c)),
        ] {
            let path = dir.join(file);
            std::fs::write(&path, bytes)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            eprintln!("kvlab: wrote {}", path.display());
        }
    }
    match args.fail_on_worse {
        true => gate(&c, args),
        false => Ok(()),
    }
}

/// `--fail-on-worse`: an error naming every figure B is worse in, else one
/// naming every figure too unstable to judge, else nothing.
fn gate(c: &compare::Comparison, args: &CompareArgs) -> Result<()> {
    let (a, b) = (args.a.display(), args.b.display());
    let worse = c.worse();
    if !worse.is_empty() {
        let names: Vec<String> = worse
            .iter()
            .map(|(p, f)| format!("{p}: {} {:+.1}%", f.name, f.change_pct))
            .collect();
        let line = format!(
            "--fail-on-worse: {b} is worse than {a} in {}",
            names.join("; ")
        );
        return Err(GateFailed(line).into());
    }
    let busier = c.host_busier();
    if !busier.is_empty() {
        let names: Vec<String> = busier
            .iter()
            .map(|(p, why)| format!("{p}: {why}"))
            .collect();
        let line = format!(
            "--fail-on-worse: cannot judge {b} against {a}: {}; run both on a quiet host",
            names.join("; ")
        );
        return Err(CannotJudge(line).into());
    }
    let unstable = c.unstable();
    if !unstable.is_empty() {
        let names: Vec<String> = unstable.iter().map(|(p, u)| format!("{p}: {u}")).collect();
        let line = format!(
            "--fail-on-worse: cannot judge {b} against {a}: unstable, {}; rerun with more repetitions or on a quieter machine, or raise --noise",
            names.join("; ")
        );
        return Err(CannotJudge(line).into());
    }
    Ok(())
}

/// A run's result or a study's results.
fn read(path: &Path) -> Result<Results> {
    if !path.is_file() {
        return Err(UsageError::bad(
            "compare",
            format!("'{}' is not a file", path.display()),
            "give two files written by kvlab run --json or kvlab study",
        )
        .into());
    }
    Ok(match merge::file_is_run_result(path) {
        true => Results::Run(Box::new(merge::read(path)?)),
        false => Results::Study(Box::new(StudyResult::read(path)?)),
    })
}
