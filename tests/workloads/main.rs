//! Workloads across a cache and a database, each test its own servers:
//! cache-aside, a team's shared servers, working sets and events (a cache
//! killed, restarted or flushed mid-run), production-shaped traffic and
//! traces, studies. Run alone with `cargo test --profile suite --test
//! workloads`.

#[path = "../common/mod.rs"]
mod common;

mod aside;
mod shared;
mod study;
mod traffic;
mod working_set;
