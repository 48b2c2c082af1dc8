//! A server a mode watches read-only, which kvlab did not start: what
//! `kvlab observe` watches and what `kvlab decide --observe` measures beside.

use crate::driver::Connector;

/// A server to watch: its role (`cache` or `database`) and where it is.
pub struct ToWatch {
    /// `cache` or `database`.
    pub role: crate::results::usage::Role,
    /// Where it is, with its login.
    pub connector: Connector,
    /// Its version, as it reported it.
    pub version: String,
}
