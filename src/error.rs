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
    /// A flag this command, or this combination of flags, does not take.
    #[error("{flags}: {problem}; {fix}")]
    Conflict {
        /// The flag (or flags, `--shard/--start-at`) to drop or change.
        flags: &'static str,
        /// Why they cannot go together.
        problem: String,
        /// How to fix it.
        fix: String,
    },
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

    /// Shorthand for [`UsageError::Conflict`].
    pub fn conflict(
        flags: &'static str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        UsageError::Conflict {
            flags,
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// `v` when it is a positive number, else the error of `flag` with `fix`.
pub fn positive(flag: &'static str, v: f64, fix: &str) -> Result<f64, UsageError> {
    match v.is_finite() && v > 0.0 {
        true => Ok(v),
        false => Err(UsageError::bad(
            flag,
            format!("{v} is not a positive number"),
            fix,
        )),
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
