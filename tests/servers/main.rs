//! The engine against one managed server of each product (or a cluster, a
//! pooler, replicas, a near cache) at a time: counts against the servers'
//! own, values verified, metrics. One binary; run it alone with
//! `cargo test --profile suite --test servers` (a filter such as `resp::`
//! runs one file's tests).

#[path = "../common/mod.rs"]
mod common;

mod cluster;
mod memcache;
mod metrics;
mod mysql;
mod near;
mod pooler;
mod postgres;
mod replicas;
mod resp;
mod shards;
mod tarantool;
