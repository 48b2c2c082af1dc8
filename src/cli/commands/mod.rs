//! One file per subcommand, each an `exec` over its parsed flags; this file
//! dispatches a command line to them and holds what several share.
//!
//! # Layout
//! - [`run`], [`serve`], [`study`], [`report`], [`capacity`], [`demo`], [`merge`].

pub mod capacity;
pub mod demo;
pub mod merge;
pub mod report;
pub mod run;
pub mod serve;
pub mod study;

use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use crate::cli::{Cli, Command};

/// Runs the command `cli` names until it ends or `shutdown` is set.
pub fn dispatch(cli: Cli, shutdown: &AtomicBool) -> Result<()> {
    match cli.command {
        Command::Run(args) => run::exec(&args, shutdown),
        Command::Serve(args) => serve::exec(&args.to_target()?, shutdown),
        Command::Study(args) => study::exec(&args, shutdown),
        Command::Merge(args) => merge::exec(&args),
        Command::Report(args) => report::exec(&args),
        Command::Capacity(args) => capacity::exec(&args, shutdown),
        Command::Demo(args) => demo::exec(&args, shutdown),
    }
}

/// Fails before any work when the result file could not be written.
pub fn check_writable(path: &std::path::Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "--json: directory '{}' does not exist; create it or choose another path",
            dir.display()
        );
    }
    if path.is_dir() {
        bail!(
            "--json: '{}' is a directory; give a file name such as result.json",
            path.display()
        );
    }
    Ok(())
}
