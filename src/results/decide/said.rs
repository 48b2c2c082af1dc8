//! The decision's extrapolations in words: every step from the measured copy
//! to the stated load, rendered in one place from the typed figures the
//! decision computed ([`Extrapolated`]), never from inside the steps that
//! computed them.

use super::{Assumptions, Scaled, StatedLoad, TraceSummary, TraceTtl, bytes};
use crate::results::stats::num;
use crate::workload::KeyDistribution;
use crate::workload::trace::by_policy;
use crate::workload::trace::model::OFF_MODEL;

/// What a decision's extrapolations are said from.
pub struct Extrapolated<'a> {
    /// The load as stated (or as recomputed for, with `--from`).
    pub load: &'a StatedLoad,
    /// The load the runs were made for.
    pub measured_for: &'a StatedLoad,
    /// The copy measured, and the fixed-rate runs' rate.
    pub scaled: &'a Scaled,
    /// What kvlab assumed.
    pub assumed: &'a Assumptions,
    /// How the keys are drawn.
    pub distribution: &'a KeyDistribution,
    /// The runs were `--quick`.
    pub quick: bool,
    /// One fixed-rate run's length, s.
    pub run_s: f64,
    /// A server was given by URL (sized by the cores it used).
    pub given_by_url: bool,
    /// The popularity model's check of the carry on the copy.
    pub check: CarryCheck,
    /// The floor a `--cache-ttl` puts under the curve (`None`: no TTL).
    pub ttl: Option<TtlFloor>,
    /// The CPU model of the machine that measured (`None`: not known).
    pub cpu: Option<&'a str>,
}

/// How the copy's hit ratios were carried to the stated keys, and the
/// model's check on the copy.
pub struct CarryCheck {
    /// Keys of the copy.
    pub copy: u64,
    /// Keys stated.
    pub stated: u64,
    /// Each measured point's distance from the model on the copy (carried
    /// minus measured hit ratio); one farther than [`OFF_MODEL`] is carried
    /// by the model alone.
    pub gaps: Vec<f64>,
}

/// What a cache's TTL does to the curve at the stated load: even a cache
/// with room for every key misses `miss` of its reads.
pub struct TtlFloor {
    /// The TTL, s.
    pub ttl_s: u32,
    /// Reads per second at the stated load.
    pub reads_per_s: f64,
    /// The share of reads that miss with room for every key.
    pub miss: f64,
    /// Keys live at a time.
    pub live: f64,
    /// Bytes a key takes in the cache (value plus the assumed overhead).
    pub per_key_bytes: u64,
}

impl Extrapolated<'_> {
    /// Every step from the measured copy to the stated load, one sentence
    /// each (and, for a decision recomputed for another load, the one its
    /// runs were made for, last).
    pub fn said(&self) -> Vec<String> {
        let s = self.scaled;
        let mut out = vec![
            format!("Data: {}.", s.why),
            format!("Rate: {}.", s.rate_why),
            self.check.said(self.distribution),
            "Cores, one method for every row: each server's operations per second at the stated load (from its architecture's measured shares: hits, near-cache hits, reads to replicas, writes, fills, invalidations) divided by its product's operations per core within the goal (its capacity search on this machine, client and servers sharing its cores); each fixed-rate run checks the model: each server's CPU measured there against its product's own search steps at the same operations per second (CPU per operation falls as load rises, so a light run is not held to the cost per operation at capacity). A real server scales less than linearly past a machine.".into(),
            "Memory: a table's size per key, times the stated keys; a cache's memory on the curve and in cache-aside as its base (what it takes holding no key, fitted over the curve's sizes: the items each held against its memory) as is, plus the rest per key times the stated keys, so that it holds the same share of them (a small cache's base is not multiplied); the cache alone's resident memory per key; a figure kvlab could not read is not known, never 0.".into(),
            self.machines(),
        ];
        let l = self.load;
        if let Some(e) = &l.eviction {
            out.push(e.said());
        }
        out.extend(self.ttl.as_ref().map(|t| t.said(self.run_s)));
        if let Some(t) = &l.trace {
            out.push(t.said());
        }
        if !l.observed.is_empty() {
            out.push(format!(
                "Observed (the servers' own counters, read-only): {}.",
                l.observed.join("; ")
            ));
        }
        out.push(round_trips(l));
        out.push(self.assumed.said(self.quick, self.run_s));
        let m = self.measured_for;
        if m != l {
            out.push(format!(
                "Recomputed (kvlab decide --from) from runs made for {} req/s at p99 ≤ {} ms and {} keys; the runs' rates and the copy are as measured then.",
                num(m.rps),
                m.p99_ms,
                num(m.keys as f64)
            ));
        }
        out
    }

    /// The machines and their prices.
    fn machines(&self) -> String {
        let l = self.load;
        if l.deployment.catalogued() {
            return self.shapes();
        }
        format!(
            "Machines and cost: {}; a machine is {} cores and {} GiB at {} {} a month{}. Prices: {}.",
            match l.shared {
                true => "the servers of each architecture share whole machines (--shared)",
                false =>
                    "each server on whole machines of its own (the cache is a second system with machines of its own; --shared packs them)",
            },
            l.machine_cores,
            l.machine_gib,
            num(l.price_machine_month),
            l.currency,
            match self.given_by_url {
                true =>
                    "; a server given by URL is sized by the cores it used (or, where kvlab cannot read them, the cores stated with --target-cores or --cache-cores)",
                false => "",
            },
            match l.example_prices {
                true => format!(
                    "{}: give --price-machine-month or --price-core-hour and --price-gib-hour",
                    self.assumed.policy.examples_said()
                ),
                false => "as given".into(),
            }
        )
    }
}

impl Extrapolated<'_> {
    /// The shapes and their prices, on a catalogued deployment.
    fn shapes(&self) -> String {
        let l = self.load;
        let d = &l.deployment;
        let p = &self.assumed.policy;
        let oldest = d.catalog.as_ref().map_or(String::new(), |c| {
            match c.old {
                true => format!(
                    "; its oldest price dates from {}, over a year before {}: a current list price may differ (give yours with --prices FILE)",
                    c.oldest, d.priced_on
                ),
                false => String::new(),
            }
        });
        format!(
            "Shapes and cost: {}; {}, in {}, a month of {} hours{oldest}. Each server on the cheapest shape that sustains its cores at the stated load (a burstable shape only up to its baseline) and holds its data in memory (a managed cache's after the service's reserve; a machine's or a managed database's after {}% for the system and the server's own); past the largest shape, N of the one that costs least (a cache's shards, a database's read replicas where its writes leave room). A shape's vCPU is taken as one core of the machine that measured ({}); a real vCPU may be a hyperthread, and a server scales less than linearly past a machine.{}",
            d.said(),
            match d
                .catalog
                .as_ref()
                .is_some_and(|c| c.file.starts_with("built in"))
            {
                true => "list prices, on demand",
                false => "the prices of the catalog given",
            },
            l.currency,
            p.hours_per_month,
            p.machine_reserve * 100.0,
            self.cpu.unwrap_or("its CPU model not known"),
            match (d.storage.as_ref(), d.multi_az) {
                (Some(s), Some(f)) => format!(
                    " A managed database's storage at {} a GB-month (at least {} GB), instance and storage × {f} for Multi-AZ.",
                    s.gb_month, s.min_gb
                ),
                (Some(s), None) => format!(
                    " A managed database's storage at {} a GB-month (at least {} GB), Single-AZ (--multi-az for a standby).",
                    s.gb_month, s.min_gb
                ),
                _ => " Disks are not priced.".into(),
            }
        )
    }
}

/// The round trips the runs emulated, or that there were none.
fn round_trips(l: &StatedLoad) -> String {
    let hop = |ms: Option<f64>| ms.map_or("loopback (~30 µs)".to_string(), |m| format!("{m} ms"));
    match (l.rtt_ms.is_some() || l.cache_rtt_ms.is_some(), l.rtt_assumed) {
        (true, assumed) => format!(
            "Round trips: database {}, cache {}, emulated by kvlab on every connection (a delay only: no loss, no bandwidth limit){}.",
            hop(l.rtt_ms),
            hop(l.cache_rtt_ms),
            match assumed {
                true => "; assumed, one hop within a zone, as none was given (--rtt, --cache-rtt; --rtt 0 for loopback)",
                false => "",
            }
        ),
        (false, _) => "Round trips: over loopback (~30 µs); in production each server is a network hop away (give --rtt to emulate one).".into(),
    }
}

impl CarryCheck {
    /// How the measured hit ratios were carried to the stated keys, drawn
    /// by `dist`.
    fn said(&self, dist: &KeyDistribution) -> String {
        let (copy, stated) = (self.copy, self.stated);
        if copy == stated {
            return "Hit ratios: measured on the whole data set (no carry).".into();
        }
        let off = self.gaps.iter().filter(|g| g.abs() > OFF_MODEL).count();
        let widest = self.gaps.iter().map(|g| g.abs()).reduce(f64::max);
        let check = match widest {
            Some(g) => format!(
                "; on the copy the model is within {:.1} points of every measured point (its check){}",
                g * 100.0,
                match off {
                    0 => String::new(),
                    n => format!(
                        ", and {n} point(s) more than {:.0} points from it were no LRU of the items held at the run's end (a short run, a cache not yet evicting): carried by the model alone",
                        OFF_MODEL * 100.0
                    ),
                }
            ),
            None => String::new(),
        };
        format!(
            "Hit ratios: measured on the copy of {} keys and carried to the stated {} keys by the popularity model ({}): each measured point moved by the model's difference between the two key counts at the same share of keys held, what the cache did beyond the model kept{check}; the cache size is picked on the carried curve.",
            num(copy as f64),
            num(stated as f64),
            match dist {
                KeyDistribution::Zipf { theta } =>
                    format!("Che's approximation of an LRU cache for Zipf {theta}"),
                KeyDistribution::Uniform =>
                    "uniform keys: a share of the keys holds the same share of reads at any count"
                        .into(),
                _ => "none for this distribution: carried as measured".into(),
            }
        )
    }
}

impl TtlFloor {
    /// The floor and the live working set, the most memory worth buying;
    /// whether runs of `run_s` seconds could show the expiry.
    fn said(&self, run_s: f64) -> String {
        let (ttl, per_key) = (self.ttl_s, self.per_key_bytes);
        format!(
            "TTL {ttl} s (--cache-ttl): even a cache with room for every key misses {:.1}% of reads at {} reads/s (a key misses 1/(1 + λT) of its reads, λ its reads a second); about {} keys are live at a time (about {} at {per_key} B a key), the most memory worth buying{}.",
            self.miss * 100.0,
            num(self.reads_per_s),
            num(self.live),
            bytes((self.live * per_key as f64) as u64),
            match f64::from(ttl) > run_s {
                true => format!(
                    "; the runs last {} s, too short to show its expiry (the measured curve has none)",
                    num(run_s)
                ),
                false => String::new(),
            },
        )
    }
}

impl TraceSummary {
    /// How the trace's curve was computed, and what the load took from it.
    pub fn said(&self) -> String {
        let s = self;
        format!(
            "Trace: {} ({} lines, {} distinct keys); the load took its {} from it; skew {}; its curve is {} over its {} reads after the first fifth, a read that misses filling the cache and a write invalidating its key, as kvlab's cache-aside does.",
            s.file,
            num(s.lines as f64),
            num(s.distinct_keys as f64),
            match s.taken.is_empty() {
                true => "nothing (flags gave it all)".to_string(),
                false => s.taken.join(", "),
            },
            match (s.zipf_theta, s.zipf_r2) {
                (Some(t), Some(r2)) =>
                    format!("a Zipf exponent of {t:.2} fitted to its key popularity (R² {r2:.2})"),
                _ => "too few repeated keys to fit a Zipf exponent: uniform".into(),
            },
            match (&s.policy, s.sample_rate < 1.0) {
                (Some(p), _) => format!(
                    "simulated for the cache's {p}{}",
                    match s.lines > by_policy::SIMULATED_MAX {
                        true => " over a hash sample of its keys",
                        false => "",
                    }
                ),
                (None, true) => format!(
                    "SHARDS sampling of {:.2}% of its keys",
                    s.sample_rate * 100.0
                ),
                (None, false) => "exact LRU stack distances".into(),
            },
            num(s.reads_counted as f64),
        ) + &ttl_said(s.ttl.as_ref())
    }
}

/// The TTLs a trace's curve was simulated with, as a sentence ("" none).
fn ttl_said(t: Option<&TraceTtl>) -> String {
    let Some(t) = t else {
        return String::new();
    };
    let column = match t.lines_with_ttl {
        0 => "none of its lines carries a TTL".to_string(),
        n => format!(
            "{} of its lines carry a TTL (its TTL column: a key lives its last one from each fill)",
            num(n as f64)
        ),
    };
    match t.cache_ttl_s {
        0 => format!(" TTLs: {column}; the other keys live until evicted."),
        s => format!(" TTLs: {column}; the other keys live {s} s (--cache-ttl)."),
    }
}
