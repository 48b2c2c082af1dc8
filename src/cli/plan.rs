//! `kvlab run`'s flags checked, step by step, into a [`RunPlan`]: the target,
//! the counts, when the run stops and how it is paced, the workload, the
//! clients of a sharded run, and the events.

use super::{RunArgs, aside};
use crate::driver::replication::{REPLICAS_KEY, replicas_not_managed, replicas_of};
use crate::error::{UsageError, positive};
use crate::plan::shard::{self, Shard};
use crate::plan::{
    CacheStart, KeyDistribution, LoadShape, Ratio, RunPlan, Stop, TargetSpec, Workload,
};
use crate::products;
use crate::workload::profiles::{self, Profile};
use crate::workload::{LinkDelay, SizeDist};

/// The mix of a workload: SET:GET, value sizes and key popularity.
struct Mix {
    ratio: Ratio,
    /// One size, or the mean of `value_sizes`.
    value_size: usize,
    value_sizes: Option<SizeDist>,
    distribution: KeyDistribution,
}

/// Keys of the data unless `--keys` says.
pub const DEFAULT_KEYS: u64 = 1_000_000;

impl RunArgs {
    /// The flags that need another, or exclude one, checked (the command
    /// line's and a study's `[decide]` alike).
    fn check_combination(&self) -> Result<(), UsageError> {
        let (rate, cache) = (self.rate.is_none(), self.aside.cache.is_none());
        for (wrong, flag, why, fix) in [
            (
                self.duration.is_some() && self.requests.is_some(),
                "--duration/--requests",
                "a run measures a duration or a count of requests, not both",
                "drop one of them",
            ),
            (
                self.arrivals.is_some() && rate,
                "--arrivals",
                "it is how a fixed rate's requests arrive, and --rate is not given",
                "give --rate RPS, or drop it",
            ),
            (
                self.send_slack.is_some() && rate,
                "--send-slack",
                "it is how early a fixed rate's request may leave, and --rate is not given",
                "give --rate RPS, or drop it",
            ),
            (
                self.cache_rtt.is_some() && cache,
                "--cache-rtt",
                "it is the round trip to a cache-aside run's cache, and --cache is not given",
                "give --cache, or drop it (--rtt is the target's)",
            ),
        ] {
            if wrong {
                return Err(UsageError::conflict(flag, why, fix));
            }
        }
        Ok(())
    }

    /// Checks every flag and builds the plan.
    pub fn to_plan(&self) -> Result<RunPlan, UsageError> {
        self.check_combination()?;
        let target = self.target_spec()?;
        let threads = self.counts()?;
        let stop = self.stop()?;
        let warmup_s = self.checked_warmup()?;
        let rate = self.checked_rate()?;
        positive("--timeout", self.timeout, "give seconds, e.g. --timeout 5")?;
        let profile = self.profile()?;
        let mix = self.mix(profile)?;
        let ttl_s = self.ttl_s(&target, profile);
        let mut cache = self.aside.cache_aside()?;
        if let Some(c) = cache.as_mut() {
            c.profile_ttl(self.aside.cache_ttl, profile);
        }
        let (shard, start_at_ms) = self.sharding(&target, cache.is_some(), stop)?;
        let workload = self.workload(mix, ttl_s, profile)?;
        let threads = threads.min(shard::local_connections(shard, self.connections));
        let mut plan = RunPlan {
            near: self.near.near_cache()?,
            shared: self.shared.shared()?,
            cache,
            target,
            workload,
            load: LoadShape {
                connections: self.connections,
                threads: threads.min(self.connections),
                pipeline: self.pipeline,
                stop,
                warmup_s,
                rate,
                arrivals: match &self.arrivals {
                    Some(a) => a.parse()?,
                    None => crate::workload::Arrivals::Poisson,
                },
                rate_shape: self.rate_shape(stop)?,
                send_slack: match &self.send_slack {
                    Some(s) => s.parse()?,
                    None => crate::workload::SendSlack::Auto,
                },
                conn_life: self
                    .conn_life
                    .as_deref()
                    .map(crate::workload::ConnLife::parse)
                    .transpose()?,
                hot_keys: None,
                rtt: self.rtt()?,
                cache_rtt: self.cache_rtt()?,
                timeout_s: self.timeout,
                io: match &self.io {
                    Some(io) => io.parse()?,
                    None => crate::plan::io::IoChoice::Auto,
                },
                shard,
                start_at_ms,
                events: Vec::new(),
                timeline_seconds: crate::plan::check_timeline_seconds(self.timeline_seconds)?,
            },
        };
        plan.load.hot_keys = self.hot_keys(&plan)?;
        plan.check_cache()?;
        plan.check_ttl()?;
        plan.check_batch()?;
        plan.check_near()?;
        plan.check_reads()?;
        plan.check_io()?;
        plan.hold_to_shared()?;
        plan.load.events = aside::events(&self.events, &plan)?;
        let cold = plan
            .cache
            .as_ref()
            .is_some_and(|c| c.start == CacheStart::Cold);
        if cold && self.warmup.is_none() {
            // A cold start is measured from the first request: the curve is the result.
            plan.load.warmup_s = 0.0;
        }
        Ok(plan)
    }

    /// `--warmup`, or its default.
    pub(super) fn warmup_s(&self) -> f64 {
        self.warmup.unwrap_or(2.0)
    }

    /// `--target` with its server, TLS, table and request flags.
    fn target_spec(&self) -> Result<TargetSpec, UsageError> {
        let mut target: TargetSpec = self.target.parse()?;
        let replicas = self.server_opt.iter().any(|(k, _)| k == REPLICAS_KEY);
        if target.external.is_some() && replicas {
            return Err(replicas_not_managed());
        }
        if target.external.is_some() && !self.server_opt.is_empty() {
            return Err(UsageError::conflict(
                "--server-opt",
                "settings apply only to a server kvlab starts",
                format!(
                    "drop --server-opt or use --target {}",
                    products::all_names("|")
                ),
            ));
        }
        target.server_opts = self.server_opt.iter().cloned().collect();
        replicas_of(target.kind.product(), &target.server_opts)?;
        self.tls.apply(&mut target)?;
        target.schema.table_engine = self.table_engine.as_ref().map(|e| e.to_ascii_lowercase());
        target.schema.unlogged = self.unlogged;
        target.schema.recreate = self.recreate;
        target.consistency = match &self.consistency {
            Some(c) => Some(crate::plan::consistency_of(
                target.kind,
                c,
                "--consistency",
            )?),
            None => None,
        };
        target.query_mode = match &self.query_mode {
            Some(m) => Some(crate::plan::query_mode_of(target.kind, m, "--query-mode")?),
            None => None,
        };
        target.read_replicas = self.read_replicas(&target)?;
        target.read_from = self.read_from.as_deref().map(str::parse).transpose()?;
        target.pooler.clone_from(&self.pooler);
        target.pooler_opts = self.pooler_opt.iter().cloned().collect();
        target.check_schema()?;
        Ok(target)
    }

    /// `--read-replica`: each a URL of the target's product.
    fn read_replicas(&self, target: &TargetSpec) -> Result<Vec<crate::plan::Endpoint>, UsageError> {
        self.read_replica
            .iter()
            .map(|url| {
                let t: TargetSpec = url.parse().map_err(|e: UsageError| {
                    UsageError::bad(
                        "--read-replica",
                        e.to_string(),
                        "give a URL, e.g. postgres://user@host:5432/db",
                    )
                })?;
                match (t.kind == target.kind, t.external) {
                    (true, Some(e)) => Ok(e),
                    _ => Err(UsageError::bad(
                        "--read-replica",
                        format!("{url:?} is no URL of a {} server", target.kind.name()),
                        "give a replica of the --target URL, as a URL of the same product",
                    )),
                }
            })
            .collect()
    }

    /// Checks `--keys`, `--key-prefix`, `--connections`, `--threads` and
    /// `--pipeline`; the client threads asked for.
    fn counts(&self) -> Result<usize, UsageError> {
        if self.keys == Some(0) {
            return Err(UsageError::bad(
                "--keys",
                "0 keys",
                "give at least 1, e.g. --keys 100000",
            ));
        }
        if self.key_prefix.is_empty() {
            return Err(UsageError::bad(
                "--key-prefix",
                "an empty prefix would let kvlab write keys of other applications",
                "give a prefix such as kvlab:",
            ));
        }
        let threads = self.threads.unwrap_or_else(cores);
        for (flag, n, most) in [
            ("--connections", self.connections, 100_000),
            ("--threads", threads, 1024),
            ("--pipeline", self.pipeline, 100_000),
        ] {
            if n == 0 || n > most {
                return Err(UsageError::bad(
                    flag,
                    format!("{n} is out of range"),
                    format!("give 1 to {most}"),
                ));
            }
        }
        Ok(threads)
    }

    /// When the measured window ends: `--requests`, else `--duration` (10 s).
    fn stop(&self) -> Result<Stop, UsageError> {
        Ok(match (self.duration, self.requests) {
            (_, Some(0)) => {
                return Err(UsageError::bad(
                    "--requests",
                    "0 requests",
                    "give at least 1",
                ));
            }
            (_, Some(n)) => Stop::Requests(n),
            (Some(d), None) => Stop::Duration(positive(
                "--duration",
                d,
                "give seconds, e.g. --duration 10",
            )?),
            (None, None) => Stop::Duration(10.0),
        })
    }

    /// `--warmup`, checked.
    fn checked_warmup(&self) -> Result<f64, UsageError> {
        let warmup = self.warmup_s();
        if !(warmup.is_finite() && warmup >= 0.0) {
            return Err(UsageError::bad(
                "--warmup",
                format!("{warmup} is not a number of seconds"),
                "give 0 or more, e.g. --warmup 2",
            ));
        }
        Ok(warmup)
    }

    /// `--hot-keys`, its share settled for the plan's reads per second.
    fn hot_keys(&self, plan: &RunPlan) -> Result<Option<crate::workload::HotKeys>, UsageError> {
        let Some(s) = &self.hot_keys else {
            return Ok(None);
        };
        let w = &plan.workload;
        let reads = plan.load.rate.map(|r| r * (1.0 - w.ratio.set_fraction()));
        crate::workload::HotKeys::parse(s)?
            .settled(reads, w.keys)
            .map(Some)
    }

    /// `--rate-shape`, its times defaulting from the window.
    fn rate_shape(
        &self,
        stop: crate::plan::Stop,
    ) -> Result<crate::workload::RateShape, UsageError> {
        let window = match stop {
            crate::plan::Stop::Duration(s) => Some(s),
            crate::plan::Stop::Requests(_) => None,
        };
        match (&self.rate_shape, self.rate) {
            (Some(s), Some(_)) => crate::workload::RateShape::parse(s, window),
            (Some(_), None) => Err(UsageError::conflict(
                "--rate-shape",
                "a shape moves a fixed rate",
                "give --rate, the peak, e.g. --rate 20000 --rate-shape sine",
            )),
            (None, _) => Ok(Default::default()),
        }
    }

    /// `--rate`, checked: positive, and at least one request per connection
    /// per hour.
    fn checked_rate(&self) -> Result<Option<f64>, UsageError> {
        let Some(r) = self.rate else {
            return Ok(None);
        };
        let r = positive("--rate", r, "give requests per second, e.g. --rate 10000")?;
        if r < self.connections as f64 / 3600.0 {
            return Err(UsageError::bad(
                "--rate",
                format!(
                    "{r} req/s over {} connections is below one request per connection per hour",
                    self.connections
                ),
                "raise --rate or lower --connections",
            ));
        }
        Ok(Some(r))
    }

    /// The production workload `--profile` names.
    fn profile(&self) -> Result<Option<&'static Profile>, UsageError> {
        let Some(n) = &self.profile else {
            return Ok(None);
        };
        profiles::profile(n).map(Some).ok_or_else(|| {
            UsageError::bad(
                "--profile",
                format!("unknown profile '{n}'"),
                format!("use {}", profiles::names()),
            )
        })
    }

    /// `--ratio`, `--value-size` and `--key-distribution`, each from the flag,
    /// else the profile, else the default (read-only, 256 B, uniform).
    fn mix(&self, profile: Option<&Profile>) -> Result<Mix, UsageError> {
        let ratio: Ratio = match (&self.ratio, profile) {
            (Some(r), _) => r.parse()?,
            (None, Some(p)) => p.ratio,
            (None, None) => Ratio { set: 0, get: 1 },
        };
        let sizes: SizeDist = match (&self.value_size, profile) {
            (Some(v), _) => v.parse()?,
            (None, Some(p)) => p.value_sizes.parse()?,
            (None, None) => SizeDist::Fixed { size: 256 },
        };
        let (value_size, value_sizes) = crate::workload::sizes_of(sizes);
        let distribution: KeyDistribution = match (&self.key_distribution, profile) {
            (Some(d), _) => d.parse()?,
            (None, Some(p)) => KeyDistribution::Zipf { theta: p.theta },
            (None, None) => KeyDistribution::Uniform,
        };
        Ok(Mix {
            ratio,
            value_size,
            value_sizes,
            distribution,
        })
    }

    /// `--ttl`, else a profile's TTL where keys expire (a cache target, no
    /// cache in front), else none.
    fn ttl_s(&self, target: &TargetSpec, profile: Option<&Profile>) -> u32 {
        match (self.ttl, profile) {
            (Some(t), _) => t,
            (None, Some(p)) if self.aside.cache.is_none() && target.kind.expires() => p.ttl_s,
            _ => 0,
        }
    }

    /// The workload: `mix`, the keys, the writer beside the load and `--batch`.
    fn workload(
        &self,
        mix: Mix,
        ttl_s: u32,
        profile: Option<&Profile>,
    ) -> Result<Workload, UsageError> {
        let background_writes = self
            .background_writes
            .map(|w| {
                positive(
                    "--background-writes",
                    w,
                    "give writes per second, e.g. --background-writes 65",
                )
            })
            .transpose()?;
        Ok(Workload {
            keys: self.keys.unwrap_or(DEFAULT_KEYS),
            value_size: mix.value_size,
            value_sizes: mix.value_sizes,
            ratio: mix.ratio,
            distribution: mix.distribution,
            key_prefix: self.key_prefix.clone(),
            load: !self.no_load,
            seed: self.seed,
            background_writes,
            ttl_s,
            profile: profile.map(|p| p.name.to_string()),
            batch: crate::plan::parse_batch(self.batch.as_deref())?,
            trace: None,
        })
    }

    /// `--rtt`: the round trip emulated to the target.
    fn rtt(&self) -> Result<Option<LinkDelay>, UsageError> {
        self.rtt
            .as_deref()
            .map(|s| LinkDelay::parse(s, "--rtt"))
            .transpose()
    }

    /// `--cache-rtt` (or `--rtt`): the round trip emulated to the cache.
    fn cache_rtt(&self) -> Result<Option<LinkDelay>, UsageError> {
        match (&self.cache_rtt, self.aside.cache.is_some()) {
            (Some(s), _) => LinkDelay::parse(s, "--cache-rtt").map(Some),
            (None, true) => self.rtt(),
            (None, false) => Ok(None),
        }
    }

    /// `--shard` and `--start-at`, checked against the target and the load.
    fn sharding(
        &self,
        target: &TargetSpec,
        cache: bool,
        stop: Stop,
    ) -> Result<(Option<Shard>, Option<u64>), UsageError> {
        let start_at = match &self.start_at {
            Some(s) => {
                let ms = shard::parse_start_at(s)?;
                shard::check_start_at(ms, self.warmup_s(), std::time::SystemTime::now())?;
                Some(ms)
            }
            None => None,
        };
        let Some(s) = &self.shard else {
            return Ok((None, start_at));
        };
        let shard: Shard = s.parse()?;
        if target.external.is_none() {
            return Err(UsageError::bad(
                "--shard",
                "the clients of one run must drive one server, and a managed target gives each its own",
                "start it once (kvlab serve --target NAME) and give its URL as --target",
            ));
        }
        if cache {
            return Err(UsageError::conflict(
                "--shard",
                "cache-aside runs cannot be split over clients yet",
                "drop --shard or --cache",
            ));
        }
        if target.kind.is_sql() && !self.no_load {
            return Err(UsageError::bad(
                "--shard",
                "the clients of a database run cannot share the load of kvlab's table",
                "load it once with a run without --shard (e.g. --requests 1), then start the clients with --no-load",
            ));
        }
        let requests = match stop {
            Stop::Requests(n) => Some(n),
            Stop::Duration(_) => None,
        };
        shard.check(self.connections, requests)?;
        Ok((Some(shard), start_at))
    }
}

/// The machine's cores: the default of `--threads`.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
