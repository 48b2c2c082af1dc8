//! Open-loop pacing: each connection's intended send times at a fixed total
//! rate, evenly spaced or as independent Poisson arrivals (the reactor's
//! timer keeps them: `reactor::timer`).

use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::SmallRng;

use crate::workload::Arrivals;
use crate::workload::timing::{SEND_TOLERANCE, exponential};

/// The schedule of one run at a fixed total rate.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// Mean gap between two requests of one connection.
    pub per_conn: Duration,
    /// Gap between two requests of the whole run (offset between connections
    /// of an evenly spaced schedule).
    pub global: Duration,
    /// How early a request may leave: [`SEND_TOLERANCE`]. One sent early is
    /// timed from its actual send, one sent late from its intended time.
    pub lead: Duration,
    /// How the requests arrive.
    pub arrivals: Arrivals,
}

impl Pacer {
    /// A schedule of `rate` requests per second over `connections`
    /// connections, arriving as `arrivals`.
    pub fn new(rate: f64, connections: usize, arrivals: Arrivals) -> Pacer {
        let global = Duration::from_secs_f64(1.0 / rate);
        Pacer {
            per_conn: global * connections as u32,
            global,
            lead: SEND_TOLERANCE,
            arrivals,
        }
    }

    /// Intended time of the first request of connection `conn`: its offset
    /// of an even schedule, or a first exponential gap from `t0`.
    pub fn first_due(&self, t0: Instant, conn: usize, rng: &mut SmallRng) -> Instant {
        match self.arrivals {
            Arrivals::Uniform => t0 + self.global * conn as u32,
            Arrivals::Poisson => t0 + self.gap(rng),
        }
    }

    /// The gap from a connection's request to its next: the mean, or an
    /// exponential draw of that mean.
    #[inline]
    pub fn gap(&self, rng: &mut SmallRng) -> Duration {
        match self.arrivals {
            Arrivals::Uniform => self.per_conn,
            Arrivals::Poisson => exponential(self.per_conn, rng.next_u64()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_connections_evenly() {
        let p = Pacer::new(1000.0, 10, Arrivals::Uniform);
        assert_eq!(p.per_conn, Duration::from_millis(10));
        assert_eq!(p.lead, SEND_TOLERANCE);
        let t0 = Instant::now();
        let mut rng = crate::workload::rng(1);
        assert_eq!(p.first_due(t0, 3, &mut rng) - t0, Duration::from_millis(3));
        assert_eq!(p.gap(&mut rng), p.per_conn);
    }

    /// Kolmogorov-Smirnov: the gaps' distribution against the exponential of
    /// their mean, at the 1% level.
    #[test]
    fn poisson_gaps_are_exponential_with_the_connections_mean() {
        let p = Pacer::new(20_000.0, 10, Arrivals::Poisson);
        let mut rng = crate::workload::rng(7);
        let n = 20_000;
        let mut gaps: Vec<f64> = (0..n).map(|_| p.gap(&mut rng).as_secs_f64()).collect();
        gaps.sort_by(f64::total_cmp);
        let mean = p.per_conn.as_secs_f64();
        let observed = gaps.iter().sum::<f64>() / n as f64;
        assert!((observed / mean - 1.0).abs() < 0.03, "{observed} vs {mean}");
        let d = gaps
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let cdf = 1.0 - (-g / mean).exp();
                (cdf - i as f64 / n as f64)
                    .abs()
                    .max((i + 1) as f64 / n as f64 - cdf)
            })
            .fold(0.0, f64::max);
        assert!(d < 1.63 / (n as f64).sqrt(), "KS distance {d}");
        // Evenly spaced gaps are far from it.
        assert!(1.0 - (-1.0f64).exp() - 0.5 > 1.63 / (n as f64).sqrt());
    }
}
