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
    /// Memory in use, bytes, as its limit counts it (Redis `used_memory`,
    /// memcached `bytes`).
    pub memory_bytes: Option<u64>,
    /// Its resident memory, bytes, where it says it (Redis
    /// `used_memory_rss`): what kvlab measures of a cache it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident_bytes: Option<u64>,
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
    #[serde(default, skip_serializing_if = "is_zero")]
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

/// The application's keys among a cache's (`--keys-like`): a glob as
/// Redis's `SCAN … MATCH` takes it (`*`, `?`, `[…]`), matched by kvlab on
/// the keys a watch lists.
#[derive(Clone, Debug)]
pub struct KeysLike {
    said: String,
    glob: glob::Pattern,
}

impl KeysLike {
    /// `pattern` checked: a glob, e.g. `user:*`.
    pub fn new(pattern: &str) -> Result<KeysLike, crate::error::UsageError> {
        let bad = |why: String| {
            crate::error::UsageError::bad(
                "--keys-like",
                why,
                "give a glob of the application's keys, e.g. --keys-like 'user:*'",
            )
        };
        if pattern.is_empty() {
            return Err(bad("an empty pattern".into()));
        }
        let glob = glob::Pattern::new(pattern).map_err(|e| bad(format!("{pattern:?}: {e}")))?;
        Ok(KeysLike {
            said: pattern.into(),
            glob,
        })
    }

    /// Whether `key` is one of them.
    pub fn matches(&self, key: &[u8]) -> bool {
        std::str::from_utf8(key).is_ok_and(|k| self.glob.matches(k))
    }

    /// The pattern as given.
    pub fn said(&self) -> &str {
        &self.said
    }

    /// The keys that match of the server's `items`, from what a watch
    /// `listed`: their count (exact where the listing reached every key,
    /// else the items by the share listed that match) and where it comes
    /// from.
    pub fn count<K>(&self, listed: &Listed<K>, items: Option<u64>) -> (Option<u64>, String) {
        let Listed {
            matched,
            listed,
            whole,
            ..
        } = *listed;
        if whole {
            return (
                Some(matched),
                format!(
                    "{matched} of the {listed} keys listed (every key) match {:?}",
                    self.said
                ),
            );
        }
        let share = matched as f64 / listed.max(1) as f64;
        (
            items.map(|n| (n as f64 * share).round() as u64),
            format!(
                "the server's items × the share of the {listed} keys listed that match {:?} ({matched}, {:.1}%)",
                self.said,
                share * 100.0
            ),
        )
    }
}

/// The keys a watch listed for its sample: those kept, how many of those
/// listed matched (every one, without a pattern), and whether the listing
/// reached every key.
#[derive(Debug)]
pub struct Listed<K> {
    /// The keys kept for the sample.
    pub keys: Vec<K>,
    /// Keys listed that matched.
    pub matched: u64,
    /// Keys listed.
    pub listed: u64,
    /// The listing reached every key.
    pub whole: bool,
}

/// One watched server: a connection of its own, a few commands a second.
pub trait Watch: Send {
    /// The counters now; a refused command leaves its figures `None`.
    fn read(&mut self, notes: &mut Notes) -> Result<Reading>;
    /// What it holds: keys, memory, value sizes (a bounded, paced sample);
    /// with `like`, of the keys that match only (a cache's).
    fn holding(&mut self, notes: &mut Notes, like: Option<&KeysLike>) -> Holding;
    /// Commands this watch sent so far.
    fn sent(&self) -> u64;
}

/// Whether `n` is 0 (a count a file leaves out where none).
fn is_zero(n: &u64) -> bool {
    *n == 0
}
