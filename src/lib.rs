//! kvlab: one tool that drives caches and databases with the same key-value
//! workload and measures them the same way.
//!
//! # Layout
//! - [`cli`]: the command line (clap) → a [`plan::RunPlan`].
//! - [`plan`]: what one run is: target, workload, load shape (serde, reusable by study files).
//! - [`error`]: mistakes a user can fix, each naming the flag and the fix.
//! - [`workload`]: key choice, GET/SET mix, deterministic values and their verification.
//! - [`driver`]: one sans-IO codec per protocol ([`driver::resp`], [`driver::memcache`]) and connection set-up.
//! - [`engine`]: runs one point on T threads; [`engine::worker`] is the only hot loop; [`engine::pacer`] the open-loop schedule.
//! - [`stats`]: outcome counters and HDR histograms.
//! - [`server`]: managed servers (start, measure, stop) and their counters.
//! - [`dataset`]: loads the keys (caches: pipelined SETs; databases: kvlab's table and a bulk load).
//! - [`runner`]: one run from plan to [`results::RunResult`].
//! - [`results`]: the result as data (JSON).
//! - [`output`]: progress display and the human summary.

pub mod cli;
pub mod dataset;
pub mod driver;
pub mod engine;
pub mod error;
pub mod output;
pub mod plan;
pub mod results;
pub mod runner;
pub mod server;
pub mod stats;
pub mod workload;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

/// Runs a parsed command line. `shutdown` is set by Ctrl-C (or a test) to stop
/// early; partial results are still reported.
pub fn run(cli: cli::Cli, shutdown: Arc<AtomicBool>) -> Result<()> {
    match cli.command {
        cli::Command::Run(args) => {
            let plan = args.to_plan()?;
            if let Some(path) = &args.json {
                check_writable(path)?;
            }
            let opts = runner::RunOptions {
                progress: true,
                notes: true,
            };
            let result = runner::run(&plan, opts, &shutdown)?;
            print!("{}", output::summary(&result));
            if let Some(path) = &args.json {
                result.write_json(path)?;
                eprintln!("kvlab: wrote {}", path.display());
            }
            if !result.valid {
                bail!(
                    "the run is not a valid measurement: {}",
                    result
                        .problems
                        .first()
                        .map_or("no requests finished", String::as_str)
                );
            }
            Ok(())
        }
        cli::Command::Serve(args) => serve(&args.to_target()?, &shutdown),
    }
}

/// Fails before any work when the result file could not be written.
fn check_writable(path: &std::path::Path) -> Result<()> {
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

/// Runs a managed server until `shutdown`, printing its URL on stdout.
fn serve(target: &plan::TargetSpec, shutdown: &AtomicBool) -> Result<()> {
    use std::io::Write;
    let sizing = server::config::Sizing {
        data_bytes: 256 << 20,
        connections: 200,
    };
    let mut s = server::ManagedServer::start(target.kind, &target.server_opts, sizing)?;
    // The URL in full: a managed server's credentials are kvlab's own throwaway ones.
    let e = s.endpoint();
    let auth = match (&e.user, &e.password) {
        (Some(u), Some(p)) => format!("{u}:{}@", p.expose()),
        (Some(u), None) => format!("{u}@"),
        (None, Some(p)) => format!(":{}@", p.expose()),
        (None, None) => String::new(),
    };
    let db = e
        .database
        .as_ref()
        .map(|d| format!("/{d}"))
        .unwrap_or_default();
    println!("{}://{auth}{}:{}{db}", target.kind.scheme(), e.host, e.port);
    std::io::stdout().flush()?;
    eprintln!(
        "kvlab: {} {} (pid {}) in {}; Ctrl-C stops it",
        s.info.product,
        s.info.version,
        s.pid(),
        s.dir().display()
    );
    while !shutdown.load(std::sync::atomic::Ordering::SeqCst) {
        if !s.running() {
            bail!("the managed {} exited on its own", target.kind.name());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    s.stop();
    eprintln!("kvlab: stopped {}", target.kind.name());
    Ok(())
}
