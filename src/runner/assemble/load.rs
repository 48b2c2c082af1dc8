//! What an open-loop run offered and what it carried, and the line that says
//! a rate was not sustained, naming the side that held it back.

/// A server using fewer cores than this did not hold a rate back.
const IDLE_SERVER_CORES: f64 = 0.5;

/// What an open-loop run offered and what it carried.
pub(super) struct Load {
    /// Requests per second the schedule called for.
    pub(super) offered: f64,
    /// Requests per second that completed in the window.
    pub(super) achieved: f64,
    /// Requests due before the end that were never sent.
    pub(super) backlog: u64,
    /// The window's length, seconds.
    pub(super) window: f64,
    /// The share of the window kvlab's workers were busy, where known.
    pub(super) client_busy: Option<f64>,
    /// The cores kvlab used over the window.
    pub(super) client_cores: f64,
    /// The cores the server used over the window (`None`: not known).
    pub(super) server_cores: Option<f64>,
    /// Why the host was busy over the window (other processes' cores, CPU
    /// stolen), at kvlab's limits; `None` where it was not or is not known.
    pub(super) host_busy: Option<String>,
}

impl Load {
    /// The line that says the rate was not carried (achieved below 90% of the
    /// offered rate, or a backlog of more than 1% of the window's requests,
    /// i.e. a lag that kept growing), naming the host's other work where it
    /// was busy, else the side that was saturated when kvlab can tell; `None`
    /// when it was carried.
    pub(super) fn shortfall(&self) -> Option<String> {
        let expected = self.offered * self.window;
        let short = self.achieved < 0.9 * self.offered;
        let behind = self.backlog as f64 > 0.01 * expected;
        if !(short || behind) || self.offered <= 0.0 {
            return None;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let used = self.client_cores + self.server_cores.unwrap_or(0.0);
        let server = self
            .server_cores
            .map(|s| format!(", the server {s:.2}"))
            .unwrap_or_default();
        let side = if let Some(why) = &self.host_busy {
            // Others' work on the host starves whichever side waits for it.
            format!(
                "the host was busy ({why}): other work on it held the rate back (run again on a quiet host)"
            )
        } else if self.server_cores.is_some() && used >= 0.9 * cores {
            format!(
                "this machine's {cores:.0} cores were all in use (kvlab {:.2}{server}): client and server compete for CPU",
                self.client_cores
            )
        } else if self.client_busy.is_some_and(|b| b >= 0.9) {
            format!(
                "kvlab's workers were busy {:.0}% of the time: raise --threads (or give kvlab more cores)",
                self.client_busy.unwrap_or(0.0) * 100.0
            )
        } else {
            let busy = self
                .client_busy
                .map(|b| format!("kvlab's workers were busy {:.0}%", b * 100.0))
                .into_iter()
                .chain(
                    self.server_cores
                        .map(|s| format!("the server used {s:.2} cores")),
                )
                .collect::<Vec<_>>()
                .join(", ");
            // A server that used little CPU was not what held the rate back.
            let idle_server = self.server_cores.is_some_and(|s| s < IDLE_SERVER_CORES);
            match (busy.is_empty(), idle_server) {
                (true, _) => "the target could not keep up".to_string(),
                (false, false) => format!("the target could not keep up ({busy})"),
                (false, true) => format!(
                    "neither side was saturated ({busy}): the host's other work, or the network, held it back (run again on a quiet host)"
                ),
            }
        };
        let backlog = if behind {
            format!(", {} requests due were never sent", self.backlog)
        } else {
            String::new()
        };
        Some(format!(
            "not sustained: offered {} req/s, achieved {} ({:.0}%){backlog}; {side}",
            crate::results::stats::num(self.offered),
            crate::results::stats::num(self.achieved),
            self.achieved * 100.0 / self.offered,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::Load;

    #[test]
    fn a_rate_not_carried_blames_the_target_only_where_it_was_busy() {
        let at = |client_busy, server_cores| Load {
            offered: 1000.0,
            achieved: 500.0,
            backlog: 0,
            window: 5.0,
            client_busy: Some(client_busy),
            client_cores: 0.1,
            server_cores: Some(server_cores),
            host_busy: None,
        };
        let idle = at(0.2, 0.05).shortfall().unwrap();
        assert!(idle.contains("neither side was saturated"), "{idle}");
        assert!(!idle.contains("the target could not keep up"), "{idle}");
        let busy = at(0.2, 0.9).shortfall().unwrap();
        assert!(busy.contains("the target could not keep up"), "{busy}");
        let kvlab = at(0.95, 0.05).shortfall().unwrap();
        assert!(kvlab.contains("raise --threads"), "{kvlab}");
        // Where other processes kept the host busy, they are named, not a
        // side that only waited for CPU.
        let host = Load {
            host_busy: Some("other processes used 1.60 cores".into()),
            ..at(0.95, 0.9)
        }
        .shortfall()
        .unwrap();
        assert!(
            host.contains("the host was busy (other processes used 1.60 cores)"),
            "{host}"
        );
        assert!(!host.contains("could not keep up"), "{host}");
    }
}
