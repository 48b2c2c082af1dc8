//! Trace replay in a run: the reader started before the load (it streams the
//! trace to the workers while they connect), and the [`ReplayReport`] of what
//! it read and what was sent, with its problems, once the load is over.

use std::sync::Arc;

use anyhow::{Context, Result};

use crate::engine::Spec;
use crate::plan::RunPlan;
use crate::results::RunResult;
use crate::results::replay::{OpLines, ReplayReport};
use crate::results::stats::num;
use crate::workload::trace::feed::{self, Feed, ReadOutcome};
use crate::workload::trace::{Modelled, OPS, SIZE_SAMPLE};

/// Starts streaming the plan's trace to the workers of `spec` (`None`: no trace).
pub fn start(plan: &RunPlan, spec: &Spec) -> Result<Option<Arc<Feed>>> {
    let Some(t) = &plan.workload.trace else {
        return Ok(None);
    };
    let input = feed::open(&t.path).with_context(|| format!("cannot read {}", t.path.display()))?;
    // As many cursors as the engine starts workers.
    let workers = spec.threads.clamp(1, spec.connections.max(1));
    let f =
        Feed::start(input, t.speed, spec.keys, workers).context("cannot start the trace reader")?;
    Ok(Some(Arc::new(f)))
}

/// Stops the reader and adds the replay's report (and its problems) to `result`.
pub fn finish(feed: Option<Arc<Feed>>, plan: &RunPlan, result: &mut RunResult) {
    let Some(f) = feed else {
        return;
    };
    let out = f.finish();
    let r = report(&out, plan);
    if let Some(e) = &r.read_error {
        result.valid = false;
        result.problems.push(format!(
            "the trace could not be read to its end ({e}): the replay stopped there"
        ));
    }
    if r.malformed > 0 {
        result.problems.push(format!(
            "{} of the trace's {} lines did not parse and were not sent (first: {})",
            r.malformed,
            r.lines,
            r.first_malformed.as_deref().unwrap_or("?")
        ));
    }
    result.replay = Some(r);
}

/// The report of a replay that read `out`.
fn report(out: &ReadOutcome, plan: &RunPlan) -> ReplayReport {
    let t = plan
        .workload
        .trace
        .as_ref()
        .expect("a replay's plan has a trace");
    let s = &out.scan;
    let mut ops: Vec<OpLines> = OPS
        .iter()
        .enumerate()
        .filter(|&(i, _)| s.ops[i] > 0)
        .map(|(i, (name, m))| OpLines {
            op: (*name).to_string(),
            lines: s.ops[i],
            sent_as: match m {
                Modelled::Get => "get",
                Modelled::Set => "set",
                Modelled::Not => "not sent",
            }
            .to_string(),
        })
        .collect();
    let other = s.ops[OPS.len()];
    if other > 0 {
        ops.push(OpLines {
            op: "other".into(),
            lines: other,
            sent_as: "not sent".into(),
        });
    }
    let mut not_reproduced = vec![
        format!(
            "key sizes: kvlab's keys are '{}' and a number; trace keys are hashed onto {} keys",
            plan.workload.key_prefix,
            num(plan.workload.keys as f64)
        ),
        match t.sizes_from_trace {
            true => format!(
                "each request's value size: a key's value has one size, drawn from the trace's first {} value sizes, so that every value read back is verified",
                num(SIZE_SAMPLE as f64)
            ),
            false => format!(
                "each request's value size: values are sized by --value-size {}",
                plan.workload.values().label()
            ),
        },
        "the conditions of add, replace and cas (sent as plain SETs)".to_string(),
    ];
    if s.with_ttl > 0 {
        not_reproduced.push(format!(
            "TTLs: {} lines carried one; written keys {}",
            num(s.with_ttl as f64),
            match plan.workload.ttl_s {
                0 => "do not expire".to_string(),
                n => format!("expire after --ttl {n} s"),
            }
        ));
    }
    let unsent: u64 = ops
        .iter()
        .filter(|o| o.sent_as == "not sent")
        .map(|o| o.lines)
        .sum();
    if unsent > 0 {
        not_reproduced.push(format!(
            "{} lines of operations kvlab does not model (delete, incr, decr, append, prepend, others): counted, not sent",
            num(unsent as f64)
        ));
    }
    ReplayReport {
        trace: t.path.display().to_string(),
        compressed: t.compressed,
        speed: t.speed,
        span_s: t.span_s,
        offered_rps: t.rate(),
        lines: s.lines,
        malformed: s.malformed,
        first_malformed: s.first_malformed.map(|(n, why)| format!("line {n}: {why}")),
        ops,
        handed_gets: out.handed[0],
        handed_sets: out.handed[1],
        out_of_order: s.out_of_order,
        keys_touched: out.keys_touched,
        finished: out.finished,
        read_error: out.error.clone(),
        not_reproduced,
    }
}
