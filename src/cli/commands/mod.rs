//! One file per subcommand, each an `exec` over its parsed flags; this file
//! dispatches a command line to them and holds what several share.
//!
//! # Layout
//! - [`run`], [`replay`], [`compare`], [`serve`], [`study`], [`report`], [`capacity`], [`demo`], [`merge`], [`observe`], [`prices`].

pub mod capacity;
pub mod compare;
pub mod decide;
pub mod demo;
pub mod merge;
pub mod observe;
pub mod prices;
pub mod replay;
pub mod report;
pub mod run;
pub mod serve;
pub mod study;

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Result, bail};

use crate::cli::{Cli, Command};
use crate::error::{Stopped, UsageError};
use crate::report::summary::summary;
use crate::results::RunResult;

/// Runs the command `cli` names until it ends or `shutdown` is set; one that
/// `shutdown` (Ctrl-C) stopped ends in [`Stopped`] (exit code 130), whatever
/// it kept, except `serve`, whose end Ctrl-C is.
pub fn dispatch(cli: Cli, shutdown: &AtomicBool) -> Result<()> {
    let until_ctrl_c = matches!(cli.command, Command::Serve(_));
    let done = match cli.command {
        Command::Run(args) => run::exec(&args, shutdown),
        Command::Replay(args) => replay::exec(&args, shutdown),
        Command::Serve(args) => serve::exec(&args.to_target()?, shutdown),
        Command::Study(args) => study::exec(&args, shutdown),
        Command::Merge(args) => merge::exec(&args),
        Command::Compare(args) => compare::exec(&args),
        Command::Report(args) => report::exec(&args),
        Command::Capacity(args) => capacity::exec(&args, shutdown),
        Command::Decide(args) => decide::run(&args, shutdown),
        Command::Observe(args) => observe::exec(&args, shutdown),
        Command::Prices(args) => prices::exec(&args),
        Command::Demo(args) => demo::exec(&args, shutdown),
    };
    match shutdown.load(Ordering::SeqCst) && !until_ctrl_c {
        true => Err(Stopped::after(done)),
        false => done,
    }
}

/// `--json -`: the JSON goes to standard output, the human text to standard error.
pub fn json_to_stdout(json: Option<&std::path::Path>) -> bool {
    json.is_some_and(|p| p.as_os_str() == "-")
}

/// Where a command's human text goes: standard output, or standard error
/// when its JSON goes to standard output (`--json -`).
#[derive(Clone, Copy)]
pub struct Say {
    to_stderr: bool,
}

impl Say {
    /// The human text beside the JSON of `--json` (`None`: not asked).
    pub fn beside(json: Option<&std::path::Path>) -> Say {
        Say {
            to_stderr: json_to_stdout(json),
        }
    }

    /// Prints `text` where it goes.
    pub fn text(self, text: &str) {
        match self.to_stderr {
            true => eprint!("{text}"),
            false => print!("{text}"),
        }
    }
}

/// Writes `v` as JSON to `path` (atomically), or to standard output for `-`.
pub fn write_json<T: serde::Serialize>(path: &std::path::Path, v: &T) -> Result<()> {
    use std::io::Write as _;
    if json_to_stdout(Some(path)) {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, v)?;
        writeln!(out)?;
        return Ok(());
    }
    crate::results::write_json_atomic(v, path)?;
    eprintln!("kvlab: wrote {}", path.display());
    Ok(())
}

/// Fails before any work when the result file could not be written (`-`:
/// standard output, always).
pub fn check_writable(path: &std::path::Path) -> Result<()> {
    if json_to_stdout(Some(path)) {
        return Ok(());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(UsageError::bad(
            "--json",
            format!("directory '{}' does not exist", dir.display()),
            "create it or choose another path",
        )
        .into());
    }
    if path.is_dir() {
        return Err(UsageError::bad(
            "--json",
            format!("'{}' is a directory", path.display()),
            "give a file name such as result.json",
        )
        .into());
    }
    Ok(())
}

/// Prints a run's summary, and writes its JSON with `json`.
pub fn show_result(result: &RunResult, json: Option<&std::path::Path>) -> Result<()> {
    Say::beside(json).text(&summary(result));
    if let Some(path) = json {
        write_json(path, result)?;
    }
    Ok(())
}

/// Fails when `result` is not a valid measurement; `what` names it (`the run`).
pub fn check_valid(result: &RunResult, what: &str) -> Result<()> {
    if !result.valid {
        bail!(
            "{what} is not a valid measurement: {}",
            result
                .problems
                .first()
                .map_or("no requests finished", String::as_str)
        );
    }
    Ok(())
}
