//! Supervision of the server processes kvlab starts: a [`ManagedServer`]
//! (temp dir, free loopback port, spawn, readiness, `Drop` stops exactly the
//! pid it started), the pooler started in front of one, and the version of
//! a product installed here.
//!
//! # Layout
//! - [`installed`]
//! - [`managed`]
//! - [`pooler`]

pub mod installed;
pub mod managed;
pub mod pooler;

pub use managed::ManagedServer;
pub use pooler::ManagedPooler;
