//! Errors a user can fix: each names the flag (or input) at fault and how to fix it.

use thiserror::Error;

/// A mistake in what the user asked for. Displayed as one line.
#[derive(Debug, Error)]
pub enum UsageError {
    /// A flag's value cannot be parsed or is out of range.
    #[error("{flag}: {problem}; {fix}")]
    BadValue {
        /// The flag, e.g. `--ratio`.
        flag: &'static str,
        /// What is wrong with the given value.
        problem: String,
        /// How to fix it.
        fix: String,
    },
    /// Flags that contradict each other.
    #[error("{0}")]
    Conflict(String),
}

impl UsageError {
    /// Shorthand for [`UsageError::BadValue`].
    pub fn bad(flag: &'static str, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        UsageError::BadValue {
            flag,
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// The exit code of a run whose gate failed: a threshold the user set
/// (`kvlab compare --fail-on-worse`, a study's `[thresholds]`) was not met.
pub const GATE_EXIT: u8 = 3;

/// A threshold the user set was not met (a CI gate): the line names it. The
/// binary exits with [`GATE_EXIT`]; the results are written before.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct GateFailed(pub String);
