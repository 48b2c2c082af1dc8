//! The host's load during each step of a decision: the load average, CPU
//! steal, and the CPU other processes took (the host's busy CPU less that of
//! kvlab and every process it started), read by `system::host_load`
//! between steps. A step the host was busy in is said, so that a figure
//! noise moved is not taken for the servers'.

use crate::results::decide::KVLAB;
use crate::results::host_load::HostLoad;
use crate::system::host_load::{Sample, between, sample};

/// A step shorter than this, seconds, measured nothing: it is not said
/// busy.
const MEASURED_S: f64 = 0.5;

/// The host's load between marks.
pub struct HostLog {
    last: Option<Sample>,
    /// Other processes' cores and the steal share past which a step is busy.
    limits: (f64, f64),
    /// Each busy step, said.
    pub busy: Vec<String>,
}

impl HostLog {
    /// Starts watching (a first reading now), a step busy past the limits
    /// of kvlab's method (the same for every decision: `--from` runs
    /// nothing).
    pub fn start() -> HostLog {
        let m = KVLAB.method;
        HostLog {
            last: sample(),
            limits: (m.host_others_cores, m.host_steal_share),
            busy: Vec::new(),
        }
    }

    /// Starts the next step now, the time since the last one not weighed
    /// (a step reused, not run).
    pub fn skip(&mut self) {
        self.last = sample();
    }

    /// Ends the step `what`: a line when the host was busy in it (also kept
    /// in `busy`).
    pub fn mark(&mut self, what: &str) -> Option<String> {
        let now = sample();
        let (Some(a), Some(b)) = (self.last, now) else {
            self.last = now;
            return None;
        };
        self.last = now;
        let said = busy_line(what, &between(&a, &b), self.limits)?;
        self.busy.push(said.clone());
        Some(said)
    }
}

/// Whether the busy line `line` ([`busy_line`]'s words) says other work
/// took CPU from kvlab and its servers (other processes' cores, steal): a
/// load average alone counts kvlab's own threads too, and does not.
pub fn contended(line: &str) -> bool {
    line.contains("other processes used") || line.contains("of the CPU was stolen")
}

/// The line for a step the host was busy in (`load` past `limits`); `None`
/// where it was not, or the step was over in a moment (a row with nothing
/// to measure).
fn busy_line(what: &str, load: &HostLoad, limits: (f64, f64)) -> Option<String> {
    if load.seconds < MEASURED_S {
        return None;
    }
    load.busy(limits).map(|why| {
        format!(
            "the host was busy during {what}: {why}; its figures may be low (run again on a quiet host)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kvlab's limits.
    const LIMITS: (f64, f64) = {
        let m = crate::results::decide::KVLAB.method;
        (m.host_others_cores, m.host_steal_share)
    };

    fn load(others_cores: f64, seconds: f64) -> HostLoad {
        HostLoad {
            others_cores,
            steal_share: 0.0,
            load_avg: 0.5,
            cores: 2.0,
            seconds,
        }
    }

    #[test]
    fn a_step_that_ran_nothing_is_never_said_busy() {
        let mut h = HostLog::start();
        assert_eq!(h.mark("a row with nothing to measure"), None);
        assert!(h.busy.is_empty());
        assert_eq!(busy_line("x", &load(1.3, 0.1), LIMITS), None);
    }

    #[test]
    fn a_busy_step_is_said_with_why() {
        assert_eq!(busy_line("x", &load(0.1, 5.0), LIMITS), None);
        let l = busy_line("the database alone", &load(1.3, 5.0), LIMITS).unwrap();
        assert!(
            l.contains("during the database alone: other processes used 1.30 cores"),
            "{l}"
        );
        assert!(contended(&l));
        // A load average alone counts kvlab's own threads: not busy (a line
        // saved by an earlier kvlab that said one is no contention).
        let mut own = load(0.1, 5.0);
        own.load_avg = 3.0;
        assert_eq!(busy_line("x", &own, LIMITS), None);
        assert!(!contended(
            "the host was busy during x: the load average was 3.0 on 2 cores"
        ));
    }
}
