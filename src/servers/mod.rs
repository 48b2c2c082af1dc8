//! Supervision of the server processes kvlab starts: a [`ManagedServer`]
//! (temp dir, free loopback port, spawn, readiness, `Drop` stops exactly the
//! pid it started) and the pooler started in front of one.
//!
//! # Layout
//! - [`managed`]
//! - [`pooler`]

pub mod managed;
pub mod pooler;

pub use managed::ManagedServer;
pub use pooler::ManagedPooler;
