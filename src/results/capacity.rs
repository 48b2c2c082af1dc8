//! The result of a capacity search: every tried rate, the highest that met
//! the limits, the bracket the search ended with and the headroom there.

use serde::{Deserialize, Serialize};

use super::RunResult;

impl Capacity {
    /// The run at the capacity found: the last that passed at
    /// `capacity_rps` (the one the search took its headroom from).
    pub fn at_capacity(&self) -> Option<&Step> {
        let rate = self.capacity_rps?;
        self.steps
            .iter()
            .rev()
            .find(|s| s.passed && s.rate == Some(rate))
    }

    /// The p99 at the capacity found, ms.
    pub fn p99_ms_at_capacity(&self) -> Option<f64> {
        Some(self.at_capacity()?.result.latency.latency_us.p99 / 1000.0)
    }

    /// Server cores busy at the capacity found, as measured there (`None`:
    /// no server CPU was read).
    pub fn cores_at_capacity(&self) -> Option<f64> {
        let r = &self.at_capacity()?.result;
        Some(r.server.server_cpu_s? / r.totals.duration_s).filter(|c| *c > 0.0)
    }

    /// Requests per second per server core within the goal: the capacity
    /// over the cores busy there. How kvlab sizes a server for a stated
    /// load (`kvlab decide`, and a study's `[sizing]` where it searched).
    pub fn per_core(&self) -> Option<f64> {
        Some(self.capacity_rps? / self.cores_at_capacity()?)
    }
}

/// One tried rate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Step {
    /// Requested rate (requests per second); `None`: the closed-loop bound.
    pub rate: Option<f64>,
    /// Whether it met the goal.
    pub passed: bool,
    /// Why not, if not.
    pub reason: Option<String>,
    /// It failed on kvlab's side (saturated workers, late sends), not the
    /// server's: the search's figure is then a lower bound for the server.
    #[serde(default)]
    pub client_limited: bool,
    /// The run.
    pub result: RunResult,
}

/// Latency limits a rate must meet besides p99 (each optional).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MoreLimits {
    /// Largest p50, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    /// Largest p99.9, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_ms: Option<f64>,
}

/// The outcome of a search.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Capacity {
    /// The latency limit, ms.
    pub p99_ms: f64,
    /// The other latency limits.
    #[serde(default)]
    pub limits: MoreLimits,
    /// The search's end: the highest rate that passed and the lowest above it
    /// that failed (the capacity lies between them); `None` until both exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bracket: Option<[f64; 2]>,
    /// At the capacity found: each limit, what was measured and how far under
    /// it, one line each (e.g. `p99 0.62 ms of 1 ms: 38% under`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headroom: Vec<String>,
    /// The highest passing rate, if any passed.
    pub capacity_rps: Option<f64>,
    /// The lowest rate kvlab itself could not offer (its workers saturated,
    /// sends late) even with more client threads: the search went on below it
    /// until a rate passed and stopped there, and the server's capacity is
    /// *at least* `capacity_rps` (a lower bound, never the server's limit).
    /// `None`: every failure was the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_limited_at: Option<f64>,
    /// `--max-rps` held the search of a server kvlab did not start to this
    /// rate and no rate failed: the capacity is *at least* `capacity_rps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped_at: Option<f64>,
    /// Every run, in order.
    pub steps: Vec<Step>,
    /// What kvlab removed from (or left in) the servers it did not start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleanup: Vec<super::cleanup::Cleaned>,
}
