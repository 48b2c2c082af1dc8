//! The command line without a load to measure: flags, errors, studies
//! expanded and planned, `compare`, one figure's files. Run alone with
//! `cargo test --profile suite --test cli`.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod compare;
mod features;
mod one_figure;
mod study_expand;
mod study_plan;
