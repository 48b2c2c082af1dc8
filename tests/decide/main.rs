//! `kvlab decide` and `kvlab observe`: the decision measured (cut and
//! resumed), decisions asked again from saved measurements
//! (`tests/fixtures/decision-0.1`), `--check`, and observe against servers
//! a load is driven beside. Run alone with `cargo test --profile suite
//! --test decide`.

#[path = "../common/mod.rs"]
mod common;

mod asked_again;
mod check;
mod decisions;
mod observe;
mod rows;
