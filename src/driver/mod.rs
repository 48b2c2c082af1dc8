//! What generic code drives a product through, naming no product (the
//! product folders in `products/` implement it): the traits a product
//! implements ([`Product`], [`Server`], [`Cache`], [`Database`], [`Pooler`]),
//! the [`Connector`] (a product + address + credentials → connections,
//! probe, counters), the sans-IO codec interface ([`wire`]), where a server is
//! ([`Endpoint`]), its own counters, how it is watched read-only ([`observe`]), the slot map of a sharded target, managed read replicas and their lag, the
//! `--server-opt` rules every product shares, and the policy of kvlab's table
//! on a database.
//!
//! # Layout
//! - [`counters`]
//! - [`diagnose`]
//! - [`endpoint`]
//! - [`facts`]
//! - [`observe`]
//! - [`pooler`]
//! - [`product`]
//! - [`replication`]
//! - [`settings`]
//! - [`setup`]
//! - [`table`]
//! - [`table_steps`]
//! - [`topology`]
//! - [`wire`]

/// How long a server may take to answer a request for its counters or its
/// use (a healthy one answers within milliseconds): one that stops answering
/// holds the end of a run no longer than this per request.
pub const COUNTERS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

pub mod choice;
pub mod counters;
pub mod diagnose;
pub mod endpoint;
pub mod facts;
pub mod observe;
pub mod pooler;
pub mod product;
pub mod replication;
pub mod settings;
pub mod setup;
pub mod table;
pub mod table_steps;
pub mod topology;
pub mod wire;

pub use choice::{Consistency, QueryMode};
pub use counters::{CacheMemory, ReportedUsage, ServerCounters, UsageReport};
pub use endpoint::{Endpoint, SchemaOptions, Secret, is_secret_key};
pub use facts::{Facts, ServerFacts, TableFacts};
pub use pooler::{Pooler, PoolerCounters, PoolerLaunch};
pub use product::{
    Cache, Connector, Database, Following, Launch, Login, Observe, OwnKeys, Product, ReplicaLag,
    Replication, Role, Server, ServerInfo, TableJob, Tracking,
};
pub use settings::{Config, Sizing, parse_opt};
pub use setup::SetupConn;
pub use table::LoadResult;
pub use table_steps::{DataSpec, Existing, Figures, TableSteps};
pub use topology::Topology;
