//! What one point is and what it gives back: the resolved [`Spec`] the workers
//! run, each worker's share ([`ConnPlan`]) and links to the caller ([`Links`]),
//! the per-second [`Tick`] each worker hands over, the [`Observer`] that
//! watches a run, a worker's [`WorkerReport`] and the merged [`EngineReport`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::mpsc::Sender;
use std::time::{Duration, SystemTime};

use crate::driver::Connector;
use crate::results::stats::{Counts, Recorder};
use crate::results::{ScheduleReport, Second};
use crate::workload::{KeyDistribution, KeyGen, OpMix, Stop, Values, WritePolicy};

/// One point, resolved: everything the workers need.
#[derive(Clone, Debug)]
pub struct Spec {
    /// How to open connections.
    pub connector: Connector,
    /// Key prefix bytes.
    pub key_prefix: Vec<u8>,
    /// Value generator/verifier.
    pub values: Values,
    /// Key count.
    pub keys: u64,
    /// Key distribution.
    pub distribution: KeyDistribution,
    /// GET/SET mix.
    pub mix: OpMix,
    /// Total connections.
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// In-flight requests per connection.
    pub pipeline: usize,
    /// Warm-up before measuring.
    pub warmup: Duration,
    /// End of the measured phase.
    pub stop: Stop,
    /// Open-loop total rate, if paced.
    pub rate: Option<f64>,
    /// How the open loop's requests arrive.
    pub arrivals: crate::workload::Arrivals,
    /// How the rate moves over the window (`rate` its peak).
    pub rate_shape: crate::workload::RateShape,
    /// How early the open loop may send a request (`--send-slack`).
    pub send_slack: crate::workload::SendSlack,
    /// How long each connection lives before it reconnects (`None`: the run).
    pub conn_life: Option<crate::workload::ConnLife>,
    /// A burst of reads on a few keys (`--hot-keys`), its share settled.
    pub hot_keys: Option<crate::workload::HotKeys>,
    /// The round trip emulated to the target (`None`: none).
    pub link: Option<crate::workload::LinkDelay>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// The I/O interface asked for (`--io`).
    pub io: crate::plan::io::IoChoice,
    /// Seed for the workers' random generators.
    pub seed: u64,
    /// Expiry of written keys, seconds (0: never; caches only).
    pub ttl_s: u32,
    /// Keys per GET (`--batch`); `None`: one.
    pub batch: Option<crate::workload::BatchSizes>,
    /// When this run's load of the keys ended (their TTL runs from before
    /// then); `None`: not loaded by this run.
    pub loaded_at: Option<std::time::Instant>,
    /// Versions of written values, when stale reads are measured.
    pub board: Option<Arc<crate::workload::consistency::VersionBoard>>,
    /// Cache-aside: the cache in front of `connector` (the database).
    pub aside: Option<AsideSpec>,
    /// A near cache in each worker, read before the server (`--near-cache`).
    pub near: Option<crate::plan::near::NearCache>,
    /// The target's read replicas: reads go to them as `read_from` says,
    /// writes to `connector` (the primary).
    pub replicas: Vec<Connector>,
    /// Where reads go when there are replicas.
    pub read_from: crate::plan::reads::ReadFrom,
    /// Sharded targets: the node serving each slot when the point began.
    pub topology: Option<Arc<crate::driver::Topology>>,
    /// Which of the run's connections this process opens (all of them unless
    /// the run is split over several client processes).
    pub share: crate::plan::shard::Share,
    /// The wall-clock instant the measured phase starts (warm-up begins
    /// `warmup` before it); `None`: as soon as every connection is open.
    pub start_at: Option<SystemTime>,
    /// Trace replay: the trace streamed to the workers, one cursor each
    /// (requests then come from it, at its times; `rate` is its mean rate).
    pub trace: Option<Arc<crate::workload::trace::feed::Feed>>,
    /// Seconds at the start of the window the timeline keeps per second;
    /// after them, one entry per minute (see [`crate::results::timeline`]).
    pub timeline_seconds: u32,
}

impl Spec {
    /// Whether any of the point's connections use TLS (the target, its
    /// replicas, a cache-aside run's cache).
    pub fn uses_tls(&self) -> bool {
        self.connector.tls()
            || self.replicas.iter().any(|r| r.tls())
            || self.aside.as_ref().is_some_and(|a| a.cache.tls())
    }

    /// A point that writes `keys` keys once each, in key order, on one
    /// connection: no warm-up, pacing, versions, TTL or cache. Every other point
    /// starts from it and names what differs (`Spec { …, ..Spec::writes(…) }`),
    /// so no caller lists every field.
    pub fn writes(connector: Connector, key_prefix: Vec<u8>, values: Values, keys: u64) -> Spec {
        Spec {
            connector,
            key_prefix,
            values,
            keys,
            distribution: KeyDistribution::Sequential,
            mix: OpMix::new(crate::workload::Ratio { set: 1, get: 0 }),
            connections: 1,
            threads: 1,
            pipeline: 1,
            warmup: Duration::ZERO,
            stop: Stop::Requests(keys),
            rate: None,
            arrivals: crate::workload::Arrivals::Poisson,
            rate_shape: crate::workload::RateShape::Steady,
            send_slack: crate::workload::SendSlack::Auto,
            conn_life: None,
            hot_keys: None,
            link: None,
            timeout: Duration::from_secs(5),
            io: crate::plan::io::IoChoice::Auto,
            seed: 1,
            ttl_s: 0,
            batch: None,
            loaded_at: None,
            board: None,
            aside: None,
            near: None,
            replicas: Vec::new(),
            read_from: Default::default(),
            topology: None,
            share: crate::plan::shard::Share::all(1),
            start_at: None,
            trace: None,
            timeline_seconds: crate::plan::TIMELINE_SECONDS,
        }
    }
}

/// The cache of a cache-aside point.
#[derive(Clone, Debug)]
pub struct AsideSpec {
    /// How to open cache connections.
    pub cache: Connector,
    /// What writes do to the cache.
    pub policy: WritePolicy,
    /// Expiry of cache entries, seconds (0: never).
    pub ttl_s: u32,
    /// The round trip emulated to the cache (`None`: none).
    pub link: Option<crate::workload::LinkDelay>,
}

/// One worker's second of the run.
pub struct Tick {
    /// Second index from the start of measuring (negative: warm-up).
    pub second: i64,
    /// Measured requests that finished in this second.
    pub measured: Recorder,
    /// Warm-up requests that finished in this second.
    pub warmup: Counts,
}

/// One finished second, as an [`Observer`] sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Beat {
    /// Its index from the start of measuring (negative: warm-up).
    pub second: i64,
    /// Time from the start of the load to its end.
    pub elapsed: Duration,
    /// Requests that finished in it (measured or warm-up).
    pub requests: u64,
    /// Their 99th percentile latency, µs (measured requests only).
    pub p99_us: f64,
    /// Errors among them.
    pub errors: u64,
    /// Cache-aside, measured reads: the cache's hits and its lookups (hits,
    /// misses and reads that went around it).
    pub cache: Option<(u64, u64)>,
}

/// Live view of a run, for progress display and for sampling resources.
pub trait Observer {
    /// Connections opened (or attempted) so far, of `total`.
    fn connecting(&mut self, _done: usize, _total: usize) {}
    /// All connections are open and the load starts now.
    fn started(&mut self, _warmup: Duration) {}
    /// All connections are open; the load starts in `left` (a start instant
    /// set ahead), then warms up for `warmup`.
    fn waiting(&mut self, left: Duration, warmup: Duration) {
        let _ = left;
        self.started(warmup);
    }
    /// The measured phase begins now.
    fn measure_started(&mut self) {}
    /// A second finished (its requests measured or warm-up); told once most
    /// workers reported it, up to a second after it ended.
    fn second(&mut self, _beat: &Beat) {}
    /// A worker's second (counts and histograms), as it arrives; a
    /// `--metrics` endpoint adds them up.
    fn tick(&mut self, _tick: &Tick) {}
    /// Second `s` of the measured window begins now (0: the window's start,
    /// right after [`Observer::measure_started`]); on time, within a few ms.
    fn second_begins(&mut self, _s: i64) {}
    /// All workers stopped.
    fn measure_ended(&mut self) {}
}

/// An [`Observer`] that shows nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// What a point measured.
pub struct EngineReport {
    /// Measured requests: counts and latency.
    pub measured: Recorder,
    /// Warm-up requests (counts only).
    pub warmup: Counts,
    /// Seconds of the measured phase.
    pub timeline: Vec<Second>,
    /// Length of the measured window.
    pub window: Duration,
    /// Schedule keeping (open loop).
    pub schedule: Option<ScheduleReport>,
    /// Failed connection attempts.
    pub connect_failures: u64,
    /// Connections re-established mid-run.
    pub reconnects: u64,
    /// Connections renewed at the end of their life (`--conn-life`): over
    /// the whole run, and in the window.
    pub churned: [u64; 2],
    /// Connections open when the load started.
    pub established: usize,
    /// Last connection error message, if any.
    pub last_connect_error: Option<String>,
    /// Fraction of the window the workers were running or runnable (0..1), if known.
    pub client_busy: Option<f64>,
    /// Stopped early by the shutdown flag.
    pub interrupted: bool,
    /// Cache-aside: steps sent per leg over warm-up and measured phase.
    pub leg_requests: [u64; 5],
    /// Sharded targets: measured requests redirected for good (MOVED) and
    /// for once (ASK).
    pub redirects: [u64; 2],
    /// The near caches' counts, every worker's added (`None`: none).
    pub near: Option<super::counts::NearCounts>,
    /// With read replicas: what each server (the primary first) was sent.
    pub servers_sent: Vec<super::counts::NodeCounts>,
    /// Sharded targets: the nodes serving slots when the point began.
    pub nodes: Option<usize>,
    /// Wall-clock start of the measured phase.
    pub window_start: SystemTime,
    /// With a start instant: how long after it this process saw its measured
    /// phase begin, and how long before the warm-up had to begin every
    /// connection was open.
    pub start: Option<StartReport>,
    /// Every worker's wake-ups and context switches in the window, added
    /// (`None`: one worker's are unknown).
    pub wakes: Option<WakeCounts>,
    /// The I/O interface the workers used, and why where `auto` came to epoll.
    pub io: Option<super::reactor::Chosen>,
}

/// How a run with a wall-clock start instant kept it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartReport {
    /// How late the measured phase began after the start instant.
    pub late: Duration,
    /// How long before the warm-up had to begin every connection was open.
    pub margin: Duration,
}

/// What one connection of this worker is to do.
pub struct ConnPlan {
    /// Index among all connections of the run.
    pub index: usize,
    /// Its key generator.
    pub keys: KeyGen,
    /// Measured requests it may issue (`None`: until the deadline).
    pub quota: Option<u64>,
}

/// What a worker hands back when it ends.
pub struct WorkerReport {
    /// The loop's wake-ups and the thread's context switches in the window.
    pub wakes: Option<WakeCounts>,
    /// Measured requests.
    pub measured: Recorder,
    /// Requests issued during warm-up.
    pub warmup: Counts,
    /// Schedule keeping (open loop only).
    pub schedule: ScheduleReport,
    /// Connection attempts that failed.
    pub connect_failures: u64,
    /// Connections re-established after a failure.
    pub reconnects: u64,
    /// Connections renewed at the end of their life: whole run, window.
    pub churned: [u64; 2],
    /// Connections open when the load started.
    pub established: usize,
    /// The last connection error seen, if any.
    pub last_connect_error: Option<String>,
    /// Nanoseconds this thread ran or waited to run during the measured window.
    pub busy_ns: Option<u64>,
    /// Length of the measured window as this worker saw it.
    pub window: Duration,
    /// Cache-aside: steps sent per leg over warm-up and measured phase (as
    /// [`crate::results::stats::Leg::ALL`]), for the servers' counters.
    pub leg_requests: [u64; 5],
    /// Measured requests redirected for good (MOVED) and for once (ASK).
    pub redirects: [u64; 2],
    /// The near cache's counts (`None`: no near cache).
    pub near: Option<super::counts::NearCounts>,
    /// With read replicas: what each server (the primary first) was sent.
    pub nodes: Vec<super::counts::NodeCounts>,
}

/// What a worker shares with the thread that runs the point.
pub struct Links<'a> {
    /// Set to stop early (Ctrl-C).
    pub shutdown: &'a AtomicBool,
    /// Where the once-a-second snapshots go.
    pub ticks: Sender<Tick>,
    /// Connections opened (or attempted) so far, for progress.
    pub opened: &'a AtomicUsize,
    /// Set once the end of the run has been sampled: connections may close
    /// (closing 1000 database sessions costs the server CPU that is not the run's).
    pub release: &'a AtomicBool,
    /// Trace replay: this worker's requests (`None`: drawn by the workload).
    pub trace: Option<crate::workload::trace::feed::Cursor>,
    /// The interface the run's workers use (resolved once per point).
    pub io: super::reactor::IoKind,
}

/// What waiting cost a worker over the measured window: how often its loop
/// woke (a return from its wait: the timer, replies, or both) and how often
/// its thread was switched out.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WakeCounts {
    /// Returns from the loop's wait.
    pub wakes: u64,
    /// Context switches, voluntary and not.
    pub context_switches: u64,
}

impl std::ops::Add for WakeCounts {
    type Output = WakeCounts;

    /// Both counts added.
    fn add(self, b: WakeCounts) -> WakeCounts {
        WakeCounts {
            wakes: self.wakes + b.wakes,
            context_switches: self.context_switches + b.context_switches,
        }
    }
}
