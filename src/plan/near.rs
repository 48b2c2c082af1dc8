//! `--near-cache` and `--near-invalidation`: a bounded cache in the
//! application's process (one per client thread) in front of a Redis or
//! Valkey target, kept coherent by the server (RESP3 client tracking) or by
//! a TTL alone.

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// A near cache as asked: its bound and how it learns of writes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NearCache {
    /// The most each thread's near cache holds.
    pub bound: NearBound,
    /// How entries are dropped when the data changes.
    pub invalidation: Invalidation,
}

/// The most a near cache holds: items, or bytes (values and keys with
/// kvlab's per-entry overhead).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NearBound {
    /// At most this many entries.
    Items(u64),
    /// At most this many bytes.
    Bytes(u64),
}

/// How a near cache learns that an entry is outdated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invalidation {
    /// RESP3 `CLIENT TRACKING ON`: the server sends an invalidation for each
    /// key this connection read, when it changes, on the same connection.
    Tracking,
    /// `CLIENT TRACKING ON BCAST PREFIX <kvlab's prefix>`: an invalidation
    /// for every key under the prefix that changes, read or not.
    Bcast,
    /// No message from the server: an entry is dropped this many seconds
    /// after it was filled (stale reads appear, bounded by it).
    Ttl(u32),
}

impl std::str::FromStr for NearBound {
    type Err = UsageError;

    /// `10000` (items) or a size: `64MiB`, `512KiB`, `1GiB` (also KB, MB,
    /// GB as powers of 1024, and B).
    fn from_str(s: &str) -> Result<Self, UsageError> {
        let bad = || {
            UsageError::bad(
                "--near-cache",
                format!("{s:?} is neither a number of items nor a size"),
                "give items (e.g. --near-cache 10000) or a size (e.g. --near-cache 64MiB)",
            )
        };
        let t = s.trim();
        let digits = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(digits);
        let n: f64 = num.parse().map_err(|_| bad())?;
        let scale = match unit.trim().to_ascii_lowercase().as_str() {
            "" => return whole(n).map(NearBound::Items).ok_or_else(bad),
            "b" => 1.0,
            "k" | "kb" | "kib" => 1024.0,
            "m" | "mb" | "mib" => 1024.0 * 1024.0,
            "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
            _ => return Err(bad()),
        };
        whole(n * scale).map(NearBound::Bytes).ok_or_else(bad)
    }
}

/// `n` as a positive whole number, if it is one.
fn whole(n: f64) -> Option<u64> {
    (n.is_finite() && n >= 1.0 && n.fract() == 0.0 && n < 1e18).then_some(n as u64)
}

impl std::str::FromStr for Invalidation {
    type Err = UsageError;

    /// `tracking`, `bcast` or `ttl=SECONDS`.
    fn from_str(s: &str) -> Result<Self, UsageError> {
        let bad = |why: String| {
            UsageError::bad(
                "--near-invalidation",
                why,
                "give tracking (the server's invalidations, RESP3), bcast (every change under kvlab's prefix) or ttl=SECONDS (no messages, entries expire)",
            )
        };
        match s.trim() {
            "tracking" => Ok(Invalidation::Tracking),
            "bcast" => Ok(Invalidation::Bcast),
            t => match t.strip_prefix("ttl=").map(str::parse::<u32>) {
                Some(Ok(n)) if n > 0 => Ok(Invalidation::Ttl(n)),
                Some(_) => Err(bad(format!(
                    "{t:?}: the TTL is a positive whole number of seconds"
                ))),
                None => Err(bad(format!("{t:?} is no invalidation"))),
            },
        }
    }
}

impl NearCache {
    /// The most entries it may hold with values of at least `min_value` bytes
    /// and keys of `key_len` bytes.
    pub fn max_items(&self, min_value: usize, key_len: usize) -> u64 {
        match self.bound {
            NearBound::Items(n) => n,
            NearBound::Bytes(b) => (b / entry_bytes(min_value, key_len)).max(1),
        }
    }

    /// Words for reports: "10,000 items, tracking" or "64.0 MiB, ttl 5 s".
    pub fn describe(&self) -> String {
        let bound = match self.bound {
            NearBound::Items(n) => format!("{} items", crate::results::stats::num(n as f64)),
            NearBound::Bytes(b) => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        };
        let how = match self.invalidation {
            Invalidation::Tracking => "invalidated by the server's tracking (RESP3)".to_string(),
            Invalidation::Bcast => "invalidated by broadcast tracking of kvlab's prefix".into(),
            Invalidation::Ttl(s) => format!("no invalidation, entries expire after {s} s"),
        };
        format!("{bound} per client thread, {how}")
    }
}

/// The client tracking `near` asks of the connections to the server it
/// fronts (keys named `prefix` + id); `None` for a TTL alone, or no near cache.
pub fn tracking(near: Option<&NearCache>, prefix: &[u8]) -> Option<crate::driver::Tracking> {
    match near?.invalidation {
        Invalidation::Tracking => Some(crate::driver::Tracking::Read),
        Invalidation::Bcast => Some(crate::driver::Tracking::Prefix(prefix.to_vec())),
        Invalidation::Ttl(_) => None,
    }
}

/// Bytes one entry is counted as: its value, its key and a fixed overhead
/// (the LRU's node and hash slot, the entry's fields).
pub fn entry_bytes(value: usize, key_len: usize) -> u64 {
    (value + key_len + ENTRY_OVERHEAD) as u64
}

/// Bytes of an entry beyond its value and key.
pub const ENTRY_OVERHEAD: usize = 96;

impl crate::plan::RunPlan {
    /// Checks `--near-cache` against the target: tracking needs a server
    /// that tracks clients (Redis, Valkey); a TTL alone works before any
    /// target but a sharded one; batch reads go around it.
    pub fn check_near(&self) -> Result<(), UsageError> {
        let Some(n) = &self.near else {
            return Ok(());
        };
        let remote = match &self.cache {
            Some(c) => c.cache.kind,
            None => self.target.kind,
        };
        let facts = remote.product().facts();
        let tracking = !matches!(n.invalidation, Invalidation::Ttl(_));
        if tracking && !facts.client_tracking {
            return Err(UsageError::bad(
                "--near-invalidation",
                format!("{} cannot tell a client of changed keys", facts.title),
                "use --near-invalidation ttl=SECONDS, or a Redis or Valkey target",
            ));
        }
        let refusal = if facts.sharded {
            Some((
                "--near-cache",
                "kvlab's near cache fronts one server, not a cluster",
            ))
        } else if self.workload.batch.is_some() {
            Some(("--batch", "a near cache serves one key per request"))
        } else {
            None
        };
        match refusal {
            Some((flag, why)) => Err(UsageError::conflict(flag, why, "drop one of them")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_invalidations_read_as_written() {
        assert_eq!(
            "10000".parse::<NearBound>().unwrap(),
            NearBound::Items(10000)
        );
        assert_eq!(
            "64MiB".parse::<NearBound>().unwrap(),
            NearBound::Bytes(64 << 20)
        );
        assert_eq!(
            "512kb".parse::<NearBound>().unwrap(),
            NearBound::Bytes(512 << 10)
        );
        assert_eq!(
            "1.5G".parse::<NearBound>().unwrap(),
            NearBound::Bytes(3 << 29)
        );
        for bad in ["", "0", "-5", "ten", "5 parsecs", "0.5"] {
            let e = bad.parse::<NearBound>().unwrap_err().to_string();
            assert!(e.starts_with("--near-cache:"), "{e}");
        }
        assert_eq!(
            "tracking".parse::<Invalidation>().unwrap(),
            Invalidation::Tracking
        );
        assert_eq!(
            "bcast".parse::<Invalidation>().unwrap(),
            Invalidation::Bcast
        );
        assert_eq!(
            "ttl=5".parse::<Invalidation>().unwrap(),
            Invalidation::Ttl(5)
        );
        for bad in ["ttl=0", "ttl=x", "push"] {
            let e = bad.parse::<Invalidation>().unwrap_err().to_string();
            assert!(e.starts_with("--near-invalidation:"), "{e}");
        }
    }

    #[test]
    fn a_size_bound_holds_whole_entries() {
        let n = NearCache {
            bound: NearBound::Bytes(1 << 20),
            invalidation: Invalidation::Tracking,
        };
        let items = n.max_items(1024, 20);
        assert_eq!(items, (1 << 20) / (1024 + 20 + ENTRY_OVERHEAD) as u64);
    }
}
