//! Errors a user can fix: each names the flag (or input) at fault and how to fix it.

use std::borrow::Cow;

use thiserror::Error;

/// A mistake in what the user asked for. Displayed as one line.
#[derive(Debug, Error)]
pub enum UsageError {
    /// A flag's value cannot be parsed or is out of range.
    #[error("{flag}: {problem}; {fix}")]
    BadValue {
        /// The flag, e.g. `--ratio`.
        flag: Cow<'static, str>,
        /// What is wrong with the given value.
        problem: String,
        /// How to fix it.
        fix: String,
    },
    /// A flag this command, or this combination of flags, does not take.
    #[error("{flags}: {problem}; {fix}")]
    Conflict {
        /// The flag (or flags, `--shard/--start-at`) to drop or change.
        flags: Cow<'static, str>,
        /// Why they cannot go together.
        problem: String,
        /// How to fix it.
        fix: String,
    },
}

impl UsageError {
    /// Shorthand for [`UsageError::BadValue`].
    pub fn bad(
        flag: impl Into<Cow<'static, str>>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        UsageError::BadValue {
            flag: flag.into(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }

    /// Shorthand for [`UsageError::Conflict`].
    pub fn conflict(
        flags: impl Into<Cow<'static, str>>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        UsageError::Conflict {
            flags: flags.into(),
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

/// The exit code of a gate that could not judge (`kvlab compare
/// --fail-on-worse` over repetitions that vary past the noise limit).
pub const CANNOT_JUDGE_EXIT: u8 = 4;

/// The exit code of a decision that could not measure what it needs (a
/// capacity kvlab could not find on this host): no answer is made from it.
pub const NOT_MEASURED_EXIT: u8 = 5;

/// The exit code of a command stopped by Ctrl-C (128 + SIGINT, the shell's
/// convention).
pub const STOPPED_EXIT: u8 = 130;

/// A threshold the user set was not met (a CI gate): the line names it. The
/// binary exits with [`GATE_EXIT`]; the results are written before.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct GateFailed(pub String);

/// A gate could not judge (figures too noisy to call worse or not): the line
/// names them. The binary exits with [`CANNOT_JUDGE_EXIT`].
#[derive(Debug, Error)]
#[error("{0}")]
pub struct CannotJudge(pub String);

/// A decision could not measure what it needs: the line names what, why,
/// and the fix. The binary exits with [`NOT_MEASURED_EXIT`].
#[derive(Debug, Error)]
#[error("{0}")]
pub struct NotMeasured(pub String);

/// A command stopped by Ctrl-C, with what it said then; what it measured
/// until then is kept. The binary exits with [`STOPPED_EXIT`].
#[derive(Debug, Error)]
#[error("{0}")]
pub struct Stopped(pub String);

impl Stopped {
    /// The outcome of a command that Ctrl-C stopped: its error, said as a
    /// stop, or a stop where it ended without one.
    pub fn after(done: anyhow::Result<()>) -> anyhow::Error {
        let said = match done {
            Ok(()) => {
                return Stopped("stopped (Ctrl-C) before its end; what it measured until then is reported above".into()).into();
            }
            Err(e) => format!("{e:#}"),
        };
        match said.starts_with("stopped (Ctrl-C)") {
            true => Stopped(said).into(),
            false => Stopped(format!("stopped (Ctrl-C): {said}")).into(),
        }
    }
}

/// The binary's exit status for error `e`: [`STOPPED_EXIT`],
/// [`GATE_EXIT`], [`CANNOT_JUDGE_EXIT`], [`NOT_MEASURED_EXIT`], or 1 for
/// any other error.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if e.is::<Stopped>() {
        STOPPED_EXIT
    } else if e.is::<GateFailed>() {
        GATE_EXIT
    } else if e.is::<CannotJudge>() {
        CANNOT_JUDGE_EXIT
    } else if e.is::<NotMeasured>() {
        NOT_MEASURED_EXIT
    } else {
        1
    }
}
