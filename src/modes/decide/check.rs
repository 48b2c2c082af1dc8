//! `kvlab decide --check DIR`: the decision saved in DIR checked by one run
//! of the architecture it sized: cache-aside at the cache size it chose
//! (per key, times the keys checked), the cache settled to its steady state,
//! at the stated keys where their data fits this machine (else the most
//! that do), at the rate its copy was measured at, on servers kvlab starts
//! itself (the decision's products). What the decision predicts there and
//! the comparison are [`super::compare`]'s pure functions.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};

use super::ask::Asked;
use super::carry;
use super::compare::{self, Figures, TOLERANCES};
use super::copy::OnCopy;
use super::cpu::CpuCurves;
use super::measure::{Measured, Runs};
use super::saved;
use crate::error::UsageError;
use crate::plan::{CacheAside, CacheStart, RunPlan, TargetSpec};
use crate::results::RunResult;
use crate::results::check::{Check, Checked};
use crate::results::decide::{Architecture, Decision};
use crate::runner::RunOptions;

/// A decision saved under a directory: its `decision.json` and the steps
/// it was decided from.
pub struct Saved {
    /// The decision as written.
    pub decision: Decision,
    /// What it was asked.
    pub ask: Asked,
    /// What its steps measured.
    pub measured: Measured,
}

/// The decision saved under `dir`, for `--check`; a directory with none is
/// refused in a line naming `--check` and the fix.
pub fn load(dir: &Path) -> Result<Saved> {
    let path = dir.join("decision.json");
    if !path.is_file() {
        return Err(UsageError::bad(
            "--check",
            format!("{} holds no decision (no decision.json)", dir.display()),
            format!(
                "run kvlab decide with --out {} first, or give the --out of an earlier one",
                dir.display()
            ),
        )
        .into());
    }
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let decision = serde_json::from_str(&text).with_context(|| {
        format!(
            "--check: {}: not a decision kvlab decide wrote (or from another version)",
            path.display()
        )
    })?;
    let (ask, measured) = saved::load_for(dir, "--check")?;
    Ok(Saved {
        decision,
        ask,
        measured,
    })
}

/// The decision's cache-aside row.
fn aside_row(d: &Decision) -> Option<&Architecture> {
    d.architectures
        .iter()
        .find(|a| a.name == crate::results::decide::ArchName::CacheAside)
}

/// A server of the decision, started by kvlab for the check: the same
/// product, never the one given by URL.
fn managed(t: &TargetSpec) -> TargetSpec {
    TargetSpec {
        external: None,
        read_replicas: Vec::new(),
        ..t.clone()
    }
}

/// What a check of `s` (saved under `dir`) runs on this machine (by the
/// memory it has free), and the plan of that run.
pub fn planned(s: &Saved, dir: &Path) -> Result<(Checked, RunPlan)> {
    let available = super::copy::available();
    let Some(a) = &s.measured.aside else {
        bail!(
            "--check: the decision in {} sized no cache-aside (no cache size on its curve left the database's misses within its capacity): nothing to check",
            dir.display()
        );
    };
    let l = &s.decision.load;
    let copy = compare::keys(l.keys, l.value_size, available, &s.ask.assumed.method);
    let keys = copy.keys;
    let base = super::carry::cache_base(&s.measured);
    let mb = compare::cache_mb(a.memory_mb, (s.measured.copy.keys, keys), base);
    // The decision asked on the check's keys, on servers kvlab starts.
    let plan = s.ask.plan.with_keys(keys);
    let ask = Asked {
        plan: RunPlan {
            target: managed(&plan.target),
            ..plan
        },
        cache: CacheAside {
            cache: managed(&s.ask.cache.cache),
            ..s.ask.cache.clone()
        },
        ..s.ask.clone()
    };
    let on = OnCopy {
        copy,
        team_cache_mb: None,
    };
    let idle = AtomicBool::new(false);
    let runs = Runs {
        ask: &ask,
        on: &on,
        db_server: None,
        opts: RunOptions::default(),
        shutdown: &idle,
        drawn: Default::default(),
    };
    let plan = runs.aside(mb, s.measured.rate);
    let checked = Checked {
        architecture: aside_row(&s.decision)
            .map_or_else(|| "cache-aside".into(), |r| r.product.clone()),
        keys,
        keys_why: on.copy.why.clone(),
        cache_memory_bytes: mb.map(|m| m << 20),
        cache_start: plan.cache.as_ref().map_or(CacheStart::Warm, |c| c.start),
        rate_rps: s.measured.rate,
    };
    Ok((checked, plan))
}

/// The check of `s` by `run`, the run of `checked` (`host_busy`: what made
/// the host busy during it, said): each figure the decision predicts at the
/// keys checked beside what the run measured, and the verdict. A pure
/// function of the saved decision and the run.
pub fn conclude(s: &Saved, checked: Checked, run: RunResult, host_busy: Vec<String>) -> Check {
    let ws = s.measured.measured_for.write_share;
    let model = carry::model_of(&s.ask, ws);
    let servers = aside_row(&s.decision).map_or(&[][..], |r| r.servers.as_slice());
    let copy = s.measured.copy.keys;
    let cpu = CpuCurves::searched(&s.measured.db, &s.measured.cache);
    let rate = checked.rate_rps;
    let predicted = s
        .measured
        .aside
        .as_ref()
        .map_or_else(Figures::default, |a| {
            compare::predicted(
                (a, &model),
                (copy, checked.keys),
                (rate, ws),
                (servers, &cpu),
            )
        });
    let measured = compare::measured(&run);
    let goal = s.decision.load.p99_ms;
    let figures = compare::compare(&predicted, &measured, (goal, ws), TOLERANCES);
    Check {
        kvlab_version: env!("CARGO_PKG_VERSION").into(),
        decision: s.decision.decision.answer,
        stated_keys: s.decision.load.keys,
        p99_goal_ms: goal,
        checked,
        tolerances: TOLERANCES,
        verdict: compare::verdict(&figures),
        figures,
        host_busy,
        run,
    }
}
