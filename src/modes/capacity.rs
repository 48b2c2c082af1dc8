//! Capacity search: the highest request rate a target sustains open-loop with
//! p99 (and, if given, p50 and p99.9) under their limits, no errors, and the
//! rate carried, found by a bounded bisection over `--rate` on one server,
//! after a closed-loop run that bounds the search; a rate fails only when a
//! second run at it fails too. It ends with a bracket
//! (the highest pass, the lowest failure above it) and the headroom at the
//! answer. Latency is always from each request's intended send time.

mod limits;

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Result, bail};

use crate::plan::RunPlan;
use crate::results::RunResult;
pub use crate::results::capacity::{Capacity, MoreLimits, Step};
use crate::runner::{self, RunOptions};
use crate::servers::ManagedServer;
use crate::workload::draws::{self, Phase};
pub use limits::{CARRIED, check_limits, client_limited, headroom, judge};

/// How far a search goes: the paced rates it tries after its closed-loop
/// run, and the rate it must conclude about (a decision's stated rate),
/// tried before it ends wherever every rate tried above it failed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reach {
    /// Paced rates after the closed loop.
    pub steps: usize,
    /// The rate the search brackets down to, when one is stated.
    pub floor: Option<f64>,
}

/// Searches within `p99_ms` and the `more` limits with at most `reach.steps`
/// paced rates after the closed-loop run (a failing rate is run twice and
/// fails only if both runs fail), then the stated rate `reach.floor` where
/// every rate tried above it failed,
/// against `server`, already running (started for the purpose, or a study's),
/// or the plan's external target when `None`. Ctrl-C ends it with the
/// steps it has (a run it cut short is not one).
pub fn search_on(
    plan: &RunPlan,
    server: Option<&ManagedServer>,
    (p99_ms, more): (f64, MoreLimits),
    reach: Reach,
    opts: RunOptions,
    shutdown: &AtomicBool,
    on_step: &mut dyn FnMut(&Step),
) -> Result<Capacity> {
    check_limits(p99_ms, more)?;
    let mut runs = Runs {
        plan: plan.clone(),
        seed: plan.workload.seed,
        runs: 0,
        server,
        opts,
        shutdown,
        p99_ms,
        more,
    };
    let mut out = Capacity {
        p99_ms,
        limits: more,
        bracket: None,
        headroom: Vec::new(),
        capacity_rps: None,
        client_limited_at: None,
        capped_at: None,
        steps: Vec::new(),
        cleanup: Vec::new(),
    };
    let mut record = |out: &mut Capacity, step: Step| {
        on_step(&step);
        out.steps.push(step);
    };
    // A server kvlab did not start: the search said, and held to --max-rps.
    let cap = announce(plan, opts);
    let first = runs.measure(cap)?;
    runs.plan.workload.load = false; // loaded once
    let mut search = Bisection::new(first.totals.throughput_rps, cap);
    let step = first_step(first, cap, (p99_ms, more), &mut out);
    if cap.is_some() && !step.passed {
        search.failed_above = cap;
    }
    record(&mut out, step);
    if out.capped_at.is_some() {
        return Ok(out);
    }
    if search.bound <= 0.0 {
        bail!("the closed-loop run served nothing; cannot search");
    }
    runs.paced(reach.steps, &mut search, &mut out, &mut record)?;
    if let Some(floor) = reach.floor {
        runs.floor(floor, &mut search, &mut out, &mut record)?;
    }
    // Bisection keeps every failure above the best pass.
    out.bracket = out
        .capacity_rps
        .zip(search.failed_above)
        .map(|(pass, fail)| [pass, fail]);
    Ok(out)
}

/// Whether the stated rate `floor` is still to be tried after the paced
/// steps `tried` (rate, passed) found `capacity`: none passed at or above
/// it, a rate above it failed (on the server's side or kvlab's) and none
/// below it did, and it was not tried: the search has not yet concluded
/// anything about it.
fn floor_untried(tried: &[(f64, bool)], capacity: Option<f64>, floor: f64) -> bool {
    let near = |r: f64| (r - floor).abs() <= floor * 0.001;
    let failed = || tried.iter().filter(|t| !t.1).map(|t| t.0);
    floor > 0.0
        && capacity.is_none_or(|c| c < floor)
        && failed().any(|r| r > floor)
        && failed().all(|r| r > floor)
        && !tried.iter().any(|t| near(t.0))
}

/// Says how a search will drive the servers of `plan` kvlab did not start;
/// the rate it is held to (`--max-rps`), if any.
fn announce(plan: &RunPlan, opts: RunOptions) -> Option<f64> {
    let foreign = plan.foreign();
    if foreign.is_empty() {
        return None;
    }
    let cap = plan.shared.max_rps;
    let names: Vec<String> = foreign.iter().map(|(f, e)| format!("{f} {e}")).collect();
    crate::runner::note(
        opts,
        format!(
            "kvlab: the capacity search drives {} (not kvlab's) with {} connection(s): {}",
            names.join(" and "),
            plan.load.connections,
            match cap {
                Some(m) => format!("first at {m:.0} req/s, then rates up to it (--max-rps); a capacity found there is a lower bound"),
                None => "first closed loop (as fast as it answers), then rates up to 1.1x that (8x if every rate passes); --max-rps and --max-connections bound it".into(),
            }
        ),
    );
    cap
}

/// The search's first run as its step: the closed loop, or the run at the
/// cap (`--max-rps`), judged: within the goal, the capacity is at least the
/// cap and the search ends there (`out` says so).
fn first_step(
    first: RunResult,
    cap: Option<f64>,
    (p99_ms, more): (f64, MoreLimits),
    out: &mut Capacity,
) -> Step {
    let Some(at) = cap else {
        return closed_loop_step(first);
    };
    let verdict = judge(&first, at, p99_ms, more);
    if verdict.is_ok() {
        out.capacity_rps = Some(at);
        out.capped_at = Some(at);
        out.headroom = headroom(&first, p99_ms, more);
    }
    let limited = verdict
        .is_err()
        .then(|| client_limited(&first, p99_ms))
        .flatten();
    if limited.is_some() {
        out.client_limited_at = Some(at);
    }
    Step {
        rate: Some(at),
        passed: verdict.is_ok(),
        reason: verdict.err().map(|why| match &limited {
            Some(l) => format!("{why} ({l})"),
            None => why,
        }),
        client_limited: limited.is_some(),
        result: first,
    }
}

/// The closed-loop run as the search's first step: it bounds the search, and
/// passes when it had no errors.
fn closed_loop_step(first: RunResult) -> Step {
    Step {
        rate: None,
        passed: first.totals.errors == 0,
        reason: (first.totals.errors > 0).then(|| format!("{} errors", first.totals.errors)),
        client_limited: false,
        result: first,
    }
}

/// The runs of one search: its plan against its server, judged by its limits.
struct Runs<'a> {
    plan: RunPlan,
    /// The search's seed: run `n` draws from its [`Phase::Step`]`(n)`.
    seed: u64,
    /// Runs made so far.
    runs: u32,
    server: Option<&'a ManagedServer>,
    opts: RunOptions,
    shutdown: &'a AtomicBool,
    p99_ms: f64,
    more: MoreLimits,
}

/// One run at a rate, judged.
struct Tried {
    result: RunResult,
    /// Passed, or why not (with why kvlab limited it, where it did).
    verdict: Result<(), String>,
    /// It failed on kvlab's side.
    client_limited: bool,
}

impl Runs<'_> {
    /// Runs the plan at `rate` (`None`: closed loop), naming the point on the
    /// live metrics endpoint.
    fn measure(&mut self, rate: Option<f64>) -> Result<RunResult> {
        self.plan.load.rate = rate;
        // Each step draws its own keys: none replays an earlier one's.
        self.plan.workload.seed = draws::seed(self.seed, Phase::Step(self.runs));
        self.runs += 1;
        if let Some(m) = crate::runner::metrics::installed() {
            m.set_point(&match rate {
                None => "capacity: closed loop".to_string(),
                Some(r) => format!("capacity: {r:.0} req/s"),
            });
        }
        runner::measure(&self.plan, self.server, self.opts, self.shutdown)
    }

    /// Runs the plan at `rate` and judges the run.
    fn judged(&mut self, rate: f64) -> Result<Tried> {
        let result = self.measure(Some(rate))?;
        let mut verdict = judge(&result, rate, self.p99_ms, self.more);
        let limited = verdict
            .is_err()
            .then(|| client_limited(&result, self.p99_ms))
            .flatten();
        if let (Err(why), Some(l)) = (verdict.as_mut(), &limited) {
            *why = format!("{why} ({l})");
        }
        Ok(Tried {
            result,
            verdict,
            client_limited: limited.is_some(),
        })
    }
}

impl Runs<'_> {
    /// At most `steps` paced rates, each the bisection's next, a failure run
    /// again ([`Runs::again`]); a rate kvlab itself could not offer ends the
    /// search where one passed, else it goes on below. Each outcome is taken
    /// into `out` and `search`, each run goes to `record`.
    fn paced(
        &mut self,
        steps: usize,
        search: &mut Bisection,
        out: &mut Capacity,
        record: &mut dyn FnMut(&mut Capacity, Step),
    ) -> Result<()> {
        let shutdown = self.shutdown;
        // A run Ctrl-C cut short ends the search with the steps it has.
        let stopped = || shutdown.load(Ordering::SeqCst);
        for _ in 0..steps {
            if stopped() {
                break;
            }
            let rate = search.next_rate();
            let tried = match self.judged(rate) {
                Err(_) if stopped() => break,
                tried => tried?,
            };
            let more_threads = out.client_limited_at.is_none();
            let again = self.again(rate, tried, more_threads, &mut |s| record(out, s))?;
            let Some(tried) = again else { break };
            // Still limited by kvlab above a rate that passed, the search ends
            // there (a lower bound, not a limit); with none passed yet it goes on
            // below, where kvlab's own work is lighter too.
            if tried.client_limited {
                out.client_limited_at = Some(out.client_limited_at.map_or(rate, |r| r.min(rate)));
                let ends = out.capacity_rps.is_some();
                let note = match ends {
                    true => "; kvlab's limit, not the server's",
                    false => "; kvlab's limit, not the server's: a lower rate next",
                };
                record(out, tried.step(rate, note));
                if ends || !search.below(rate) {
                    break;
                }
                continue;
            }
            let passed = tried.verdict.is_ok();
            if passed {
                out.capacity_rps = Some(rate);
                out.headroom = headroom(&tried.result, self.p99_ms, self.more);
            }
            record(out, tried.step(rate, ""));
            if !search.record(rate, passed) {
                break;
            }
        }
        Ok(())
    }

    /// The stated rate `floor` tried where the search has concluded nothing
    /// about it yet ([`floor_untried`]) and the cap allows it: its outcome
    /// taken into `out` and `search`, each run to `record`.
    fn floor(
        &mut self,
        floor: f64,
        search: &mut Bisection,
        out: &mut Capacity,
        record: &mut dyn FnMut(&mut Capacity, Step),
    ) -> Result<()> {
        let tried: Vec<(f64, bool)> = out
            .steps
            .iter()
            .filter_map(|s| Some((s.rate?, s.passed)))
            .collect();
        let shutdown = self.shutdown;
        let stopped = || shutdown.load(Ordering::SeqCst);
        if floor > search.cap || !floor_untried(&tried, out.capacity_rps, floor) || stopped() {
            return Ok(());
        }
        let tried = match self.judged(floor) {
            Err(_) if stopped() => return Ok(()),
            tried => tried?,
        };
        let more_threads = out.client_limited_at.is_none();
        let Some(tried) = self.again(floor, tried, more_threads, &mut |s| record(out, s))? else {
            return Ok(());
        };
        let step = tried.step(floor, " (the stated rate)");
        match (step.passed, step.client_limited) {
            (true, _) => {
                out.capacity_rps = Some(floor);
                out.headroom = headroom(&step.result, self.p99_ms, self.more);
            }
            (false, true) => {
                let at = out.client_limited_at.map_or(floor, |r| r.min(floor));
                out.client_limited_at = Some(at);
            }
            (false, false) => search.failed_above = Some(floor),
        }
        record(out, step);
        Ok(())
    }

    /// `tried` at `rate` run again where it failed, to confirm (one run's
    /// p99 can be a spike of a shared machine, and the bracket's upper end
    /// should be a rate that fails again); where kvlab limited it and
    /// `more_threads`, once more with twice the client threads. Each earlier
    /// run goes to `record`; `None`: Ctrl-C cut a run short.
    fn again(
        &mut self,
        rate: f64,
        mut tried: Tried,
        more_threads: bool,
        record: &mut dyn FnMut(Step),
    ) -> Result<Option<Tried>> {
        let shutdown = self.shutdown;
        let stopped = || shutdown.load(Ordering::SeqCst);
        if tried.verdict.is_err() && !stopped() {
            record(tried.step(rate, " (run again to confirm)"));
            tried = match self.judged(rate) {
                Err(_) if stopped() => return Ok(None),
                tried => tried?,
            };
            if let Err(why) = &mut tried.verdict {
                why.push_str("; failed twice");
            }
        }
        if tried.client_limited && more_threads && !stopped() {
            record(tried.step(rate, " (run again with more client threads)"));
            self.plan.load.threads *= 2;
            tried = match self.judged(rate) {
                Err(_) if stopped() => return Ok(None),
                tried => tried?,
            };
        }
        Ok(Some(tried))
    }
}

impl Tried {
    /// The step of this run at `rate`, a failure's reason followed by `note`.
    fn step(self, rate: f64, note: &str) -> Step {
        Step {
            rate: Some(rate),
            passed: self.verdict.is_ok(),
            reason: self.verdict.err().map(|why| format!("{why}{note}")),
            client_limited: self.client_limited,
            result: self.result,
        }
    }
}

/// The bisection over rates: below `lo` every rate passed (0: none yet), at
/// `hi` one failed or the ceiling is; `bound` is the closed loop's rate.
struct Bisection {
    lo: f64,
    hi: f64,
    bound: f64,
    /// The highest rate it may try (`--max-rps`; infinite: none).
    cap: f64,
    /// The lowest failing rate, once one failed.
    failed_above: Option<f64>,
}

impl Bisection {
    /// The search under the closed loop's rate `bound` (the ceiling 10% above),
    /// never above `cap`.
    fn new(bound: f64, cap: Option<f64>) -> Bisection {
        let cap = cap.unwrap_or(f64::INFINITY);
        Bisection {
            lo: 0.0,
            hi: (bound * 1.1).min(cap),
            bound,
            cap,
            failed_above: None,
        }
    }

    /// The next rate to try: until a rate passes, halve; then bisect between
    /// the best pass and the lowest failure.
    fn next_rate(&self) -> f64 {
        match self.lo == 0.0 {
            true => self.hi * 0.5,
            false => (self.lo + self.hi) / 2.0,
        }
    }

    /// Takes a rate kvlab itself could not offer, no rate passed yet: the
    /// search goes on below it, which is not the server's limit (no bracket);
    /// whether the search goes on.
    fn below(&mut self, rate: f64) -> bool {
        self.hi = rate;
        self.hi >= self.bound * 0.01
    }

    /// Takes `rate`'s outcome; whether the search goes on.
    fn record(&mut self, rate: f64, passed: bool) -> bool {
        if passed {
            self.lo = rate;
        } else {
            self.hi = rate;
            self.failed_above = Some(rate);
        }
        let (lo, hi) = (self.lo, self.hi);
        let close = lo > 0.0 && hi - lo < 0.02 * hi;
        // Every rate up to the ceiling passed: the closed loop understated
        // the target (an open loop can carry more); raise the ceiling so that
        // the search ends with a failure above its answer (up to 8x).
        let top = (self.bound * 8.0).min(self.cap);
        if self.failed_above.is_none() && close && hi < top {
            self.hi = (self.hi * 2.0).min(top);
            return true;
        }
        !(close || (lo == 0.0 && hi < self.bound * 0.01))
    }
}

#[cfg(test)]
mod tests {
    use super::floor_untried;

    #[test]
    fn a_search_tries_the_stated_rate_before_it_concludes_about_it() {
        let failed = [(8947.0, false), (4474.0, false), (2237.0, false)];
        /// Steps tried, capacity found, stated rate, whether it is tried.
        type Case<'a> = (&'a [(f64, bool)], Option<f64>, f64, bool);
        let cases: [Case; 7] = [
            // 8,947, 4,474 and 2,237 failed (a busy host): 1,417 is tried.
            (&failed, None, 1417.0, true),
            // A pass below it and a failure above it: tried too.
            (
                &[(2000.0, false), (1000.0, true)],
                Some(1000.0),
                1417.0,
                true,
            ),
            // A failure at or below it concluded: not tried.
            (&[(2000.0, false), (1200.0, false)], None, 1417.0, false),
            // A pass at or above it concluded: not tried.
            (
                &[(3000.0, false), (1500.0, true)],
                Some(1500.0),
                1417.0,
                false,
            ),
            // Tried already, or nothing failed above it, or none stated.
            (&[(3000.0, false), (1417.0, false)], None, 1417.0, false),
            (&[(500.0, true)], Some(500.0), 1417.0, false),
            (&failed, None, 0.0, false),
        ];
        for (tried, found, floor, want) in cases {
            assert_eq!(
                floor_untried(tried, found, floor),
                want,
                "{tried:?} {floor}"
            );
        }
    }
}
