//! What holds only on a quiet host, run after the other binaries by `make
//! test` (scripts/test.sh): an emulated round trip's latency, a capacity
//! search's bracket, verdicts between runs, and the CPU hogs of the
//! host-busy tests. Run alone with `cargo test --profile suite --test
//! quiet`.

#[path = "../common/mod.rs"]
mod common;

mod capacity;
mod host_busy;
mod network;
mod verdicts;
