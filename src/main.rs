//! The `kvlab` binary: parse the command line, run it, report errors in one line.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

fn main() -> ExitCode {
    let cli = kvlab::cli::Cli::parse();
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&shutdown);
    // First Ctrl-C: stop the run, keep what was measured, stop managed servers.
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    match kvlab::run(cli, shutdown) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
