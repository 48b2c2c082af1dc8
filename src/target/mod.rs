//! What every target has in common, whatever the product: where it is
//! ([`Endpoint`]), how to reach it ([`Connector`]), the interfaces a product
//! implements ([`Product`], [`Server`], [`Cache`], [`Database`]) and what it
//! declares ([`Facts`]), managed server
//! processes ([`ManagedServer`]), their resource use, the server's own counters
//! and kvlab's table in general. Names no product: those live in `products/`.
//!
//! # Layout
//! - [`facts`]: what a product only declares (names, schemes, port, limits,
//!   capabilities, its server's binary, its table options), as plain data.
//! - [`product`]: the narrow traits a product folder implements, and the
//!   connector (a product + address + credentials → connections, probe, errors).
//! - [`endpoint`]: a server's address and password, secret settings, table options.
//! - [`diagnose`]: one-line errors for failed connections (logins, ports, TLS mix-ups).
//! - [`managed`]: start, wait for, measure and stop a server kvlab runs.
//! - [`settings`]: `--server-opt` syntax, sizing and the checks all products share.
//! - [`osuser`]: installed programs, and the system user a managed database runs as.
//! - [`pooler`]: the interface of a connection pooler kvlab runs in front of a
//!   managed database, and its process.
//! - [`process`]: free ports, log tails, stopping one child process.
//! - [`procfs`]: CPU and memory of server processes from /proc.
//! - [`counters`]: the server's own request counters.
//! - [`table`]: kvlab's table on a database: the shared policy (marker, reuse,
//!   recreate or load), the steps each database supplies, parallel load.
//! - [`topology`]: sharded targets: the node serving each slot.

pub mod counters;
pub mod diagnose;
pub mod endpoint;
pub mod facts;
pub mod managed;
pub mod osuser;
pub mod pooler;
pub mod process;
pub mod procfs;
pub mod product;
pub mod settings;
pub mod table;
pub mod topology;

pub use counters::{ReportedUsage, ServerCounters, UsageReport};
pub use endpoint::{Endpoint, SchemaOptions, Secret, is_secret_key};
pub use facts::{Facts, ServerFacts, TableFacts};
pub use managed::ManagedServer;
pub use osuser::find_binary;
pub use pooler::{ManagedPooler, Pooler, PoolerCounters, PoolerLaunch};
pub use procfs::{ProcUsage, proc_tree_usage, proc_usage};
pub use product::{
    Cache, CacheMemory, Connector, Database, Launch, Login, Product, Role, Server, ServerInfo,
};
pub use settings::{Config, Sizing, parse_opt};
pub use table::{DataSpec, Existing, Figures, LoadResult, TableSteps};
pub use topology::Topology;
