//! The result of a capacity search: every tried rate and the highest that
//! met the p99 goal.

use serde::{Deserialize, Serialize};

use super::RunResult;

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

/// The outcome of a search.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Capacity {
    /// The latency limit, ms.
    pub p99_ms: f64,
    /// The highest passing rate, if any passed.
    pub capacity_rps: Option<f64>,
    /// Every run, in order.
    pub steps: Vec<Step>,
}
