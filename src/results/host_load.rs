//! The host's load over a span of time (a run, a decision's step), as
//! results keep it ([`HostLoad`], read by `system::host_load`), and whether
//! it was busy at kvlab's limits.

pub use crate::system::host_load::HostLoad;

/// [`HostLoad::busy`] at kvlab's limits (a decision's method).
pub fn busy_by_kvlab(l: &HostLoad) -> Option<String> {
    let m = super::decide::KVLAB.method;
    l.busy((m.host_others_cores, m.host_steal_share))
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
        assert_eq!(busy_by_kvlab(&at(0.1, 0.0, 0.5)), None);
        assert_eq!(
            busy_by_kvlab(&at(1.3, 0.0, 0.5)).as_deref(),
            Some("other processes used 1.30 cores")
        );
        assert!(
            busy_by_kvlab(&at(0.0, 0.2, 0.5))
                .unwrap()
                .contains("20% of the CPU was stolen")
        );
        // A load average alone counts kvlab's own threads: not busy; beside
        // other work, said.
        assert_eq!(busy_by_kvlab(&at(0.0, 0.0, 4.0)), None);
        assert!(
            busy_by_kvlab(&at(1.3, 0.0, 4.0))
                .unwrap()
                .ends_with("the load average was 4.0 on 2 cores")
        );
    }
}
