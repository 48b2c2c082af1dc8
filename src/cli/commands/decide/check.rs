//! `kvlab decide --check DIR`: the decision saved in DIR checked by one run
//! of what it sized; each figure predicted against measured on stdout,
//! `check.json` and the page's check section in DIR; a check with a figure
//! past its tolerance ends in an error (a non-zero exit).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::super::{Say, check_valid, write_json};
use crate::cli::DecideArgs;
use crate::error::{GateFailed, UsageError};
use crate::modes::decide::check;
use crate::report::decide::check as shown;
use crate::results::check::Verdict;
use crate::runner::{self, RunOptions};

/// Flags `--check` takes beside itself: the rest are the saved decision's.
const TAKES: [&str; 2] = ["check", "json"];

/// Runs `kvlab decide --check DIR`.
pub fn exec(args: &DecideArgs, dir: &Path, shutdown: &AtomicBool) -> Result<()> {
    let json = args.run.json.as_deref();
    let say = Say::beside(json);
    if let Some(id) = args.given.iter().find(|id| !TAKES.contains(&id.as_str())) {
        return Err(UsageError::conflict(
            "--check",
            format!(
                "it runs what the saved decision sized, with its own flags; --{} changes nothing here",
                id.replace('_', "-")
            ),
            "drop it (or decide again with it)",
        )
        .into());
    }
    let saved = check::load(dir)?;
    let (checked, plan) = check::planned(&saved, dir)?;
    say.text(&shown::checking(&checked));
    let opts = RunOptions {
        progress: true,
        notes: true,
    };
    let mut host = crate::modes::decide::host::HostLog::start();
    let run = runner::run(&plan, opts, shutdown)?;
    let busy = host.mark("the check's run").into_iter().collect();
    check_valid(&run, "the check's run")?;
    let c = check::conclude(&saved, checked, run, busy);
    say.text(&shown::text(&c));
    write_json(&dir.join("check.json"), &c)?;
    let page = crate::report::decide::html(&saved.decision, Some(&c));
    std::fs::write(dir.join("report.html"), page)?;
    say.text(&format!(
        "kvlab: wrote {}\n",
        dir.join("report.html").display()
    ));
    if let Some(p) = json {
        write_json(p, &c)?;
    }
    match c.verdict {
        Verdict::Pass => Ok(()),
        Verdict::Fail => Err(GateFailed(format!(
            "--check: {}; each is said above and in {}",
            shown::verdict(&c).trim_start_matches("CHECK: "),
            dir.join("check.json").display()
        ))
        .into()),
    }
}
