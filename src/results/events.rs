//! What an event during a run did (`--event`): when it happened, and what the
//! timeline shows after it — the database's peak load, the worst p99, the
//! errors by kind, and the time until the run was back near its level before.
//!
//! Past the timeline's per-second part (`load.timeline_seconds`) its entries
//! are minutes. The analysis reads them as they are, rates per second over
//! each entry's span: a minute's "peak" is its mean rate, its p99 the
//! minute's, and a recovery is told to the minute. Events meant to be seen
//! second by second belong in the per-second part (raise
//! `--timeline-seconds` past them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Second;

/// One event of a run and its aftermath.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct EventReport {
    /// The event as given, e.g. `10:restart-cache:2`.
    pub event: String,
    /// Seconds into the measured window when kvlab acted.
    pub at_s: f64,
    /// How long the action took (a restart: until the server answered), ms.
    pub took_ms: f64,
    /// Why the action failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it did, where that needs saying (e.g. `drop-keys-cache`: the
    /// keys deleted, a loss emulated on a server that kept running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Before the event (the last 5 seconds before the timeline entry that
    /// holds it; past the per-second part, the minute before): requests/s,
    /// p99 (µs), database reads/s and hit ratio (cache-aside).
    pub before: Level,
    /// From the event's second on: the highest requests/s the database served
    /// in a timeline entry (its reads in cache-aside, every request
    /// otherwise): in a second, or a minute's mean past the per-second part.
    pub db_peak_rps: u64,
    /// The worst per-second p99 from the event on, µs.
    pub worst_p99_us: f64,
    /// Errors by kind from the event's second until it recovered (or the end).
    pub errors: BTreeMap<String, u64>,
    /// GETs that missed from the event's second until it recovered (or the
    /// end): a server that came back without its data.
    #[serde(default)]
    pub misses: u64,
    /// Seconds from the event until two seconds in a row were back near the
    /// level before (see [`recovered`]); `None`: not within the run.
    pub recovered_after_s: Option<f64>,
}

/// A run's level over some seconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Level {
    /// Requests per second.
    pub rps: f64,
    /// The median of those seconds' p99s, µs (one stalled second does not
    /// set the level).
    pub p99_us: f64,
    /// Database reads per second (cache-aside), or requests per second.
    pub db_rps: f64,
    /// The cache's hit ratio (cache-aside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_ratio: Option<f64>,
    /// Misses over requests.
    #[serde(default)]
    pub miss_ratio: f64,
}

/// The database's load in an entry: its reads in cache-aside, else every request.
fn db_load(s: &Second) -> u64 {
    s.cache.as_ref().map_or(s.requests, |c| c.db_reads)
}

/// The level of `seconds` (empty: zeros), rates per second over their spans.
fn level(seconds: &[Second]) -> Level {
    let n = seconds.iter().map(Second::span).sum::<i64>().max(1) as f64;
    let (hits, misses, bypassed) = seconds
        .iter()
        .filter_map(|s| s.cache.as_ref())
        .fold((0, 0, 0), |(h, m, b), c| {
            (h + c.hits, m + c.misses, b + c.bypassed)
        });
    Level {
        rps: seconds.iter().map(|s| s.requests).sum::<u64>() as f64 / n,
        p99_us: median(seconds.iter().map(|s| s.p99_us).collect()),
        db_rps: seconds.iter().map(db_load).sum::<u64>() as f64 / n,
        hit_ratio: super::aside::hit_ratio(hits, misses, bypassed),
        miss_ratio: miss_ratio(seconds.iter()),
    }
}

/// The median of `v` (0 when empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Misses over requests of `seconds`.
fn miss_ratio<'a>(seconds: impl Iterator<Item = &'a Second>) -> f64 {
    let (m, n) = seconds.fold((0, 0), |(m, n), s| (m + s.misses, n + s.requests));
    m as f64 / n.max(1) as f64
}

/// Whether second `s` is back near `before`: no errors, p99 at most 1.5x the
/// level before (and at most 1 ms above it), the cache's hit ratio at most 5
/// points below it and the share of misses at most 5 points above it.
pub fn recovered(s: &Second, before: &Level) -> bool {
    let p99_ok = s.p99_us <= (before.p99_us * 1.5).max(before.p99_us + 1000.0);
    let hits_ok = match (
        before.hit_ratio,
        s.cache.as_ref().and_then(|c| c.hit_ratio()),
    ) {
        (Some(b), Some(now)) => now >= b - 0.05,
        (Some(_), None) => false,
        (None, _) => true,
    };
    let misses_ok = miss_ratio(std::iter::once(s)) <= before.miss_ratio + 0.05;
    s.errors == 0 && s.requests > 0 && p99_ok && hits_ok && misses_ok
}

impl EventReport {
    /// Fills the aftermath of an event at `at_s` from `timeline` (entries of
    /// the measured window, a second or a minute each).
    pub fn analyse(&mut self, timeline: &[Second]) {
        let first = self.at_s.floor() as i64;
        // The entry holding the event begins at `start` (`first`, or its minute's start).
        let start = timeline
            .iter()
            .find(|s| s.contains(first))
            .map_or(first, |s| s.second);
        // Before it: the entries of the 5 seconds before `start` (a minute's
        // entry overlapping them counts whole).
        let before: Vec<Second> = timeline
            .iter()
            .filter(|s| s.second < start && s.second + s.span() > start - 5)
            .cloned()
            .collect();
        self.before = level(&before);
        let after: Vec<&Second> = timeline
            .iter()
            .filter(|s| s.second + s.span() > first)
            .collect();
        self.db_peak_rps = after
            .iter()
            .map(|s| s.per_s(db_load(s)).round() as u64)
            .max()
            .unwrap_or(0);
        self.worst_p99_us = after.iter().map(|s| s.p99_us).fold(0.0, f64::max);
        // Recovered at the first of two seconds in a row near the level before,
        // after the event's own second.
        let back = after.windows(2).position(|w| {
            w[0].second > first && recovered(w[0], &self.before) && recovered(w[1], &self.before)
        });
        self.recovered_after_s = match (before.is_empty(), back) {
            (false, Some(i)) => Some((after[i].second as f64 - self.at_s).max(0.0)),
            _ => None,
        };
        let until = back.map_or(i64::MAX, |i| after[i].second);
        self.errors.clear();
        self.misses = 0;
        for s in after.iter().filter(|s| s.second < until) {
            self.misses += s.misses;
            for (k, n) in &s.error_kinds {
                *self.errors.entry(k.clone()).or_default() += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CacheSecond;

    fn sec(second: i64, p99_us: f64, hits: u64, misses: u64, errors: u64) -> Second {
        Second {
            second,
            requests: hits + misses,
            errors,
            p99_us,
            error_kinds: (errors > 0)
                .then(|| ("disconnect".to_string(), errors))
                .into_iter()
                .collect(),
            cache: Some(CacheSecond {
                hits,
                misses,
                db_reads: misses,
                ..CacheSecond::default()
            }),
            ..Second::default()
        }
    }

    #[test]
    fn a_cache_restart_shows_its_spike_and_its_recovery() {
        let t = vec![
            sec(0, 300.0, 900, 100, 0),
            sec(1, 310.0, 900, 100, 0),
            sec(2, 2500.0, 100, 900, 40), // the event: the database takes it all
            sec(3, 1800.0, 600, 400, 0),
            sec(4, 320.0, 880, 120, 0),
            sec(5, 300.0, 890, 110, 0),
        ];
        let mut e = EventReport {
            event: "2:restart-cache:0".into(),
            at_s: 2.0,
            ..EventReport::default()
        };
        e.analyse(&t);
        assert_eq!(e.before.hit_ratio, Some(0.9));
        assert_eq!(e.db_peak_rps, 900);
        assert_eq!(e.worst_p99_us, 2500.0);
        assert_eq!(e.errors.get("disconnect"), Some(&40));
        assert_eq!(e.recovered_after_s, Some(2.0));
    }

    #[test]
    fn a_run_that_never_recovers_says_so() {
        let t = vec![
            sec(0, 300.0, 900, 100, 0),
            sec(1, 5000.0, 0, 1000, 3),
            sec(2, 5000.0, 0, 1000, 0),
        ];
        let mut e = EventReport {
            at_s: 1.0,
            ..EventReport::default()
        };
        e.analyse(&t);
        assert_eq!(e.recovered_after_s, None);
        assert_eq!(e.errors.get("disconnect"), Some(&3));
    }

    #[test]
    fn past_the_per_second_part_minutes_are_read_as_rates() {
        let min = |second, p99_us, hits: u64, misses: u64, errors| Second {
            span_s: 60,
            ..sec(second, p99_us, hits * 60, misses * 60, errors)
        };
        let t = vec![
            sec(0, 300.0, 900, 100, 0),
            sec(1, 300.0, 900, 100, 0),
            min(2, 300.0, 900, 100, 0),
            min(62, 2500.0, 500, 500, 40), // holds the event at 70
            min(122, 320.0, 880, 120, 0),
            min(182, 300.0, 890, 110, 0),
        ];
        let mut e = EventReport {
            event: "70:restart-cache:0".into(),
            at_s: 70.0,
            ..EventReport::default()
        };
        e.analyse(&t);
        // The minute before the event's: 1000 req/s, 100 database reads/s.
        assert_eq!((e.before.rps, e.before.db_rps), (1000.0, 100.0));
        assert_eq!(e.before.hit_ratio, Some(0.9));
        assert_eq!((e.db_peak_rps, e.worst_p99_us), (500, 2500.0));
        assert_eq!(e.errors.get("disconnect"), Some(&40));
        // Back at the start of the minute after the event's.
        assert_eq!(e.recovered_after_s, Some(52.0));
    }
}
