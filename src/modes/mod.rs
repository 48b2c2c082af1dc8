//! The modes that repeat runs: a study (targets × sweep, from a file),
//! the capacity search (bisection over `--rate`), the decision for a stated
//! load (`kvlab decide`), and the fill (items a cache
//! holds per GiB, bytes per row of a database).
//!
//! # Layout
//! - [`capacity`]
//! - [`decide`]: the answer for a stated load.
//! - [`fill`]
//! - [`observe`]: watching running servers, the load they serve.
//! - [`study`]
//! - [`eviction`] and [`watched`]: what observe and decide share, lower
//!   than both: the eviction policy a cache runs (read without changing
//!   it) and a server watched read-only.

pub mod capacity;
pub mod decide;
pub mod eviction;
pub mod fill;
pub mod observe;
pub mod study;
pub mod watched;
