//! The modes that repeat runs: a study (targets × sweep, from a file),
//! the capacity search (bisection over `--rate`), and the fill (items a cache
//! holds per GiB, bytes per row of a database).
//!
//! # Layout
//! - [`capacity`]
//! - [`fill`]
//! - [`study`]

pub mod capacity;
pub mod fill;
pub mod study;
