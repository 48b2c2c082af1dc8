//! `kvlab run`: one measured run of one workload against one target; prints
//! the summary, writes the JSON result, and fails when the run is not a valid
//! measurement.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{check_valid, check_writable, show_result};
use crate::cli::RunArgs;
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
    let keys = plan.workload.keys;
    let (mut result, cleaned) =
        runner::foreign::guarded(&plan, keys, opts, || runner::run(&plan, opts, shutdown))?;
    result.cleanup = cleaned;
    show_result(&result, args.json.as_deref())?;
    crate::cli::metrics::hold(shutdown);
    check_valid(&result, "the run")
}
