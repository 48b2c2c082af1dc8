//! Open-loop pacing: a fixed schedule of intended send times spread evenly over
//! the connections, and the bookkeeping of how far the run fell behind it.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The schedule of one run at a fixed total rate.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// Gap between two requests of one connection.
    pub per_conn: Duration,
    /// Gap between two requests of the whole run (offset between connections).
    pub global: Duration,
}

impl Pacer {
    /// A schedule of `rate` requests per second over `connections` connections.
    pub fn new(rate: f64, connections: usize) -> Pacer {
        let global = Duration::from_secs_f64(1.0 / rate);
        Pacer {
            per_conn: global * connections as u32,
            global,
        }
    }

    /// Intended time of the first request of connection `conn`.
    pub fn first_due(&self, t0: Instant, conn: usize) -> Instant {
        t0 + self.global * conn as u32
    }
}

/// How well an open-loop run kept its schedule.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ScheduleReport {
    /// Requested total rate (requests per second).
    pub target_rps: f64,
    /// Requests sent more than 1 ms after their intended time.
    pub late_requests: u64,
    /// Largest gap between a request's intended and actual send, in ms.
    pub max_lag_ms: f64,
    /// Requests the schedule called for before the end that were never sent.
    pub unsent: u64,
}

impl ScheduleReport {
    /// Adds another worker's report (rates are equal; counts add; lags take the max).
    pub fn merge(&mut self, o: &ScheduleReport) {
        self.target_rps = self.target_rps.max(o.target_rps);
        self.late_requests += o.late_requests;
        self.max_lag_ms = self.max_lag_ms.max(o.max_lag_ms);
        self.unsent += o.unsent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_connections_evenly() {
        let p = Pacer::new(1000.0, 10);
        assert_eq!(p.per_conn, Duration::from_millis(10));
        let t0 = Instant::now();
        assert_eq!(p.first_due(t0, 3) - t0, Duration::from_millis(3));
    }
}
