//! The host's load over a span of time (a run, a decision's step): the
//! cores other processes kept busy, the CPU stolen, the load average;
//! whether it was busy, and why, in words.

use serde::{Deserialize, Serialize};

/// The host's load over a span, as `system::host_load` reads it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// Cores kept busy by processes other than kvlab and those it started.
    pub others_cores: f64,
    /// The share of the host's CPU stolen (by a VM's hypervisor).
    pub steal_share: f64,
    /// The 1-minute load average at its start.
    pub load_avg: f64,
    /// The host's cores.
    pub cores: f64,
    /// Seconds it spans.
    pub seconds: f64,
}

impl HostLoad {
    /// Why it was busy, past `limits` (other processes' cores, the steal
    /// share) or a load average past its cores: `None` where it was not.
    pub fn busy(&self, (others, steal): (f64, f64)) -> Option<String> {
        let mut why = Vec::new();
        if self.others_cores > others {
            why.push(format!(
                "other processes used {:.2} cores",
                self.others_cores
            ));
        }
        if self.steal_share > steal {
            why.push(format!(
                "{:.0}% of the CPU was stolen",
                self.steal_share * 100.0
            ));
        }
        if self.load_avg > self.cores + 0.5 {
            why.push(format!(
                "the load average was {:.1} on {:.0} cores",
                self.load_avg, self.cores
            ));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// [`HostLoad::busy`] at kvlab's limits (a decision's method).
    pub fn busy_by_kvlab(&self) -> Option<String> {
        let m = super::decide::KVLAB.method;
        self.busy((m.host_others_cores, m.host_steal_share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_busy_when_others_took_cpu_or_it_was_stolen() {
        let at = |others_cores, steal_share, load_avg| HostLoad {
            others_cores,
            steal_share,
            load_avg,
            cores: 2.0,
            seconds: 5.0,
        };
        assert_eq!(at(0.1, 0.0, 0.5).busy_by_kvlab(), None);
        assert_eq!(
            at(1.3, 0.0, 0.5).busy_by_kvlab().as_deref(),
            Some("other processes used 1.30 cores")
        );
        assert!(
            at(0.0, 0.2, 0.5)
                .busy_by_kvlab()
                .unwrap()
                .contains("20% of the CPU was stolen")
        );
        assert!(at(0.0, 0.0, 4.0).busy_by_kvlab().is_some());
    }
}
