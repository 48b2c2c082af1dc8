//! Measurement: outcome counts and HDR latency histograms. Each worker owns its
//! recorders; they are merged only after the fact, never shared while running.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histograms hold, in nanoseconds (larger values saturate).
const MAX_NS: u64 = 120_000_000_000;

/// A new latency histogram in nanoseconds, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// Why a request failed. Small and `Copy`: counted, never formatted on the hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A GET returned a value that is not the key's value.
    WrongValue,
    /// The server answered with an error.
    Server,
    /// The reply could not be parsed (wrong protocol or corrupt stream).
    Protocol,
    /// No reply within the timeout.
    Timeout,
    /// The connection closed or failed with the request in flight.
    Disconnect,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 5] = [
        ErrorKind::WrongValue,
        ErrorKind::Server,
        ErrorKind::Protocol,
        ErrorKind::Timeout,
        ErrorKind::Disconnect,
    ];

    /// Name used in the summary and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::WrongValue => "wrong_value",
            ErrorKind::Server => "server_error",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Disconnect => "disconnect",
        }
    }
}

/// What became of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A GET returned the expected value.
    Hit,
    /// A GET found no value.
    Miss,
    /// A SET was stored.
    Stored,
    /// The request failed.
    Error(ErrorKind),
}

/// Counters of requests by outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// GETs sent and finished (any outcome).
    pub gets: u64,
    /// SETs sent and finished (any outcome).
    pub sets: u64,
    /// GETs that returned the right value.
    pub hits: u64,
    /// GETs that found nothing.
    pub misses: u64,
    /// SETs stored.
    pub stored: u64,
    /// Failed requests by [`ErrorKind`] (indexed as [`ErrorKind::ALL`]).
    pub errors: [u64; 5],
    /// Reads checked for staleness (hits when versions are tracked).
    #[serde(default)]
    pub checked: u64,
    /// Stale reads among them (see [`crate::workload::consistency`]).
    #[serde(default)]
    pub stale: u64,
    /// Sum over stale reads of the versions they were behind.
    #[serde(default)]
    pub stale_versions: u64,
    /// Most versions one stale read was behind.
    #[serde(default)]
    pub stale_versions_max: u64,
    /// Bytes of the values read (hits) and written (stored).
    #[serde(default)]
    pub value_bytes: u64,
    /// Misses of a key read after its TTL had run out (`--ttl`).
    #[serde(default)]
    pub expired: u64,
    /// Keys the GETs asked for (one each, or a batch's keys with `--batch`):
    /// hits and misses count keys, `gets` counts requests.
    #[serde(default)]
    pub keys: u64,
    /// Keys read whose previous access (by any client) was a read, counted
    /// when versions are tracked: a cache that drops a key on every write can
    /// hit no other read, so `after_read / keys` is the run's hit-ratio ceiling.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub after_read: u64,
    /// GETs a hot-key burst sent to its keys (`--hot-keys`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hot_reads: u64,
    /// Commands batch reads sent beyond one per request (on a sharded
    /// target a batch read sends one per slot its keys fall in).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub extra_commands: u64,
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Counts {
    /// Counts one finished request.
    #[inline]
    pub fn count(&mut self, get: bool, outcome: Outcome) {
        if get {
            self.gets += 1;
            self.keys += 1;
        } else {
            self.sets += 1;
        }
        match outcome {
            Outcome::Hit => self.hits += 1,
            Outcome::Miss => self.misses += 1,
            Outcome::Stored => self.stored += 1,
            Outcome::Error(k) => self.errors[k as usize] += 1,
        }
    }

    /// Counts one finished batch read of `keys` keys sent as `commands`
    /// commands, `error` if it failed
    /// (its keys' hits and misses are counted apart, by the caller).
    #[inline]
    pub fn count_batch(&mut self, keys: u64, commands: u64, error: Option<ErrorKind>) {
        self.gets += 1;
        self.keys += keys;
        self.extra_commands += commands.saturating_sub(1);
        if let Some(k) = error {
            self.errors[k as usize] += 1;
        }
    }

    /// Keys the GETs asked for (`gets` in results written before `keys`).
    pub fn keys_read(&self) -> u64 {
        if self.keys == 0 { self.gets } else { self.keys }
    }

    /// All finished requests.
    pub fn requests(&self) -> u64 {
        self.gets + self.sets
    }

    /// All failed requests.
    pub fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Requests that succeeded (hit, miss or stored).
    pub fn ok(&self) -> u64 {
        self.requests() - self.error_total()
    }

    /// Errors of one kind.
    pub fn error(&self, k: ErrorKind) -> u64 {
        self.errors[k as usize]
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Counts) {
        self.gets += other.gets;
        self.sets += other.sets;
        self.hits += other.hits;
        self.misses += other.misses;
        self.stored += other.stored;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.checked += other.checked;
        self.stale += other.stale;
        self.stale_versions += other.stale_versions;
        self.stale_versions_max = self.stale_versions_max.max(other.stale_versions_max);
        self.value_bytes += other.value_bytes;
        self.expired += other.expired;
        self.keys += other.keys;
        self.extra_commands += other.extra_commands;
        self.after_read += other.after_read;
        self.hot_reads += other.hot_reads;
    }
}

/// One step of a cache-aside request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leg {
    /// Read the cache.
    CacheGet,
    /// Read the database after a cache miss.
    DbGet,
    /// Put the value read from the database into the cache.
    CacheFill,
    /// Write the database.
    DbSet,
    /// Delete (invalidate) or write (update) the cache entry after a write.
    CacheWrite,
}

impl Leg {
    /// Every leg, in report order.
    pub const ALL: [Leg; 5] = [
        Leg::CacheGet,
        Leg::DbGet,
        Leg::CacheFill,
        Leg::DbSet,
        Leg::CacheWrite,
    ];

    /// Name used in the summary and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Leg::CacheGet => "cache_get",
            Leg::DbGet => "db_get",
            Leg::CacheFill => "cache_fill",
            Leg::DbSet => "db_set",
            Leg::CacheWrite => "cache_write",
        }
    }
}

/// Per-leg counts and latency of cache-aside requests.
#[derive(Clone, Debug)]
pub struct Legs {
    /// Replies received per leg (indexed as [`Leg::ALL`]).
    pub replies: [u64; 5],
    /// Failed steps per leg (error replies, and steps that got no reply).
    pub errors: [u64; 5],
    /// Latency of each leg from its send to its reply, ns.
    pub latency: [Histogram<u64>; 5],
    /// Reads the cache answered with a value.
    pub cache_hits: u64,
    /// Reads the cache did not have.
    pub cache_misses: u64,
    /// Reads that went around an unreachable cache: served by the database,
    /// without a fill.
    pub cache_bypassed: u64,
}

impl Default for Legs {
    fn default() -> Self {
        Legs {
            replies: [0; 5],
            errors: [0; 5],
            latency: std::array::from_fn(|_| new_histogram()),
            cache_hits: 0,
            cache_misses: 0,
            cache_bypassed: 0,
        }
    }
}

impl Legs {
    /// Adds this second's cache reads (hits, misses, bypassed) and database
    /// reads to the running totals `c` (the timeline's and the live metrics').
    pub fn add_cache_counts(&self, c: &mut [u64; 4]) {
        c[0] += self.cache_hits;
        c[1] += self.cache_misses;
        c[2] += self.cache_bypassed;
        c[3] += self.replies[Leg::DbGet as usize];
    }

    /// Adds another's data.
    pub fn add(&mut self, other: &Legs) {
        for i in 0..5 {
            self.replies[i] += other.replies[i];
            self.errors[i] += other.errors[i];
            let _ = self.latency[i].add(&other.latency[i]);
        }
        self.cache_hits += other.cache_hits;
        self.cache_misses += other.cache_misses;
        self.cache_bypassed += other.cache_bypassed;
    }
}

/// Counts and latency of finished requests over some span.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// Outcome counters.
    pub counts: Counts,
    /// Latency from the start time in use (intended start when paced).
    pub latency: Histogram<u64>,
    /// Service time from the actual send (recorded only when paced).
    pub service: Histogram<u64>,
    /// Age of stale reads, ns (see [`crate::workload::consistency::Staleness`]).
    pub stale_age: Histogram<u64>,
    /// Open loop: how far each send was from its intended time, early or
    /// late, ns.
    pub send_error: Histogram<u64>,
    /// Cache-aside runs: each leg's counts and latency.
    pub legs: Option<Box<Legs>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            counts: Counts::default(),
            latency: new_histogram(),
            service: new_histogram(),
            stale_age: new_histogram(),
            send_error: new_histogram(),
            legs: None,
        }
    }
}

impl Recorder {
    /// Adds another recorder's data.
    pub fn add(&mut self, other: &Recorder) {
        self.counts.add(&other.counts);
        // Both use the same bounds, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.stale_age.add(&other.stale_age);
        let _ = self.send_error.add(&other.send_error);
        if let Some(l) = &other.legs {
            self.legs.get_or_insert_with(Default::default).add(l);
        }
    }

    /// Counts a read that was checked for staleness, and its staleness if any.
    #[inline]
    pub fn checked_read(&mut self, stale: Option<crate::workload::consistency::Staleness>) {
        self.counts.checked += 1;
        if let Some(s) = stale {
            self.counts.stale += 1;
            self.counts.stale_versions += s.versions;
            self.counts.stale_versions_max = self.counts.stale_versions_max.max(s.versions);
            self.stale_age.saturating_record(s.age_ns.max(1));
        }
    }
}

/// Latency percentiles in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// 99.999th percentile (results written before it existed read as 0).
    #[serde(default)]
    pub p99999: f64,
    /// Largest value.
    pub max: f64,
}

impl Percentiles {
    /// Percentiles of a nanosecond histogram, in microseconds.
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Percentiles {
            mean: h.mean() / 1000.0,
            p50: us(h.value_at_quantile(0.50)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            p9999: us(h.value_at_quantile(0.9999)),
            p99999: us(h.value_at_quantile(0.99999)),
            max: us(h.max()),
        }
    }
}

/// Serializes a histogram as base64 of the HdrHistogram V2 deflate format, which
/// other HdrHistogram implementations read too.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    use base64::Engine;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut buf = Vec::new();
    let _ = V2DeflateSerializer::new().serialize(h, &mut buf);
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Reads a histogram written by [`encode_histogram`].
pub fn decode_histogram(s: &str) -> anyhow::Result<Histogram<u64>> {
    use base64::Engine;
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD.decode(s)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("bad histogram: {e:?}"))
}

/// A count as the summary writes it: `7`, `1,234`.
pub fn count(n: u64) -> String {
    match n {
        0..100 => n.to_string(),
        _ => num(n as f64),
    }
}

/// A figure as kvlab prints it: thousands separated from 100 up, else three
/// significant digits or so (`114,555`, `37.5`, `8.42`).
pub fn num(x: f64) -> String {
    if x >= 100.0 {
        let s = format!("{x:.0}");
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up() {
        let mut c = Counts::default();
        c.count(true, Outcome::Hit);
        c.count(true, Outcome::Miss);
        c.count(false, Outcome::Stored);
        c.count(true, Outcome::Error(ErrorKind::Timeout));
        assert_eq!(
            (c.gets, c.sets, c.requests(), c.ok(), c.error_total()),
            (3, 1, 4, 3, 1)
        );
        assert_eq!(c.error(ErrorKind::Timeout), 1);
    }

    #[test]
    fn histogram_roundtrips() {
        let mut h = new_histogram();
        for v in [1_000, 20_000, 3_000_000] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back.max(), h.max());
        let p = Percentiles::of(&back);
        assert!((p.p50 - 20.0).abs() < 0.1, "{p:?}");
    }
}
