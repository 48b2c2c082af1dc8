//! Trace replay in a plan (`kvlab replay`): which trace, how fast, and what
//! the scan before the run found in it (its span and mean rate), so that a
//! result says what was replayed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A trace replayed as the run's load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracePlan {
    /// The trace file, as given.
    pub path: PathBuf,
    /// Times the trace's own pace (2: twice as fast).
    pub speed: f64,
    /// zstd-compressed (else plain text).
    pub compressed: bool,
    /// Seconds the whole trace lasts at its own pace.
    pub span_s: f64,
    /// Requests kvlab sends for the whole trace (its GETs and SETs).
    pub requests: u64,
    /// Value sizes were taken from the trace (else from `--value-size`).
    pub sizes_from_trace: bool,
}

impl TracePlan {
    /// The trace's mean rate at the replay's speed, requests per second.
    pub fn rate(&self) -> f64 {
        self.requests as f64 * self.speed / self.span_s.max(1e-9)
    }

    /// Seconds the replay of the whole trace lasts.
    pub fn replay_s(&self) -> f64 {
        self.span_s / self.speed
    }
}
