//! Watching a running server, read-only, for `kvlab observe`: what a product
//! reads of its own counters every second ([`Reading`]) and of what it holds
//! once the window is over ([`Holding`]: keys, memory, a paced sample of value
//! sizes), through a [`Watch`] it opens (`driver::Observe`, beside the
//! `Product` that has it). A command the server
//! refuses leaves its figure unknown, said in a [`Notes`] line; the rest goes
//! on. No product's watch sends a command that writes, `MONITOR` or `KEYS`.

use anyhow::Result;
use serde::{Deserialize, Serialize};

/// A server's own counters at one instant, each since it started; `None`: a
/// figure it does not keep or refused to give.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// Read requests (GET, MGET, SELECT, ...), the watch's own taken out.
    pub reads: Option<u64>,
    /// Write requests (SET, DEL, INSERT, UPDATE, DELETE, ...).
    pub writes: Option<u64>,
    /// Reads that found their key (a cache's keyspace hits).
    pub hits: Option<u64>,
    /// Reads that did not.
    pub misses: Option<u64>,
    /// Keys evicted for memory.
    pub evictions: Option<u64>,
    /// Keys expired.
    pub expired: Option<u64>,
    /// Every command the server counted, its watch's included.
    pub commands: Option<u64>,
}

/// What a server holds, read once the window is over.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Holding {
    /// Keys (a cache's items, the rows of a database's table read most).
    pub keys: Option<u64>,
    /// Where `keys` comes from, e.g. `DBSIZE`.
    pub keys_from: String,
    /// The table read most (a database), `schema.table`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Memory in use, bytes.
    pub memory_bytes: Option<u64>,
    /// The memory limit, bytes (`None` or 0: none).
    pub memory_limit: Option<u64>,
    /// Value sizes of a sample of keys, bytes.
    pub value_sizes: Vec<u64>,
    /// How the sample was taken, e.g. `STRLEN of 1,000 keys from SCAN`.
    pub sizes_from: String,
    /// Memory per key of the sample where the server says it (`MEMORY
    /// USAGE`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_per_key: Option<f64>,
    /// Sampled keys whose TTL was asked (`PTTL`, `mg KEY t`; 0: none).
    #[serde(default, skip_serializing_if = "crate::results::stats::is_zero")]
    pub ttl_asked: u64,
    /// The TTL left of each of those that carry one, seconds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ttls_left_s: Vec<f64>,
}

/// Lines saying which figure is unknown and why (a refused command), or how
/// a figure was found where that matters.
#[derive(Clone, Debug, Default)]
pub struct Notes(pub Vec<String>);

impl Notes {
    /// Says `line` once.
    pub fn say(&mut self, line: String) {
        if !self.0.contains(&line) {
            self.0.push(line);
        }
    }

    /// `r`'s value, or `None` with a line saying `figure` is unknown because
    /// the server refused `command`.
    pub fn or_unknown<T>(&mut self, r: Result<T>, figure: &str, command: &str) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                let why = format!("{e:#}");
                let why = why.lines().next().unwrap_or("").trim();
                self.say(format!(
                    "{figure}: not known (the server refused {command}: {why})"
                ));
                None
            }
        }
    }
}

/// One watched server: a connection of its own, a few commands a second.
pub trait Watch: Send {
    /// The counters now; a refused command leaves its figures `None`.
    fn read(&mut self, notes: &mut Notes) -> Result<Reading>;
    /// What it holds: keys, memory, value sizes (a bounded, paced sample).
    fn holding(&mut self, notes: &mut Notes) -> Holding;
    /// Commands this watch sent so far.
    fn sent(&self) -> u64;
}
