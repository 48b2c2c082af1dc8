//! `kvlab decide`: the answer for a stated load — keep the cache or not, what
//! each way costs, and what a cache loss does — on stdout, as JSON and as an
//! HTML page; `--from` recomputes a saved one, `--check` (`decide/check.rs`)
//! checks one by a run of what it sized.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{Say, check_writable, write_json};
use crate::cli::DecideArgs;
use crate::error::UsageError;
use crate::modes::decide;
use crate::runner::RunOptions;

/// Runs `kvlab decide`: measures and decides (each step saved under
/// `--out`, or reused from `--resume DIR`), or with `--from DIR` recomputes
/// a saved decision without running anything.
pub fn exec(args: &DecideArgs, shutdown: &AtomicBool) -> Result<()> {
    args.check_combination()?;
    let json = args.run.json.as_deref();
    let say = Say::beside(json);
    if let Some(p) = json {
        check_writable(p)?;
    }
    if let Some(dir) = &args.from {
        return from(args, dir);
    }
    if let Some(dir) = &args.check {
        return check::exec(args, dir, shutdown);
    }
    let watched;
    let args = match args.observe {
        true => {
            watched = observed::stated(args, shutdown)?;
            &watched
        }
        false => args,
    };
    let ask = ask::ask_of(args, shutdown)?;
    if let Some(dir) = &args.resume {
        decide::saved::resumable(dir)?;
    }
    let out = args
        .resume
        .clone()
        .or_else(|| args.out.clone())
        .unwrap_or_else(|| "results/decide".into());
    make_dir(&out)?;
    let (ask, copy) = decide::on_copy(ask, args.observed_cache_limit, &mut |l| say.text(l))?;
    let opts = RunOptions {
        progress: true,
        notes: true,
    };
    let resume = args.resume.is_some();
    let d = decide::decide(&ask, (&copy, &out, resume), opts, shutdown, &mut |l| {
        say.text(l)
    })?;
    write_out(&d, &out, json)
}

/// `--from DIR`: the saved decision recomputed with what the flags change.
fn from(args: &DecideArgs, dir: &std::path::Path) -> Result<()> {
    let json = args.run.json.as_deref();
    let say = Say::beside(json);
    let (mut ask, mut measured) = decide::saved::load(dir)?;
    let change = from_saved::change(args, &ask)?;
    decide::again::apply(&mut ask, &mut measured, change)?;
    if args.keep_saving.is_some() {
        ask.assumed.policy = ask::assumed(args)?.policy;
    }
    let out = args.out.clone().unwrap_or_else(|| dir.to_path_buf());
    make_dir(&out)?;
    let d = decide::decision::decision(&ask, &measured);
    say.text(&format!(
        "kvlab decide: recomputed from the measurements saved in {} (nothing run): --from may change the load and the policy (prices, machines, --keep-saving), not how kvlab measured (decision.json's assumptions.method)\n",
        dir.display()
    ));
    write_out(&d, &out, json)
}

/// `dir` made (with its parents), or a usage error naming `--out`.
fn make_dir(dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        UsageError::bad(
            "--out",
            format!("cannot create {}: {e}", dir.display()),
            "give a directory you can write",
        )
        .into()
    })
}

/// The decision as text on stdout, decision.json and report.html in `out`
/// (and `--json`); a check of the decision there before is removed.
fn write_out(
    d: &crate::results::decide::Decision,
    out: &std::path::Path,
    json: Option<&std::path::Path>,
) -> Result<()> {
    let say = Say::beside(json);
    say.text(&format!("\n{}", crate::report::decide::text(d)));
    write_json(&out.join("decision.json"), d)?;
    let stale = out.join("check.json");
    if stale.exists() {
        std::fs::remove_file(&stale)?;
        say.text(&format!(
            "kvlab: removed {}: it checked the decision written there before\n",
            stale.display()
        ));
    }
    std::fs::write(
        out.join("report.html"),
        crate::report::decide::html(d, None),
    )?;
    say.text(&format!(
        "kvlab: wrote {}\n",
        out.join("report.html").display()
    ));
    if let Some(p) = json {
        write_json(p, d)?;
    }
    Ok(())
}

/// A study file's `[decide]` (see `kvlab study`): `kvlab decide` with its
/// keys as the flags' values, into `out` unless the table names one; with `dry_run`,
/// only the command it stands for.
pub fn exec_study(
    s: &crate::plan::study::StudyFile,
    out: &std::path::Path,
    dry_run: bool,
    shutdown: &AtomicBool,
) -> Result<()> {
    let args = study::args_of(s, out)?;
    args.check_combination()
        .map_err(|e| study::in_file(s, e.into()))?;
    println!(
        "kvlab study {}: a decision ([decide]), as `kvlab decide {}`",
        s.name,
        study::shown(s, &args)
    );
    if dry_run {
        println!(
            "runs: the database alone and the cache alone (capacity searches within the goal), the cache's miss-ratio curve, cache-aside at the smallest cache that serves the load, a cache loss, and beside them the database with a read replica and near caches{}",
            if args.quick {
                " (--quick: shorter runs)"
            } else {
                ""
            }
        );
        return Ok(());
    }
    exec(&args, shutdown).map_err(|e| study::in_file(s, e))
}

mod ask;
mod check;
mod from_saved;
mod observed;
mod study;
