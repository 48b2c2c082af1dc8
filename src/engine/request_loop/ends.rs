//! A worker's two ends around its loop: its connections and state made,
//! opened and put on the run's clock at the start; at the end, what the
//! schedule called for but never sent, and the sockets let go once the run
//! releases them. Nothing here runs per request.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::replay::{self, Replay};
use super::{Client, Conn, Net, Tally, Worker, marks, schedule};
use crate::engine::clock::Timing;
use crate::engine::pacer::Pacer;
use crate::engine::reactor::Reactor;
use crate::engine::spec::{ConnPlan, Spec};
use crate::workload::trace::feed::Cursor;

/// The most a socket's read buffer may hold: twice the largest reply a
/// request of the run can be answered with (the largest value for each key
/// of the largest batch read, with room for the protocol's framing), and at
/// least four times its first size. A server that sends more in one reply
/// has gone wrong: the socket is failed (a protocol error), not grown.
fn read_limit(spec: &Spec, first: usize) -> usize {
    let keys = spec.batch.as_ref().map_or(1, |b| b.max());
    let reply = keys * (spec.values.size() + 512) + (64 << 10);
    (2 * reply).max(4 * first)
}

/// The worker's connections, one per plan, none open yet.
pub(super) fn conns<Cl: Client>(
    client: &Cl,
    plans: Vec<ConnPlan>,
    now: Instant,
) -> Vec<Conn<Cl::Conn>> {
    // Sockets a redirect adds later are covered too.
    let optional = (0..64)
        .filter(|&s| client.optional(s))
        .fold(0, |m, s| m | 1 << s);
    plans
        .into_iter()
        .enumerate()
        .map(|(slot, p)| Conn {
            pipes: Vec::with_capacity(client.sockets()),
            slot,
            state: client.conn(),
            index: p.index,
            keys: p.keys,
            quota: p.quota,
            due: now,
            full: false,
            room_at: now,
            held: false,
            queued: None,
            life: super::churn::Life::ENDLESS,
            refused: false,
            optional,
        })
        .collect()
}

/// The outbound half a paced worker folds into its schedule: the shortest
/// of its sockets' emulated links, when every socket has one (zero
/// otherwise, and with a near cache, whose hits answer as the application
/// writes, not as the wire sees it).
fn folded_half<Cl: Client>(spec: &Spec, client: &Cl) -> Duration {
    if spec.near.is_some() {
        return Duration::ZERO;
    }
    (0..client.sockets())
        .map(|s| client.link(s).map(|d| d.half()))
        .min()
        .flatten()
        .unwrap_or(Duration::ZERO)
}

impl<'a> Worker<'a> {
    /// The worker of `spec`, its sockets on
    /// `reactor`, its draws seeded by `seed`, its `conns` connections paced
    /// as one; `trace`: a replay's requests (else `None`).
    pub(super) fn new<Cl: Client>(
        spec: &'a Spec,
        client: &Cl,
        reactor: Reactor,
        (seed, conns): (u64, usize),
        trace: Option<Cursor>,
        now: Instant,
    ) -> Worker<'a> {
        let (w, r) = client.buffers();
        // A replay keeps the trace's times; `rate` is their mean.
        let pacer = spec.rate.filter(|_| spec.trace.is_none()).map(|r| {
            Pacer::new(r, spec.share.total, spec.arrivals)
                .shaped(spec.rate_shape)
                .with_slack(spec.send_slack, conns)
                .folding(folded_half(spec, client))
        });
        let mut tally = Tally::new(spec, Cl::recorder);
        if let Some(p) = pacer {
            tally.schedule.batch_window_us = p.lead.as_secs_f64() * 1e6;
            tally.schedule.arrivals = Some(p.arrivals.name().to_string());
            tally.schedule.rate_shape = (!p.shape.is_steady()).then_some(p.shape);
        }
        if trace.is_some() {
            tally.schedule.batch_window_us = replay::LEAD.as_secs_f64() * 1e6;
        }
        Worker {
            spec,
            net: Net {
                reactor,
                buffers: (w, r, read_limit(spec, r)),
                connect_timeout: spec.timeout.min(Duration::from_secs(2)),
                seed,
                inflight: spec.pipeline.max(1) * 2,
            },
            tally,
            timing: Timing::placeholder(now),
            pacer,
            mix: spec.mix,
            rng: crate::workload::rng(seed),
            quota_left: None,
            hot: None,
            next_due: now,
            attempts_left: 0,
            again: false,
            draining: false,
            extra: Vec::with_capacity(spec.batch.as_ref().map_or(0, |b| b.max())),
            replay: trace.map(Replay::new),
            links: marks::LinkMarks::new(pacer.map_or(Duration::ZERO, |p| p.lead.min(p.fold))),
            dues: std::collections::BinaryHeap::new(),
            backlog: Vec::with_capacity(16),
            ready: Vec::with_capacity(1024),
        }
    }

    /// Opens every connection (counting each in `opened`, stopping at
    /// `shutdown`) and refuses those that did not open; returns the
    /// connections established.
    pub(super) fn open_conns<Cl: Client>(
        &mut self,
        client: &Cl,
        conns: &mut [Conn<Cl::Conn>],
        shutdown: &AtomicBool,
        opened: &AtomicUsize,
        now: Instant,
    ) -> usize {
        for c in conns.iter_mut() {
            if shutdown.load(Ordering::Relaxed) {
                break;
            }
            self.open_all(client, c, now);
            opened.fetch_add(1, Ordering::Relaxed);
        }
        self.refuse_unopened(conns)
    }

    /// Puts the worker on the run's clock: each connection's first request
    /// is due at the start, or at its place in the pacer's schedule (queued).
    pub(super) fn set_clock<S>(&mut self, conns: &mut [Conn<S>], timing: Timing) {
        self.timing = timing;
        self.hot = self
            .spec
            .hot_keys
            .map(|h| super::burst::Burst::new(&h, self.spec.keys, &timing));
        if let Some(p) = self.pacer.as_mut() {
            p.origin = timing.measure_start;
        }
        for c in conns.iter_mut() {
            self.new_life(c, timing.t0);
            c.due = match self.pacer {
                Some(p) => p.first_due(timing.t0, c.index, &mut self.rng),
                None => timing.t0,
            };
            if self.pacer.is_some() && !c.refused {
                self.queue_due(c);
            }
        }
    }

    /// Counts the requests the schedule called for but that were never sent
    /// (the window ended at `window_end`); a replay's reader may then stop.
    pub(super) fn count_unsent<S>(
        &mut self,
        conns: &[Conn<S>],
        window_end: Instant,
        shutdown: &AtomicBool,
    ) {
        let timing = self.timing;
        if let (Some(p), Some(deadline)) = (self.pacer, timing.deadline) {
            for c in conns.iter().filter(|c| c.quota != Some(0)) {
                let gap = p.mean_gap(c.due, deadline);
                self.tally.schedule.unsent += schedule::unsent(c.due, deadline, gap);
            }
        }
        // Trace replay: what was meant for the window but never sent.
        if let Some(mut rp) = self.replay.take()
            && let Some(deadline) = timing.deadline
            && !shutdown.load(Ordering::Relaxed)
        {
            self.tally.schedule.unsent += rp.unsent(timing.t0, deadline.min(window_end));
        }
    }

    /// Waits until the run is `release`d, then lets every socket go.
    pub(super) fn release<S>(&mut self, conns: &mut [Conn<S>], release: &AtomicBool) {
        while !release.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_micros(500));
        }
        for c in conns.iter_mut() {
            for p in c.pipes.iter_mut() {
                p.deregister(&mut self.net.reactor);
            }
        }
    }
}
