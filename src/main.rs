//! The `kvlab` binary: parse the command line, run it, report errors in one line.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn main() -> ExitCode {
    kvlab::system::progress::quiet_broken_pipe();
    let cli = match kvlab::cli::Cli::parse_args() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            eprintln!("{} (see kvlab --help)", kvlab::cli::one_line(&e));
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print(); // --help, --version
            return ExitCode::SUCCESS;
        }
    };
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&shutdown);
    // Ctrl-C stops the run, keeps what was measured, and stops managed servers.
    let _ = ctrlc::set_handler(move || {
        kvlab::transport::stream::STOP_ASKED.store(true, Ordering::SeqCst);
        flag.store(true, Ordering::SeqCst);
    });
    match kvlab::run(cli, shutdown) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::from(kvlab::error::exit_code(&e))
        }
    }
}
