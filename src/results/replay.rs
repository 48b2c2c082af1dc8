//! What a trace replay (`kvlab replay`) read and sent: the trace's lines by
//! operation and what kvlab sent for each, what it could not reproduce, and
//! how faithfully the replay kept the trace's timing.

use serde::{Deserialize, Serialize};

/// The trace side of a replayed run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// The trace file, as given.
    pub trace: String,
    /// zstd-compressed (else plain text).
    pub compressed: bool,
    /// Times the trace's own pace.
    pub speed: f64,
    /// Seconds the whole trace lasts at its own pace.
    pub span_s: f64,
    /// The trace's mean rate of GETs and SETs at the replay's speed, req/s.
    pub offered_rps: f64,
    /// Lines the replay read (blank lines excluded).
    pub lines: u64,
    /// Lines that did not parse (counted, not sent).
    pub malformed: u64,
    /// The first of them: its number and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_malformed: Option<String>,
    /// Lines per operation and what kvlab sent for each.
    pub ops: Vec<OpLines>,
    /// Requests handed to the workers, warm-up included: GETs and SETs.
    pub handed_gets: u64,
    /// SETs handed to the workers.
    pub handed_sets: u64,
    /// Lines whose timestamp went back (replayed with the lines before them).
    pub out_of_order: u64,
    /// Distinct key ids the replay touched (`None`: too many keys to track).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_touched: Option<u64>,
    /// The replay read the trace to its end (else the window ended first,
    /// or the trace could not be read further: `read_error`).
    pub finished: bool,
    /// Why the trace could not be read to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_error: Option<String>,
    /// What of the trace kvlab does not reproduce, one sentence each.
    pub not_reproduced: Vec<String>,
}

/// One operation of the trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpLines {
    /// Its name in the trace (`other`: names the format does not have).
    pub op: String,
    /// Lines of it the replay read.
    pub lines: u64,
    /// What kvlab sent for it: `get`, `set`, or `not sent`.
    pub sent_as: String,
}
