//! The machine kvlab runs on: child processes (free ports, spawning one kvlab
//! owns, stopping exactly one pid), CPU and memory from /proc, installed
//! programs and the system user a database runs as, and the progress line
//! and notes on stderr.
//!
//! # Layout
//! - [`host_load`]
//! - [`osuser`]
//! - [`process`]
//! - [`procfs`]
//! - [`progress`]
//! - [`template`]

pub mod host_load;
pub mod osuser;
pub mod process;
pub mod procfs;
pub mod progress;
pub mod template;

pub use osuser::find_binary;
pub use procfs::{ProcUsage, proc_tree_usage, proc_usage};
