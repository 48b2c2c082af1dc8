//! What `kvlab decide` is asked: the workload and the servers, the load as
//! stated and what the decision assumes. Built once ([`super::on_copy`],
//! `--from`'s stated load, `--check`'s managed servers: each a new value);
//! nothing writes into one after. What a decision learns is passed beside
//! it ([`super::OnCopy`]).

use serde::{Deserialize, Serialize};

use super::trace;
use crate::plan::{CacheAside, RunPlan};
use crate::results::decide::{Assumptions, StatedLoad};

/// What `kvlab decide` is asked (immutable once built).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Asked {
    /// The database and the workload, over the measured copy's keys (the
    /// same as [`super::OnCopy::copy`]'s).
    pub plan: RunPlan,
    /// The cache weighed in front of it.
    pub cache: CacheAside,
    /// The load as stated.
    pub load: StatedLoad,
    /// Shorter runs and fewer search steps (the demo).
    pub quick: bool,
    /// Seconds each measured run lasts (`--duration`), when given.
    pub run_secs: Option<f64>,
    /// The trace the load was taken from (`--trace`) and its curve.
    pub trace: Option<trace::Traced>,
    /// What the decision assumes: kvlab's policy (with what the team
    /// changed) and its method. One saved before it was written read
    /// [`crate::results::decide::KVLAB`]'s.
    #[serde(default)]
    pub assumed: Assumptions,
}

impl Asked {
    /// Seconds each measured run lasts.
    pub(in crate::modes::decide) fn run_s(&self) -> f64 {
        self.run_secs
            .unwrap_or(self.assumed.method.run_s(self.quick))
    }

    /// How far a capacity search goes: the rates it tries after its
    /// closed-loop run, down to the stated rate.
    pub(in crate::modes::decide) fn reach(&self) -> crate::modes::capacity::Reach {
        crate::modes::capacity::Reach {
            steps: self.assumed.method.search_steps(self.quick),
            floor: Some(self.load.rps),
        }
    }
}
