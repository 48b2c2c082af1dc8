//! How a run went over time: one [`Second`] of the timeline (an entry of one
//! second, or of a minute past the run's per-second part: [`entry_of`],
//! [`span_of`]) and how well an open-loop schedule was kept
//! ([`ScheduleReport`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One entry of the timeline: a second of the measured window, or, past its
/// first `load.timeline_seconds` seconds, a minute (`span_s` > 1). Counts are
/// the entry's whole; a rate per second is a count over [`Second::span`]
/// ([`Second::per_s`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Second {
    /// Seconds since measuring began (an entry's first second).
    pub second: i64,
    /// Seconds the entry covers from `second`: 1 in the timeline's per-second
    /// part, up to 60 in its per-minute part (the last entry of a duration
    /// run clipped to the window's end). Absent in the JSON when 1 (and in
    /// results from before entries could be wider).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub span_s: u32,
    /// Requests that finished in this entry.
    pub requests: u64,
    /// Errors among them.
    pub errors: u64,
    /// Timeouts among the errors.
    pub timeouts: u64,
    /// Misses.
    pub misses: u64,
    /// 50th percentile latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// 99.9th percentile latency, µs (0 in results from before it was kept).
    #[serde(default)]
    pub p999_us: f64,
    /// The second's latency histogram (HdrHistogram V2 deflate, base64, ns),
    /// kept in the results of a sharded run so their timelines merge exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    /// Errors by kind (only the kinds that occurred).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_kinds: BTreeMap<String, u64>,
    /// Cache-aside: what the cache did in this second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSecond>,
    /// What kvlab did to a server during this second (`--event`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The rate the schedule offered over this entry, req/s (a shaped rate,
    /// `--rate-shape`, only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
}

impl Default for Second {
    fn default() -> Self {
        Second {
            second: 0,
            span_s: 1,
            requests: 0,
            errors: 0,
            timeouts: 0,
            misses: 0,
            p50_us: 0.0,
            p99_us: 0.0,
            p999_us: 0.0,
            histogram: None,
            error_kinds: BTreeMap::new(),
            cache: None,
            event: None,
            offered_rps: None,
        }
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The width of the timeline's entries past its per-second part, seconds.
pub const MINUTE: i64 = 60;

/// The first second of the timeline entry that second `s` of the window is
/// kept in: `s` itself within the first `per_second` seconds (and in the
/// warm-up, before 0), else the first second of its minute after them
/// (`per_second`, `per_second + 60`, ...).
pub fn entry_of(s: i64, per_second: i64) -> i64 {
    if s < per_second {
        s
    } else {
        per_second + (s - per_second) / MINUTE * MINUTE
    }
}

/// How many seconds the entry starting at `start` covers when the window
/// ends at second `end` (exclusive): 1 within the first `per_second`
/// seconds, else a minute clipped to the end (at least 1).
pub fn span_of(start: i64, per_second: i64, end: i64) -> u32 {
    if start < per_second {
        1
    } else {
        (end - start).clamp(1, MINUTE) as u32
    }
}

impl Second {
    /// Seconds the entry covers (1 at least, whatever the file says).
    pub fn span(&self) -> i64 {
        i64::from(self.span_s.max(1))
    }

    /// Whether second `s` of the window falls in this entry.
    pub fn contains(&self, s: i64) -> bool {
        (self.second..self.second + self.span()).contains(&s)
    }

    /// A count of this entry as a rate per second (`n` over its span).
    pub fn per_s(&self, n: u64) -> f64 {
        n as f64 / self.span() as f64
    }

    /// Requests per second over the entry.
    pub fn rps(&self) -> f64 {
        self.per_s(self.requests)
    }

    /// The middle of the entry, seconds since measuring began (where a
    /// chart plots its rate).
    pub fn midpoint(&self) -> f64 {
        self.second as f64 + self.span() as f64 / 2.0
    }
}

/// One second of a cache-aside run, from kvlab's side and the cache's own.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CacheSecond {
    /// Reads the cache answered with a value.
    pub hits: u64,
    /// Reads the cache did not have.
    pub misses: u64,
    /// Reads that went around an unreachable cache (to the database).
    pub bypassed: u64,
    /// Reads the database answered (the misses and the bypassed reads).
    pub db_reads: u64,
    /// Keys the cache evicted in this second (its own counter; none when it
    /// could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evictions: Option<u64>,
    /// The cache's memory in use at the end of the second, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Items the cache held at the end of the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
}

impl CacheSecond {
    /// Hits over lookups (bypassed reads count as lookups that missed);
    /// `None` when nothing was looked up.
    pub fn hit_ratio(&self) -> Option<f64> {
        super::aside::hit_ratio(self.hits, self.misses, self.bypassed)
    }
}

/// How well an open-loop run kept its schedule.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ScheduleReport {
    /// Requested total rate (requests per second).
    pub target_rps: f64,
    /// Requests sent more than 1 ms after their intended time.
    pub late_requests: u64,
    /// Largest gap between a request's intended and actual send, in ms.
    pub max_lag_ms: f64,
    /// Requests the schedule called for before the end that were never sent.
    pub unsent: u64,
    /// The most a request was sent before its intended time, in µs: the
    /// send tolerance (it is then timed from its actual send).
    #[serde(default)]
    pub batch_window_us: f64,
    /// How the requests arrived: `poisson` or `uniform` (`None`: a replay,
    /// or a result from before the choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<String>,
    /// How the rate moved over the window (`--rate-shape`; `target_rps` its
    /// peak); `None`: steady.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_shape: Option<crate::workload::RateShape>,
    /// How far sends in the window were from their intended times, early or
    /// late, µs (`None`: not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_error_us: Option<crate::results::stats::Percentiles>,
    /// Sends in the window that waited for room on their connection (its
    /// pipeline was full at their time): queueing, which their latency shows,
    /// left out of `send_error_us`.
    #[serde(default, skip_serializing_if = "crate::results::stats::is_zero")]
    pub held_sends: u64,
    /// Those errors as a histogram (ns, as `histogram`), so clients' results
    /// merge exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_error_histogram: Option<String>,
    /// Set when the run did not carry the offered rate: the one line that says
    /// so (the run is then not valid: its throughput is not the target's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_sustained: Option<String>,
}

impl ScheduleReport {
    /// Sets the send errors from `h` (ns); none when nothing was sent.
    pub fn set_send_errors(&mut self, h: &hdrhistogram::Histogram<u64>) {
        if h.is_empty() {
            return;
        }
        self.send_error_us = Some(crate::results::stats::Percentiles::of(h));
        self.send_error_histogram = Some(crate::results::stats::encode_histogram(h));
    }

    /// Adds `o`'s send errors to this report's (exactly, from the histograms).
    fn merge_send_errors(&mut self, o: &ScheduleReport) {
        let decode = |s: &Option<String>| {
            s.as_deref()
                .and_then(|s| crate::results::stats::decode_histogram(s).ok())
        };
        match (
            decode(&self.send_error_histogram),
            decode(&o.send_error_histogram),
        ) {
            (Some(mut a), Some(b)) => {
                let _ = a.add(&b);
                self.set_send_errors(&a);
            }
            (None, Some(b)) => self.set_send_errors(&b),
            _ => {}
        }
    }

    /// Adds another worker's or client's report (rates are equal; counts add;
    /// lags take the max; the first shortfall stands).
    pub fn merge(&mut self, o: &ScheduleReport) {
        self.target_rps = self.target_rps.max(o.target_rps);
        self.late_requests += o.late_requests;
        self.max_lag_ms = self.max_lag_ms.max(o.max_lag_ms);
        self.unsent += o.unsent;
        self.held_sends += o.held_sends;
        self.batch_window_us = self.batch_window_us.max(o.batch_window_us);
        if self.arrivals.is_none() {
            self.arrivals.clone_from(&o.arrivals);
        }
        self.rate_shape = self.rate_shape.or(o.rate_shape);
        self.merge_send_errors(o);
        if self.not_sustained.is_none() {
            self.not_sustained.clone_from(&o.not_sustained);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_past_the_per_second_part_fall_into_minutes() {
        let at = |s| entry_of(s, 600);
        assert_eq!([at(-2), at(0), at(599)], [-2, 0, 599]);
        assert_eq!([at(600), at(659), at(660), at(3599)], [600, 600, 660, 3540]);
        // Per-second part of 2: 0, 1, then minutes from 2.
        assert_eq!(
            [
                entry_of(1, 2),
                entry_of(2, 2),
                entry_of(61, 2),
                entry_of(62, 2)
            ],
            [1, 2, 2, 62]
        );
    }

    #[test]
    fn spans_are_a_minute_clipped_to_the_window() {
        // A 630 s run keeping 600 s per second: its last minute has 30 s.
        assert_eq!(span_of(599, 600, 630), 1);
        assert_eq!(span_of(600, 600, 630), 30);
        assert_eq!(span_of(600, 600, 7200), 60);
        // A 4 s run keeping 2 s per second: 0, 1 and an entry of 2 s.
        assert_eq!([span_of(1, 2, 4), span_of(2, 2, 4)], [1, 2]);
        assert_eq!(span_of(2, 2, 2), 1, "never empty");
    }

    #[test]
    fn a_span_of_one_is_left_out_of_the_json_and_read_back_when_absent() {
        let s = Second {
            second: 3,
            requests: 10,
            ..Second::default()
        };
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("span_s"), "{text}");
        assert_eq!(serde_json::from_str::<Second>(&text).unwrap().span_s, 1);
        let m = Second {
            second: 600,
            span_s: 60,
            requests: 600,
            ..Second::default()
        };
        let back: Second = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!((m.rps(), m.midpoint()), (10.0, 630.0));
        assert!(m.contains(600) && m.contains(659) && !m.contains(660) && !m.contains(599));
    }
}
