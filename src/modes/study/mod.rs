//! Study files: a TOML description of targets, a workload, sweep axes and
//! repetitions, expanded up front into a flat, ordered list of points. The
//! engine runs one point at a time and knows nothing of sweeps.
//!
//! # Layout
//!
//! - `file`: the file as written — [`StudyFile`] and its sections, with
//!   defaults; [`label`] of a target.
//! - `parse`: [`load()`] and [`parse()`] a study (at a [`Scale`]) and check it.
//! - `builtin`: the studies built into the binary (`kvlab study s0`).
//! - `cores`: caveats for sweeps that need more cores than the machine has.
//! - `point`: a [`Point`], the run it is, its settings and label.
//! - `expand`: [`expand()`] a study into [`Point`]s; [`swept_axes`], [`main_axis`].
//! - [`exec`]: run the points, record and read back the results.

mod builtin;
mod cores;
pub mod exec;
mod expand;
mod lines;
mod parse;
mod point;

pub use crate::plan::study::{
    Goal, LoadSection, Scale, StudyFile, Sweep, TargetSection, WorkloadSection, label,
};
pub use builtin::{BUILTIN, builtin, names as builtin_names};
pub use cores::core_caveats;
pub use expand::{expand, main_axis, swept_axes};
pub use parse::{load, parse, parse_scaled};
pub use point::Point;
