//! The modes that repeat runs: a study (targets × sweep, from a file),
//! the capacity search (bisection over `--rate`), the decision for a stated
//! load (`kvlab decide`), and the fill (items a cache
//! holds per GiB, bytes per row of a database).
//!
//! # Layout
//! - [`capacity`]
//! - [`decide`]: the answer for a stated load.
//! - [`fill`]
//! - [`study`]

pub mod capacity;
pub mod decide;
pub mod fill;
pub mod study;
