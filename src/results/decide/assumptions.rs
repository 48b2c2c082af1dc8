//! What a decision assumes, in one place: the policy (kvlab's defaults where
//! a team states nothing: prices, the machine, the round trip, the saving
//! the rule asks of a cache), which `kvlab decide --from` may change, and
//! the method (how kvlab measures: run lengths, search steps, the copy, the
//! curve's sizes, the cache loss, the near caches, the host's limits), which
//! it may not: `--from` runs nothing. `decision.json` carries both
//! (`assumptions`) beside what was measured; the extrapolations are said
//! from them. Defined here, beside the decision's other data, because the
//! result files are read without the code that measured them.

use serde::{Deserialize, Serialize};

use crate::results::stats::num;

/// What one decision assumed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assumptions {
    /// What a team may state instead; `--from` may change it.
    pub policy: Policy,
    /// How kvlab measured; `--from` cannot change it.
    pub method: Method,
}

/// kvlab's policy where the team states nothing.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Price of a core for an hour where none is given (an example, in
    /// [`EXAMPLE_CURRENCY`]).
    pub example_core_hour: f64,
    /// Price of a GiB of memory for an hour where none is given (an example).
    pub example_gib_hour: f64,
    /// Hours in a month: a machine priced by the hour, by the month.
    pub hours_per_month: f64,
    /// Cores of one production machine where none is given.
    pub machine_cores: f64,
    /// Memory of one production machine where none is given, GiB.
    pub machine_gib: f64,
    /// The share of the database alone's monthly cost cache-aside must save
    /// (with fewer machines) to be kept where both meet the goal
    /// (`--keep-saving`, a percentage there).
    pub keep_saving: f64,
    /// The round trip to each server kvlab starts where none is given: one
    /// hop within a zone, ms.
    pub same_zone_rtt_ms: f64,
    /// The least saving a month, in the prices' currency, for cache-aside to
    /// be kept where both meet the goal (`--keep-saving-month`).
    #[serde(default)]
    pub keep_saving_month: f64,
    /// The share of a virtual machine's or a managed database's memory not
    /// for the data (the system, connections, the server's own): a shape
    /// holds a server whose data fits the rest.
    #[serde(default = "machine_reserve")]
    pub machine_reserve: f64,
    /// The rule weighs cache-aside with its database sized to carry a cache
    /// loss's peak (`--survive-cache-loss`), not as sized for its steady load.
    #[serde(default)]
    pub survive_cache_loss: bool,
}

/// [`Policy::machine_reserve`] of a decision saved before it was written.
fn machine_reserve() -> f64 {
    KVLAB.policy.machine_reserve
}

/// How kvlab measures a decision.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Method {
    /// Seconds each measured run lasts, unless `--duration`; `--quick`'s.
    pub run_s: [f64; 2],
    /// Rates a capacity search tries after its closed-loop run; `--quick`'s.
    pub search_steps: [usize; 2],
    /// The most keys the measured copy holds; `--quick`'s.
    pub copy_keys: [u64; 2],
    /// The share of this machine's available memory the copy may take.
    pub copy_memory_share: f64,
    /// Bytes a key takes beside its value, for the copy's size.
    pub key_overhead_bytes: u64,
    /// The cache's sizes on the curve, shares of the copy's data (with
    /// [`Method::cache_base_mb`] beside), and one with no limit.
    pub curve_shares: [f64; 3],
    /// Memory a cache needs for its own use beside its data, MiB: a limit
    /// below it fails writes.
    pub cache_base_mb: u64,
    /// Cache-aside's size is picked where the database's load (its misses
    /// and the writes) is at most this share of its capacity.
    pub db_headroom: f64,
    /// The cache is lost this many seconds into its run.
    pub loss_at_s: i64,
    /// Seconds the cache-loss run lasts; `--quick`'s.
    pub loss_run_s: [f64; 2],
    /// A near cache holds this share of the copy's keys (at least
    /// [`Method::near_min_keys`]).
    pub near_share: f64,
    /// The fewest keys a near cache holds.
    pub near_min_keys: u64,
    /// The TTL of a near cache in front of the database alone, s: its stale
    /// reads are bounded by it.
    pub near_ttl_s: u32,
    /// The rate sweeps reach this many decades each side of the stated rate.
    pub sweep_decades: f64,
    /// Other processes' CPU past this many cores makes a step busy.
    pub host_others_cores: f64,
    /// CPU steal past this share of the host's CPU makes a step busy.
    pub host_steal_share: f64,
    /// A server kvlab did not start is driven at most at this many times
    /// the stated rate, unless `--max-rps`.
    #[serde(default = "foreign_rate_factor")]
    pub foreign_rate_factor: f64,
    /// ... with at most the client connections it serves plus this many,
    /// unless `--max-connections`.
    #[serde(default = "foreign_more_connections")]
    pub foreign_more_connections: usize,
}

/// [`Method::foreign_rate_factor`] of a decision saved before it was written.
fn foreign_rate_factor() -> f64 {
    KVLAB.method.foreign_rate_factor
}

/// [`Method::foreign_more_connections`] of a decision saved before it was
/// written.
fn foreign_more_connections() -> usize {
    KVLAB.method.foreign_more_connections
}

/// The currency of kvlab's example prices.
pub const EXAMPLE_CURRENCY: &str = "USD";

/// What kvlab assumes today.
pub const KVLAB: Assumptions = Assumptions {
    policy: Policy {
        example_core_hour: 0.04,
        example_gib_hour: 0.005,
        hours_per_month: 730.0,
        machine_cores: 16.0,
        machine_gib: 64.0,
        keep_saving: 0.10,
        same_zone_rtt_ms: 0.2,
        keep_saving_month: 0.0,
        machine_reserve: 0.25,
        survive_cache_loss: false,
    },
    method: Method {
        run_s: [5.0, 3.0],
        search_steps: [5, 3],
        copy_keys: [1_000_000, 100_000],
        copy_memory_share: 0.25,
        key_overhead_bytes: crate::workload::KEY_OVERHEAD_BYTES,
        curve_shares: [0.05, 0.15, 0.4],
        cache_base_mb: 4,
        db_headroom: 0.8,
        loss_at_s: 3,
        loss_run_s: [12.0, 8.0],
        near_share: 0.1,
        near_min_keys: 1000,
        near_ttl_s: 1,
        sweep_decades: 2.0,
        host_others_cores: 0.25,
        host_steal_share: 0.05,
        foreign_rate_factor: 2.0,
        foreign_more_connections: 8,
    },
};

impl Default for Assumptions {
    /// [`KVLAB`]: what a decision saved before `assumptions` was written
    /// assumed.
    fn default() -> Assumptions {
        KVLAB
    }
}

impl Method {
    /// Index of the figure for `quick` in a `[full, quick]` pair.
    fn at(quick: bool) -> usize {
        usize::from(quick)
    }

    /// Seconds each run lasts.
    pub fn run_s(&self, quick: bool) -> f64 {
        self.run_s[Self::at(quick)]
    }

    /// Rates a capacity search tries after its closed-loop run.
    pub fn search_steps(&self, quick: bool) -> usize {
        self.search_steps[Self::at(quick)]
    }

    /// The most keys the copy holds.
    pub fn copy_keys(&self, quick: bool) -> u64 {
        self.copy_keys[Self::at(quick)]
    }

    /// Seconds the cache-loss run lasts.
    pub fn loss_run_s(&self, quick: bool) -> f64 {
        self.loss_run_s[Self::at(quick)]
    }

    /// The keys of a near cache for a copy of `keys`.
    pub fn near_keys(&self, keys: u64) -> u64 {
        ((keys as f64 * self.near_share + 1e-9).floor() as u64).max(self.near_min_keys)
    }

    /// The rates' factors of the sweeps: 10^(k/6) over
    /// [`Method::sweep_decades`] each side (a hundredth to a hundred times:
    /// where a cache starts to pay is often further than ten times away).
    pub fn rate_factors(&self) -> impl Iterator<Item = f64> + use<> {
        let k = (self.sweep_decades * 6.0).round() as i32;
        (-k..=k).map(|k| 10f64.powf(k as f64 / 6.0))
    }
}

impl Policy {
    /// A machine's price for a month from hourly prices of its cores and
    /// memory.
    pub fn machine_month(&self, cores: f64, gib: f64, core_hour: f64, gib_hour: f64) -> f64 {
        (cores * core_hour + gib * gib_hour) * self.hours_per_month
    }

    /// The example prices, said (in [`EXAMPLE_CURRENCY`]; a month is
    /// [`Policy::hours_per_month`], said in [`Assumptions::said`]).
    pub fn examples_said(&self) -> String {
        format!(
            "kvlab's examples ({} a core-hour, {} a GiB-hour)",
            self.example_core_hour, self.example_gib_hour
        )
    }
}

impl Assumptions {
    /// The method and the rule as one line of the extrapolations, for a run
    /// `quick` or not, of `run_s` seconds.
    pub fn said(&self, quick: bool, run_s: f64) -> String {
        let m = &self.method;
        let pct = |s: f64| format!("{}%", (s * 1000.0).round() / 10.0);
        format!(
            "Assumed (decision.json's assumptions): runs of {} s, capacity searches of {} steps after a closed loop; the copy at most {} keys and {} of the available memory ({} bytes a key beside its value); the curve at {} of the copy's data (plus {} MiB for the cache's own use) and with no limit; cache-aside's size where the database's load is at most {} of its capacity; the cache lost {} s into a run of {} s; a month of {} hours; near caches of {} of the copy's keys (at least {}), {} s TTL in front of the database; a step busy past {} cores of other processes or {} steal; a server kvlab did not start driven at most at {}x the stated rate with the connections it serves plus {}, unless --max-rps and --max-connections. The rule keeps cache-aside where the database alone cannot meet the goal, or where it saves {} of the cost{}{}; {} reserved of a machine's or a managed database's memory for the system and the server's own. --from may change the policy (the deployment, prices, machines, --keep-saving, --keep-saving-month, --survive-cache-loss), not the method.",
            run_s,
            m.search_steps(quick),
            num(m.copy_keys(quick) as f64),
            pct(m.copy_memory_share),
            m.key_overhead_bytes,
            m.curve_shares
                .iter()
                .map(|&s| pct(s))
                .collect::<Vec<_>>()
                .join(", "),
            m.cache_base_mb,
            pct(m.db_headroom),
            m.loss_at_s,
            m.loss_run_s(quick),
            self.policy.hours_per_month,
            pct(m.near_share),
            num(m.near_min_keys as f64),
            m.near_ttl_s,
            m.host_others_cores,
            pct(m.host_steal_share),
            m.foreign_rate_factor,
            m.foreign_more_connections,
            pct(self.policy.keep_saving),
            match self.policy.keep_saving_month > 0.0 {
                true => format!(
                    " and {} a month in the prices' currency",
                    num(self.policy.keep_saving_month)
                ),
                false => String::new(),
            },
            match self.policy.survive_cache_loss {
                true => ", weighing cache-aside with its database sized to survive a cache loss",
                false => "",
            },
            pct(self.policy.machine_reserve),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_reaches_a_hundredth_to_a_hundred_times() {
        let f: Vec<f64> = KVLAB.method.rate_factors().collect();
        assert_eq!(f.len(), 25);
        assert!((f[0] - 0.01).abs() < 1e-12 && (f[24] - 100.0).abs() < 1e-9);
        assert_eq!(f[12], 1.0);
    }

    #[test]
    fn a_decision_saved_without_assumptions_reads_kvlabs() {
        #[derive(Deserialize)]
        struct Saved {
            #[serde(default)]
            assumptions: Assumptions,
        }
        let s: Saved = serde_json::from_str("{}").unwrap();
        assert_eq!(s.assumptions, KVLAB);
        let back: Assumptions =
            serde_json::from_str(&serde_json::to_string(&KVLAB).unwrap()).unwrap();
        assert_eq!(back, KVLAB);
    }
}
