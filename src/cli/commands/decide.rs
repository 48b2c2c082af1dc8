//! `kvlab decide`: the answer for a stated load — keep the cache or not, what
//! each way costs, and what a cache loss does — on stdout, as JSON and as an
//! HTML page; `--from` recomputes a saved one, `--check` (`decide/check.rs`)
//! checks one by a run of what it sized. Three steps, run in turn by
//! [`run`] (the command line's and a study's `[decide]`): [`completed`] (the flags
//! checked, and completed by `--observe`), [`exec`] (the decision) and
//! [`write`].

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{Say, check_writable, write_json};
use crate::cli::DecideArgs;
use crate::error::UsageError;
use crate::modes::decide;
use crate::runner::RunOptions;

/// `kvlab decide` (the command line's or a study's `[decide]`): its three
/// steps in turn.
pub fn run(args: &DecideArgs, shutdown: &AtomicBool) -> Result<()> {
    completed(args, shutdown)
        .and_then(|args| exec(&args, shutdown))
        .and_then(write)
}

/// `args` complete, before anything is measured: what goes together
/// checked, and with `--observe` the load the servers watched serve taken
/// for the flags not given (`decide/observed.rs`).
pub fn completed(args: &DecideArgs, shutdown: &AtomicBool) -> Result<DecideArgs> {
    args.check_combination()?;
    match args.observe {
        true => observed::stated(args, shutdown),
        false => Ok(args.clone()),
    }
}

/// Runs `kvlab decide` on complete `args` ([`completed`]): measures and
/// decides (each step saved under `--out`, or reused from `--resume DIR`),
/// or with `--from DIR` recomputes a saved decision without running
/// anything; the decision to write. `--check DIR` writes its own check.
pub fn exec(args: &DecideArgs, shutdown: &AtomicBool) -> Result<Option<Decided>> {
    let json = args.run.json.clone();
    let say = Say::beside(json.as_deref());
    if let Some(p) = &json {
        check_writable(p)?;
    }
    if let Some(dir) = &args.from {
        return from(args, dir).map(Some);
    }
    if let Some(dir) = &args.check {
        return check::exec(args, dir, shutdown).map(|()| None);
    }
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
    let (ask, on) = decide::on_copy(ask, args.observed_cache_limit, &mut |l| say.text(l))?;
    let opts = RunOptions {
        progress: true,
        notes: true,
    };
    let resume = args.resume.is_some();
    let decision = decide::decide(&ask, (&on, &out, resume), opts, shutdown, &mut |l| {
        say.text(l)
    })?;
    Ok(Some(Decided {
        decision,
        out,
        json,
    }))
}

/// A decision to write: as text on stdout, decision.json and report.html
/// in `out`, and `json` (`--json`).
pub struct Decided {
    pub decision: crate::results::decide::Decision,
    pub out: std::path::PathBuf,
    pub json: Option<std::path::PathBuf>,
}

/// `--from DIR`: the saved decision recomputed with what the flags change.
fn from(args: &DecideArgs, dir: &std::path::Path) -> Result<Decided> {
    let json = args.run.json.clone();
    let (saved, mut measured) = decide::saved::load(dir)?;
    let change = from_saved::change(args, &saved)?;
    let again = decide::again::apply(&saved, &mut measured, change)?;
    // The policy as saved, with what the flags state of it.
    let stated = ask::assumed(args)?.policy;
    let was = again.assumed.policy;
    let policy = crate::results::decide::assumptions::Policy {
        keep_saving: args
            .keep_saving
            .map_or(was.keep_saving, |_| stated.keep_saving),
        keep_saving_month: args
            .keep_saving_month
            .map_or(was.keep_saving_month, |_| stated.keep_saving_month),
        survive_cache_loss: was.survive_cache_loss || args.survive_cache_loss,
        ..was
    };
    let ask = decide::Asked {
        assumed: crate::results::decide::Assumptions {
            policy,
            ..again.assumed
        },
        ..again
    };
    let out = args.out.clone().unwrap_or_else(|| dir.to_path_buf());
    make_dir(&out)?;
    Say::beside(json.as_deref()).text(&format!(
        "kvlab decide: recomputed from the measurements saved in {} (nothing run): --from may change the load and the policy (the deployment, prices, machines, --keep-saving), not how kvlab measured (decision.json's assumptions.method)\n",
        dir.display()
    ));
    Ok(Decided {
        decision: decide::decision::decision(&ask, &measured),
        out,
        json,
    })
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

/// Writes what `kvlab decide` came to ([`exec`]): the decision as text on
/// stdout, decision.json and report.html in its directory (and `--json`); a
/// check of the decision there before is removed.
pub fn write(done: Option<Decided>) -> Result<()> {
    let Some(Decided {
        decision: d,
        out,
        json,
    }) = done
    else {
        return Ok(());
    };
    let say = Say::beside(json.as_deref());
    say.text(&format!("\n{}", crate::report::decide::text(&d)));
    write_json(&out.join("decision.json"), &d)?;
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
        crate::report::decide::html(&d, None),
    )?;
    say.text(&format!(
        "kvlab: wrote {}\n",
        out.join("report.html").display()
    ));
    if let Some(p) = &json {
        write_json(p, &d)?;
    }
    // Written, and said: no answer from what did not hold (exit 5).
    if d.decision.answer == crate::results::decide::Verdict::NotMeasured {
        return Err(
            crate::error::NotMeasured(format!("not-measured: {}", d.decision.because)).into(),
        );
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
        let quick = if args.quick {
            " (--quick: shorter runs)"
        } else {
            ""
        };
        match (&args.from, &args.check) {
            (Some(dir), _) => println!(
                "runs nothing: recomputes the decision saved in {}",
                dir.display()
            ),
            (_, Some(dir)) => println!(
                "runs: cache-aside at the size the decision saved in {} chose, to check it",
                dir.display()
            ),
            _ => println!(
                "runs: the database alone and the cache alone (capacity searches within the goal), the cache's miss-ratio curve, cache-aside at the smallest cache that serves the load, a cache loss, and beside them the database with a read replica and near caches{quick}"
            ),
        }
        return Ok(());
    }
    run(&args, shutdown).map_err(|e| study::in_file(s, e))
}

mod ask;
mod check;
mod deployed;
mod from_saved;
mod observed;
mod study;
