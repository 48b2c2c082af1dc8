//! The accounting of one worker, the same for every client: each request's
//! outcome (hit, miss, stored, error by kind) in the warm-up or the measured
//! window, its latency from the intended start and its service time, stale
//! reads, connection failures, and the once-a-second hand-over of a snapshot.

use std::io;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::Request;
pub use crate::engine::counts::NodeCounts;
use crate::engine::spec::{Spec, Tick, WorkerReport};
use crate::results::ScheduleReport;
use crate::results::stats::{Counts, ErrorKind, Outcome, Recorder};
use crate::workload::OpKind;
use crate::workload::consistency::{Staleness, VersionBoard};

/// What one worker counted so far.
pub struct Tally {
    /// This second's measured requests.
    pub interval: Recorder,
    interval_warm: Counts,
    total: Recorder,
    warm: Counts,
    /// Schedule keeping (open loop only).
    pub schedule: ScheduleReport,
    /// Requests started and not yet finished.
    pub inflight: usize,
    connect_failures: u64,
    /// Sockets re-opened after a failure.
    pub reconnects: u64,
    /// Connections closed and opened again at the end of their life
    /// (`--conn-life`): over the whole run, and in the window.
    pub churned: [u64; 2],
    last_connect_error: Option<String>,
    /// Cache-aside: steps sent per leg (as [`crate::results::stats::Leg::ALL`]).
    pub steps: [u64; 5],
    /// Measured requests redirected for good (MOVED) and for once (ASK).
    pub redirects: [u64; 2],
    /// The near cache's counts (`None`: no near cache).
    pub near: Option<crate::engine::counts::NearCounts>,
    /// With read replicas: what each server (the primary first) was sent.
    pub nodes: Vec<NodeCounts>,
    board: Option<Arc<VersionBoard>>,
    paced: bool,
    /// Each key's value size (bytes read and written).
    sizer: crate::workload::Sizer,
    /// `--ttl`, and when the load ended: a miss after a key's TTL expired.
    ttl: Option<(Duration, Option<Instant>)>,
    fresh: fn() -> Recorder,
}

impl Tally {
    /// An empty tally for a worker of `spec`; `fresh` makes its recorders.
    pub fn new(spec: &Spec, fresh: fn() -> Recorder) -> Tally {
        Tally {
            interval: fresh(),
            interval_warm: Counts::default(),
            total: fresh(),
            warm: Counts::default(),
            schedule: ScheduleReport {
                target_rps: spec.rate.unwrap_or(0.0),
                ..Default::default()
            },
            inflight: 0,
            connect_failures: 0,
            reconnects: 0,
            churned: [0; 2],
            last_connect_error: None,
            steps: [0; 5],
            redirects: [0; 2],
            near: spec.near.map(|n| crate::engine::counts::NearCounts {
                setting: Some(n),
                threads: 1,
                ..Default::default()
            }),
            nodes: match spec.replicas.len() {
                0 => Vec::new(),
                n => vec![NodeCounts::default(); n + 1],
            },
            board: spec.board.clone(),
            paced: spec.rate.is_some(),
            sizer: spec.values.sizer(),
            // When a key was written is known from the versions board, or
            // for a run that only reads, from the load.
            ttl: (spec.ttl_s > 0 && (spec.board.is_some() || !spec.mix.writes()))
                .then(|| (Duration::from_secs(u64::from(spec.ttl_s)), spec.loaded_at)),
            fresh,
        }
    }

    /// Ends request `r` with `outcome` at `done` (`got`: the version a read
    /// returned): ends its write or judges its read when versions are
    /// tracked, and counts it with its latency (errors have none).
    #[inline]
    pub fn finish(
        &mut self,
        r: &Request,
        outcome: Outcome,
        done: Instant,
        got: Option<u64>,
    ) -> Option<Staleness> {
        self.inflight -= 1;
        let get = r.op == OpKind::Get;
        let mut stale = None;
        if let Some(b) = &self.board {
            if get {
                stale = got.map(|v| b.judge(r.key, r.version, v, r.sent));
            } else {
                b.end_write(r.key, r.version, outcome == Outcome::Stored, done);
            }
        }
        if !r.measured {
            self.interval_warm.count(get, outcome);
            return None;
        }
        self.interval.counts.count(get, outcome);
        if matches!(outcome, Outcome::Hit | Outcome::Stored) {
            self.interval.counts.value_bytes += self.sizer.size_of(r.key) as u64;
        }
        if outcome == Outcome::Miss && self.expired(r.key, r.version, r.sent) {
            self.interval.counts.expired += 1;
        }
        if let Some(s) = stale {
            self.interval.checked_read(s);
        }
        if !matches!(outcome, Outcome::Error(_)) {
            self.time(r, done);
        }
        stale.flatten()
    }

    /// Counts measured request `r` as served by server `node` of a target
    /// with read replicas, `stale` as judged by [`Tally::finish`].
    #[inline]
    pub fn served_by(&mut self, node: usize, r: &Request, stale: Option<Staleness>) {
        if !r.measured {
            return;
        }
        if let Some(n) = self.nodes.get_mut(node) {
            match r.op {
                OpKind::Get => n.reads += 1,
                OpKind::Set => n.writes += 1,
            }
            if let Some(s) = stale {
                n.stale += 1;
                n.stale_age_max_ns = n.stale_age_max_ns.max(s.age_ns);
            }
        }
    }

    /// Counts one key of batch read `r`: `key` read with `version` the
    /// newest at its start, found with version `got` (a hit) or not (a miss).
    /// The request itself ends with [`Tally::finish_batch`].
    #[inline]
    pub fn batch_key(&mut self, r: &Request, key: u64, version: u64, got: Option<u64>) {
        let stale = match (&self.board, got) {
            (Some(b), Some(v)) => Some(b.judge(key, version, v, r.sent)),
            _ => None,
        };
        if !r.measured {
            match got {
                Some(_) => self.interval_warm.hits += 1,
                None => self.interval_warm.misses += 1,
            }
            return;
        }
        if got.is_some() {
            self.interval.counts.hits += 1;
            self.interval.counts.value_bytes += self.sizer.size_of(key) as u64;
        } else {
            self.interval.counts.misses += 1;
            if self.expired(key, version, r.sent) {
                self.interval.counts.expired += 1;
            }
        }
        if let Some(s) = stale {
            self.interval.checked_read(s);
        }
    }

    /// Ends batch read `r` of `keys` keys, sent as `commands` commands, at
    /// `done`, failed with `error` (its
    /// keys then go uncounted) or read (each counted by [`Tally::batch_key`]):
    /// one request, one latency.
    #[inline]
    pub fn finish_batch(
        &mut self,
        r: &Request,
        (keys, commands): (u64, u64),
        error: Option<ErrorKind>,
        done: Instant,
    ) {
        self.inflight -= 1;
        if !r.measured {
            self.interval_warm.count_batch(keys, commands, error);
            return;
        }
        self.interval.counts.count_batch(keys, commands, error);
        if error.is_none() {
            self.time(r, done);
        }
    }

    /// Records the latency of measured request `r`, answered at `done`, from
    /// its intended start; paced, its service time from its send too.
    #[inline]
    fn time(&mut self, r: &Request, done: Instant) {
        let lat = done.saturating_duration_since(r.intended).as_nanos() as u64;
        self.interval.latency.saturating_record(lat.max(1));
        if self.paced {
            let svc = done.saturating_duration_since(r.sent).as_nanos() as u64;
            self.interval.service.saturating_record(svc.max(1));
        }
    }

    /// Whether a miss of `key`, read at `sent` with `version` the newest, came
    /// from its TTL: written (or loaded) at least a TTL before the read began.
    #[inline]
    fn expired(&self, key: u64, version: u64, sent: Instant) -> bool {
        let Some((ttl, loaded)) = self.ttl else {
            return false;
        };
        let written = match &self.board {
            Some(b) if version > 0 => b.written_at(key, version),
            _ if version == 0 => loaded,
            _ => None,
        };
        written.is_some_and(|w| sent >= w + ttl)
    }

    /// Open loop: a request left `lag` after its intended time (counted as
    /// late past 1 ms); `measured`: in the window, where its error counts;
    /// `held`: it waited for room in a full pipeline (queueing, counted
    /// apart from kvlab's send-time error).
    #[inline]
    pub fn sent_late(&mut self, lag: Duration, measured: bool, held: bool) {
        super::schedule::note_lag(&mut self.schedule, lag);
        match (measured, held) {
            (false, _) => {}
            (true, true) => self.schedule.held_sends += 1,
            (true, false) => {
                self.interval
                    .send_error
                    .saturating_record(lag.as_nanos() as u64);
            }
        }
    }

    /// Open loop: a request left `ahead` before its intended time (within the
    /// send tolerance); `measured`: in the window, where its error counts.
    #[inline]
    pub fn sent_early(&mut self, ahead: Duration, measured: bool) {
        if measured {
            self.interval
                .send_error
                .saturating_record(ahead.as_nanos() as u64);
        }
    }

    /// Counts a failed connect, keeping its message now and then.
    pub fn connect_failed(&mut self, e: io::Error) {
        self.connect_failures += 1;
        if self.last_connect_error.is_none() || self.connect_failures % 1000 == 1 {
            self.last_connect_error = Some(e.to_string());
        }
    }

    /// Hands this second's counts to the calling thread and starts afresh.
    pub fn send_tick(&mut self, ticks: &Sender<Tick>, second: i64) {
        let rec = std::mem::replace(&mut self.interval, (self.fresh)());
        let warm = std::mem::take(&mut self.interval_warm);
        self.total.add(&rec);
        self.warm.add(&warm);
        let _ = ticks.send(Tick {
            second,
            measured: rec,
            warmup: warm,
        });
    }

    /// The worker's report at its end.
    pub fn report(
        self,
        established: usize,
        (busy_ns, wakes): (Option<u64>, Option<super::super::spec::WakeCounts>),
        window: Duration,
    ) -> WorkerReport {
        WorkerReport {
            wakes,
            measured: self.total,
            warmup: self.warm,
            schedule: self.schedule,
            connect_failures: self.connect_failures,
            reconnects: self.reconnects,
            churned: self.churned,
            established,
            last_connect_error: self.last_connect_error,
            busy_ns,
            window,
            leg_requests: self.steps,
            redirects: self.redirects,
            near: self.near,
            nodes: self.nodes,
        }
    }
}
