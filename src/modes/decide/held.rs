//! Whether a step's measurements hold: a decision is made only from those
//! that do. A capacity search holds unless it found no rate within the goal
//! because kvlab itself could not keep up, the host was busy, every run had
//! errors, or it never tried the stated rate; or found only a lower bound
//! under the stated rate (`--max-rps`, kvlab's limit) on a server whose
//! cores are not known. The cache-aside run holds unless it missed the goal
//! while kvlab or the host limited it. What did not hold is said with why
//! and the fix; the decision then answers `not-measured`.

use super::ask::Asked;
use super::measure::{AsideRun, Measured, Searched};
use super::steps::{AsideStep, Step};
use crate::modes::capacity;
use crate::results::decide::CacheLoss;
use crate::results::stats::num;

/// A step that did not hold: why, and what would make it hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Unheld {
    /// What could not be measured, and why.
    pub why: String,
    /// What would measure it.
    pub fix: &'static str,
}

impl Unheld {
    /// In one line.
    pub fn said(&self) -> String {
        format!("{} ({})", self.why, self.fix)
    }
}

const MORE_CPU: &str =
    "give kvlab more cores or --threads, or run it on another machine, then --resume";
const QUIET: &str = "measure it again on a quiet host: --resume";
const MORE_STEPS: &str = "measure it again (drop --quick for more search steps): --resume";
const MAX_RPS: &str = "raise --max-rps to the stated rate or more, then --resume";

/// Whether a step's measurements hold, for `ask`, the host busy during it
/// (`busy`, said: other work took CPU, [`super::host::contended`]) or not;
/// the default: they do.
pub trait Holds {
    /// Why they do not hold, if they do not.
    fn unheld(&self, _ask: &Asked, _busy: Option<&str>) -> Option<Unheld> {
        None
    }
}

impl Holds for Searched {
    fn unheld(&self, ask: &Asked, busy: Option<&str>) -> Option<Unheld> {
        searched(self, ask.load.rps, busy)
    }
}

impl Holds for AsideStep {
    fn unheld(&self, ask: &Asked, busy: Option<&str>) -> Option<Unheld> {
        aside(self.run.as_ref(), (self.rate, ask.load.p99_ms), busy)
    }
}

/// Whether the cache-aside run `run` at `rate` holds against the goal
/// `p99_ms`, the host busy (`busy`) or not during it.
fn aside(run: Option<&AsideRun>, (rate, p99_ms): (f64, f64), busy: Option<&str>) -> Option<Unheld> {
    let a = run.filter(|a| !a.within_goal)?;
    let at = format!("its run at {} req/s was outside the goal", num(rate));
    if let Some(l) = capacity::client_limited(&a.result, p99_ms) {
        return Some(Unheld {
            why: format!("{at}, {l}"),
            fix: MORE_CPU,
        });
    }
    busy.map(|b| Unheld {
        why: format!("{at} while {}", quiet(b)),
        fix: QUIET,
    })
}

impl Holds for Vec<super::measure::CurveRun> {}
impl Holds for Option<CacheLoss> {}
impl Holds for super::others::Other {}

/// The host's line for a busy step, as a clause.
fn quiet(busy: &str) -> String {
    let b = busy.split_once(": ").map_or(busy, |(_, why)| why);
    let b = b.split_once("; its figures").map_or(b, |(why, _)| why);
    format!("the host was busy ({b})")
}

/// Whether the search `s` holds at the stated rate `stated`, the host busy
/// (`busy`) or not during it.
pub fn searched(s: &Searched, stated: f64, busy: Option<&str>) -> Option<Unheld> {
    let c = &s.capacity;
    let paced: Vec<&crate::results::capacity::Step> =
        c.steps.iter().filter(|st| st.rate.is_some()).collect();
    let Some(found) = c.capacity_rps else {
        if let Some(at) = c.client_limited_at {
            return Some(Unheld {
                why: format!(
                    "no rate within the goal: down to {} req/s kvlab itself could not keep up on this machine, so the server's capacity is not known",
                    num(at)
                ),
                fix: MORE_CPU,
            });
        }
        if let Some(b) = busy {
            return Some(Unheld {
                why: format!("no rate within the goal while {}", quiet(b)),
                fix: QUIET,
            });
        }
        if !c.steps.is_empty() && c.steps.iter().all(|st| st.result.totals.errors > 0) {
            return Some(Unheld {
                why: "every run had errors (said above each)".into(),
                fix: "fix what made them fail (the server's limits, its logs), then --resume",
            });
        }
        let lowest = paced
            .iter()
            .filter_map(|st| st.rate)
            .fold(f64::INFINITY, f64::min);
        return (lowest > stated * 1.001).then(|| Unheld {
            why: format!(
                "no rate within the goal, and none tried at or below the stated {} req/s (the lowest was {})",
                num(stated),
                num(lowest)
            ),
            fix: MORE_STEPS,
        });
    };
    // A lower bound under the stated rate on a server whose cores are not
    // known: whether it carries the stated rate is not known.
    if found >= stated * 0.999 || s.cores.is_some() {
        return None;
    }
    let (why, fix) = match (c.client_limited_at, c.capped_at) {
        (Some(at), _) => (
            format!("at {} req/s kvlab itself could not keep up", num(at)),
            MORE_CPU,
        ),
        (None, Some(cap)) => (
            format!("--max-rps held the search to {} req/s", num(cap)),
            MAX_RPS,
        ),
        (None, None) => return None,
    };
    Some(Unheld {
        why: format!(
            "a capacity of at least {} req/s, under the stated {} req/s: {why}, and its cores are not known to carry it further",
            num(found),
            num(stated)
        ),
        fix,
    })
}

/// The steps of `m` that do not hold for `ask`, each said with its step.
pub fn unheld(ask: &Asked, m: &Measured) -> Vec<String> {
    let busy = |step: Step| {
        m.host_busy
            .iter()
            .find(|(s, b)| *s == step.file() && super::host::contended(b))
            .map(|(_, b)| b.as_str())
    };
    [
        (Step::Database, m.db.unheld(ask, busy(Step::Database))),
        (Step::Cache, m.cache.unheld(ask, busy(Step::Cache))),
        (
            Step::CacheAside,
            aside(
                m.aside.as_ref(),
                (m.rate, ask.load.p99_ms),
                busy(Step::CacheAside),
            ),
        ),
    ]
    .into_iter()
    .filter_map(|(step, u)| Some(format!("{}: {}", step.said(), u?.said())))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::decide::measure::CoresSource;
    use crate::results::RunResult;
    use crate::results::capacity::{Capacity, Step};

    const CLIENT: &str = include_str!("../../../tests/fixtures/client-result.json");

    fn step(rate: Option<f64>, passed: bool, errors: u64) -> Step {
        let mut result: RunResult = serde_json::from_str(CLIENT).unwrap();
        result.totals.errors = errors;
        Step {
            rate,
            passed,
            reason: None,
            client_limited: false,
            result,
        }
    }

    /// A search of `steps` (rate, passed), what it found, on a server of
    /// `cores` (`None`: not known).
    fn search(steps: &[(f64, bool)], found: Option<f64>, cores: Option<f64>) -> Searched {
        let mut all = vec![step(None, true, 0)];
        all.extend(steps.iter().map(|&(r, p)| step(Some(r), p, 0)));
        Searched {
            capacity: Capacity {
                p99_ms: 1.0,
                limits: Default::default(),
                bracket: None,
                headroom: Vec::new(),
                capacity_rps: found,
                client_limited_at: None,
                capped_at: None,
                steps: all,
                cleanup: Vec::new(),
            },
            cores,
            cores_source: CoresSource::Measured,
            bytes: None,
        }
    }

    #[test]
    fn a_search_holds_only_where_it_concluded_about_the_stated_rate() {
        let failed = [(8947.0, false), (4474.0, false), (2237.0, false)];
        // The stated rate tried and failed on a quiet host: it holds.
        let mut tried = failed.to_vec();
        tried.push((1417.0, false));
        assert_eq!(
            searched(&search(&tried, None, Some(1.0)), 1417.0, None),
            None
        );
        // Never tried at or below it: measure again.
        let u = searched(&search(&failed, None, Some(1.0)), 1417.0, None).unwrap();
        assert_eq!(u.fix, MORE_STEPS, "{u:?}");
        // A busy host: measure again on a quiet one.
        let busy = "the host was busy during the database alone: other processes used 1.30 cores; its figures may be low (run again on a quiet host)";
        let u = searched(&search(&tried, None, Some(1.0)), 1417.0, Some(busy)).unwrap();
        assert_eq!(u.fix, QUIET);
        assert!(
            u.why.ends_with("(other processes used 1.30 cores)"),
            "{u:?}"
        );
        // kvlab's own limit.
        let mut s = search(&tried, None, Some(1.0));
        s.capacity.client_limited_at = Some(1417.0);
        let u = searched(&s, 1417.0, None).unwrap();
        assert_eq!(u.fix, MORE_CPU);
        assert!(u.why.contains("kvlab itself could not keep up"), "{u:?}");
        // Every run had errors.
        let mut s = search(&tried, None, Some(1.0));
        s.capacity
            .steps
            .iter_mut()
            .for_each(|st| st.result.totals.errors = 3);
        assert!(searched(&s, 1417.0, None).unwrap().why.contains("errors"));
    }

    #[test]
    fn a_lower_bound_under_the_stated_rate_holds_only_where_cores_carry_it() {
        let mut s = search(&[(1000.0, true)], Some(1000.0), None);
        s.capacity.capped_at = Some(1000.0);
        let u = searched(&s, 1417.0, None).unwrap();
        assert_eq!(u.fix, MAX_RPS, "{u:?}");
        // Its cores known, it is carried per core; at the stated rate, it holds.
        s.cores = Some(0.5);
        assert_eq!(searched(&s, 1417.0, None), None);
        s.cores = None;
        assert_eq!(searched(&s, 1000.0, None), None);
    }
}
