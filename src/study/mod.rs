//! Study files: a TOML description of targets, a workload, sweep axes and
//! repetitions, expanded up front into a flat, ordered list of points. The
//! engine runs one point at a time and knows nothing of sweeps.
//!
//! # Layout
//!
//! - `file`: the file as written — [`StudyFile`] and its sections, with
//!   defaults; [`label`] of a target.
//! - `parse`: [`load()`] and [`parse()`] a study and check it.
//! - `expand`: [`expand()`] a study into [`Point`]s; [`swept_axes`], [`main_axis`].
//! - [`exec`]: run the points, record and read back the results.

pub mod exec;
mod expand;
mod file;
mod parse;

pub use expand::{Point, expand, main_axis, swept_axes};
pub use file::{Goal, LoadSection, StudyFile, Sweep, TargetSection, WorkloadSection, label};
pub use parse::{load, parse};
