//! The timeline as ticks build it: one [`Acc`] per entry (a second, or a
//! minute past the spec's `timeline_seconds`), each entry's histogram sealed
//! (compressed) once every worker has moved past it, so a run of hours holds
//! a few KiB per entry, not a full histogram; then the entries as the
//! result's [`Second`]s.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::spec::{Beat, Tick};
use crate::results::stats::{
    Counts, ErrorKind, Percentiles, decode_histogram, encode_histogram, new_histogram,
};
use crate::results::timeline::{entry_of, span_of};
use crate::results::{CacheSecond, Second};
use crate::workload::Stop;

/// Seconds kept per second for the progress display (workers that lag a
/// second behind still land in theirs).
pub(super) const RECENT: usize = 4;

/// Seconds after which an entry no worker reports any more is sealed.
const SEAL_AFTER: i64 = 3;

/// The timeline as the ticks build it: entries (measured seconds only) by
/// their first second, and one past the last second a tick came for.
#[derive(Default)]
pub(super) struct Timeline {
    pub entries: BTreeMap<i64, Acc>,
    pub end: i64,
}

impl Timeline {
    /// Adds a measured tick to its entry; seals the entries every worker has
    /// left behind.
    pub fn add(&mut self, tick: &Tick, per_second: i64) {
        let at = entry_of(tick.second, per_second);
        self.entries.entry(at).or_default().add(tick);
        self.end = self.end.max(tick.second + 1);
        let done = entry_of((self.end - 1 - SEAL_AFTER).max(0), per_second);
        for (_, acc) in self.entries.range_mut(..done).rev() {
            if !acc.latency.seal() {
                break; // the older ones are sealed already
            }
        }
    }
}

/// A latency histogram, open while its entry fills, then compressed.
pub(super) enum Lat {
    /// Being added to.
    Open(Histogram<u64>),
    /// Compressed ([`encode_histogram`]).
    Sealed(String),
}

impl Lat {
    /// The histogram to add to (a sealed one is opened again: a late tick).
    fn open(&mut self) -> &mut Histogram<u64> {
        if let Lat::Sealed(s) = self {
            *self = Lat::Open(decode_histogram(s).unwrap_or_else(|_| new_histogram()));
        }
        match self {
            Lat::Open(h) => h,
            Lat::Sealed(_) => unreachable!("opened above"),
        }
    }

    /// Compresses an open histogram; false when it was sealed already.
    fn seal(&mut self) -> bool {
        match self {
            Lat::Open(h) => {
                *self = Lat::Sealed(encode_histogram(h));
                true
            }
            Lat::Sealed(_) => false,
        }
    }
}

/// The timeline's entries from what the ticks built: the drain after a
/// duration run's deadline belongs to the entry of its last full second, and
/// each entry spans its width (1 s, or a minute past `per_second`), the last
/// one clipped to the window's end.
pub(super) fn fold_timeline(stop: Stop, per_second: i64, ticks: Timeline) -> Vec<Second> {
    let last_full = match stop {
        Stop::Duration(d) => Some((d.ceil() as i64 - 1).max(0)),
        Stop::Requests(_) => None,
    };
    // The window ends after a duration run's whole seconds (earlier when
    // interrupted), else after the last second a tick came for.
    let end = last_full.map_or(ticks.end, |l| ticks.end.min(l + 1));
    let mut folded: BTreeMap<i64, Acc> = BTreeMap::new();
    for (s, mut acc) in ticks.entries {
        let s = last_full.map_or(s, |l| entry_of(s.min(l), per_second));
        match folded.get_mut(&s) {
            Some(into) => into.fold(&mut acc),
            None => {
                folded.insert(s, acc);
            }
        }
    }
    folded
        .into_iter()
        .map(|(s, mut acc)| acc.second(s, span_of(s, per_second, end)))
        .collect()
}

/// What the workers reported of one second (or of one timeline entry), added up.
pub(super) struct Acc {
    counts: Counts,
    latency: Lat,
    warmup: Counts,
    /// Cache-aside: cache hits, misses and bypassed reads, database reads.
    cache: Option<[u64; 4]>,
}

impl Default for Acc {
    fn default() -> Self {
        Acc {
            counts: Counts::default(),
            latency: Lat::Open(new_histogram()),
            warmup: Counts::default(),
            cache: None,
        }
    }
}

impl Acc {
    /// Adds a worker's second.
    pub fn add(&mut self, tick: &Tick) {
        self.counts.add(&tick.measured.counts);
        let _ = self.latency.open().add(&tick.measured.latency);
        self.warmup.add(&tick.warmup);
        if let Some(l) = &tick.measured.legs {
            l.add_cache_counts(self.cache.get_or_insert([0; 4]));
        }
    }

    /// Adds a measured entry (the warm-up is not folded).
    fn fold(&mut self, o: &mut Acc) {
        self.counts.add(&o.counts);
        let _ = self.latency.open().add(&*o.latency.open());
        if let Some(x) = o.cache {
            let c = self.cache.get_or_insert([0; 4]);
            for (a, b) in c.iter_mut().zip(x) {
                *a += b;
            }
        }
    }

    /// The entry as the progress line shows it.
    pub fn beat(&mut self, second: i64, elapsed: Duration) -> Beat {
        Beat {
            second,
            elapsed,
            requests: self.counts.requests() + self.warmup.requests(),
            p99_us: self.latency.open().value_at_quantile(0.99) as f64 / 1000.0,
            errors: self.counts.error_total() + self.warmup.error_total(),
            cache: self.cache.map(|c| (c[0], c[0] + c[1] + c[2])),
        }
    }

    fn second(&mut self, second: i64, span_s: u32) -> Second {
        let p = Percentiles::of(self.latency.open());
        let c = &self.counts;
        Second {
            second,
            span_s,
            requests: c.requests(),
            errors: c.error_total(),
            timeouts: c.error(ErrorKind::Timeout),
            misses: c.misses,
            p50_us: p.p50,
            p99_us: p.p99,
            p999_us: p.p999,
            histogram: Some(match &self.latency {
                Lat::Open(h) => encode_histogram(h),
                Lat::Sealed(s) => s.clone(),
            }),
            error_kinds: ErrorKind::ALL
                .iter()
                .filter(|&&k| c.error(k) > 0)
                .map(|&k| (k.name().to_string(), c.error(k)))
                .collect(),
            cache: self.cache.map(|c| CacheSecond {
                hits: c[0],
                misses: c[1],
                bypassed: c[2],
                db_reads: c[3],
                ..CacheSecond::default()
            }),
            event: None,
            offered_rps: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the ticks build of `n` GETs in each of `seconds`.
    fn ticks(per_second: i64, seconds: impl IntoIterator<Item = (i64, u64)>) -> Timeline {
        let mut entries: BTreeMap<i64, Acc> = BTreeMap::new();
        let mut end = 0;
        for (s, n) in seconds {
            entries
                .entry(entry_of(s, per_second))
                .or_default()
                .counts
                .gets += n;
            end = end.max(s + 1);
        }
        Timeline { entries, end }
    }

    fn shape(t: &[Second]) -> Vec<(i64, u32, u64)> {
        t.iter().map(|s| (s.second, s.span_s, s.requests)).collect()
    }

    #[test]
    fn entries_left_behind_are_sealed_and_a_late_tick_opens_one_again() {
        let mut t = Timeline::default();
        let tick = |second, ns| {
            let mut measured = crate::results::stats::Recorder::default();
            measured.counts.gets = 1;
            measured.latency.record(ns).unwrap();
            Tick {
                second,
                measured,
                warmup: Counts::default(),
            }
        };
        for s in 0..10 {
            t.add(&tick(s, 1000 * (s as u64 + 1)), 600);
        }
        let sealed = |t: &Timeline, s: i64| matches!(t.entries[&s].latency, Lat::Sealed(_));
        assert!((0..6).all(|s| sealed(&t, s)) && !sealed(&t, 6) && !sealed(&t, 9));
        t.add(&tick(2, 50_000), 600); // late
        let out = fold_timeline(Stop::Duration(10.0), 600, t);
        assert_eq!(out.len(), 10);
        assert_eq!(out[2].requests, 2);
        assert!(out[2].p99_us >= 49.0, "{:?}", out[2]);
        assert!((out[0].p50_us - 1.0).abs() < 0.01, "{:?}", out[0]);
    }

    #[test]
    fn past_its_per_second_part_a_run_keeps_minutes_the_last_one_clipped() {
        // 100 s keeping 10 per second, one request a second, a drain of 5 at 100.
        let seconds = (0..100).map(|s| (s, 1)).chain([(100, 5)]);
        let t = fold_timeline(Stop::Duration(100.0), 10, ticks(10, seconds));
        let s = shape(&t);
        assert_eq!(s.len(), 12);
        assert!(
            s[..10]
                .iter()
                .enumerate()
                .all(|(i, x)| *x == (i as i64, 1, 1))
        );
        // 10..70 whole; 70..100 clipped to the window, with the drain.
        assert_eq!(s[10..], [(10, 60, 60), (70, 30, 35)]);
        assert_eq!(t.iter().map(|s| s.requests).sum::<u64>(), 105);
    }

    #[test]
    fn four_seconds_keeping_two_per_second_end_with_an_entry_of_two() {
        let seconds = [(0, 3), (1, 3), (2, 3), (3, 3), (4, 1)];
        let t = fold_timeline(Stop::Duration(4.0), 2, ticks(2, seconds));
        assert_eq!(shape(&t), [(0, 1, 3), (1, 1, 3), (2, 2, 7)]);
        // A fractional window: its last partial second is in the last entry.
        let t = fold_timeline(Stop::Duration(4.5), 2, ticks(2, seconds));
        assert_eq!(shape(&t), [(0, 1, 3), (1, 1, 3), (2, 3, 7)]);
    }

    #[test]
    fn runs_of_requests_or_interrupted_end_at_their_last_tick() {
        let t = fold_timeline(Stop::Requests(9), 2, ticks(2, (0..71).map(|s| (s, 1))));
        assert_eq!(shape(&t)[2..], [(2, 60, 60), (62, 9, 9)]);
        // Interrupted 20 s into an hour: the minute is clipped to what ran.
        let t = fold_timeline(Stop::Duration(3600.0), 2, ticks(2, (0..20).map(|s| (s, 1))));
        assert_eq!(shape(&t)[2..], [(2, 18, 18)]);
    }
}
