//! `kvlab run`: one measured run of one workload against one target; prints
//! the summary, writes the JSON result, and fails when the run is not a valid
//! measurement.

use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use super::{check_writable, say, write_json};
use crate::cli::RunArgs;
use crate::report::summary::summary;
use crate::runner;

/// Runs `kvlab run`.
pub fn exec(args: &RunArgs, shutdown: &AtomicBool) -> Result<()> {
    let plan = args.to_plan()?;
    if let Some(path) = &args.json {
        check_writable(path)?;
    }
    let opts = runner::RunOptions {
        progress: true,
        notes: true,
    };
    args.metrics.start(None, "kvlab", plan.load.shard)?;
    let result = runner::run(&plan, opts, shutdown)?;
    say(args.json.as_deref(), &summary(&result));
    if let Some(path) = &args.json {
        write_json(path, &result)?;
    }
    crate::cli::metrics::hold(shutdown);
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
