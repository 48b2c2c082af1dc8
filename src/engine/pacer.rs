//! Open-loop pacing: each connection's intended send times at a fixed total
//! rate, evenly spaced or as independent Poisson arrivals, the rate moving
//! over the window as its shape says (the reactor's timer keeps them:
//! `reactor::timer`).

use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::SmallRng;

use crate::workload::timing::{SEND_TOLERANCE, exponential};
use crate::workload::{Arrivals, RateShape, SendSlack};

/// The schedule of one run at a fixed total rate.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// Mean gap between two requests of one connection.
    pub per_conn: Duration,
    /// Gap between two requests of the whole run (offset between connections
    /// of an evenly spaced schedule).
    pub global: Duration,
    /// How early a request may leave: the send slack (one wake-up sends
    /// every request due within it), [`SEND_TOLERANCE`] until
    /// [`Pacer::with_slack`]. One sent early is timed from its actual send,
    /// one sent late from its intended time.
    pub lead: Duration,
    /// How the requests arrive.
    pub arrivals: Arrivals,
    /// How the rate moves over the window (`per_conn` and `global` are at
    /// its peak).
    pub shape: RateShape,
    /// The start of the window, the shape's second 0.
    pub origin: Instant,
    /// The outbound half of the emulated link every socket has, folded into
    /// the schedule (zero without one): the due times are when requests
    /// reach the wire, and the application wrote each this much earlier
    /// (its intended time, and when it was sent), though never before its
    /// connection had room (then it reaches the wire the half after). One
    /// wake-up puts a request on the wire, not one to write it and one for
    /// it to leave.
    pub fold: Duration,
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
            shape: RateShape::Steady,
            origin: Instant::now(),
            fold: Duration::ZERO,
        }
    }

    /// This schedule with its rate moving as `shape` says (the rate given to
    /// [`Pacer::new`] its peak).
    pub fn shaped(self, shape: RateShape) -> Pacer {
        Pacer { shape, ..self }
    }

    /// This schedule on a worker of `conns` of its connections, sending
    /// within `slack` of each request's time (the adaptive slack a share of
    /// that worker's mean gap between arrivals).
    pub fn with_slack(self, slack: SendSlack, conns: usize) -> Pacer {
        let gap = self.per_conn / conns.max(1) as u32;
        Pacer {
            lead: slack.lead(gap),
            ..self
        }
    }

    /// This schedule with the outbound half `half` of every socket's link
    /// folded in (see [`Pacer::fold`]).
    pub fn folding(self, half: Duration) -> Pacer {
        Pacer { fold: half, ..self }
    }

    /// When the application wrote a request that reaches the wire at `at`
    /// (see [`Pacer::fold`]).
    #[inline]
    pub fn written(&self, at: Instant) -> Instant {
        at.checked_sub(self.fold).unwrap_or(at)
    }

    /// Intended time of the first request of connection `conn`: its offset
    /// of an even schedule, or a first exponential gap from `t0`.
    pub fn first_due(&self, t0: Instant, conn: usize, rng: &mut SmallRng) -> Instant {
        match self.arrivals {
            Arrivals::Uniform => t0 + (self.global * conn as u32).div_f64(self.share(t0)),
            Arrivals::Poisson => t0 + self.gap(rng, t0),
        }
    }

    /// The share of the peak rate the shape offers at `at`.
    #[inline]
    fn share(&self, at: Instant) -> f64 {
        match self.shape {
            RateShape::Steady => 1.0,
            s => s.factor(at.saturating_duration_since(self.origin).as_secs_f64()),
        }
    }

    /// The gap from a connection's request due at `at` to its next: the
    /// mean at the rate offered then, or an exponential draw of that mean.
    #[inline]
    pub fn gap(&self, rng: &mut SmallRng, at: Instant) -> Duration {
        let mean = match self.shape {
            RateShape::Steady => self.per_conn,
            _ => self.per_conn.div_f64(self.share(at)),
        };
        match self.arrivals {
            Arrivals::Uniform => mean,
            Arrivals::Poisson => exponential(mean, rng.next_u64()),
        }
    }

    /// A connection's mean gap from `due` to `deadline` at the rates the
    /// shape offers over that span.
    pub fn mean_gap(&self, due: Instant, deadline: Instant) -> Duration {
        let s = |t: Instant| t.saturating_duration_since(self.origin).as_secs_f64();
        self.per_conn.div_f64(self.shape.mean(s(due), s(deadline)))
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
        assert_eq!(p.gap(&mut rng, t0), p.per_conn);
        // 5 of the 10 connections on a worker: a gap of 2 ms between its
        // arrivals, the adaptive slack at its cap.
        let w = p.with_slack(SendSlack::Auto, 5);
        assert_eq!(w.lead, crate::workload::timing::SLACK_CAP);
        let fast = Pacer::new(100_000.0, 10, Arrivals::Poisson).with_slack(SendSlack::Auto, 10);
        assert_eq!(fast.lead, Duration::from_micros(160));
    }

    /// Kolmogorov-Smirnov: the gaps' distribution against the exponential of
    /// their mean, at the 1% level.
    #[test]
    fn poisson_gaps_are_exponential_with_the_connections_mean() {
        let p = Pacer::new(20_000.0, 10, Arrivals::Poisson);
        let mut rng = crate::workload::rng(7);
        let n = 20_000;
        let t0 = Instant::now();
        let mut gaps: Vec<f64> = (0..n).map(|_| p.gap(&mut rng, t0).as_secs_f64()).collect();
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

    /// A sine's requests, counted per second over one cycle, follow it: the
    /// trough's second half the peak's.
    #[test]
    fn a_shaped_schedule_sends_at_the_rate_of_its_second() {
        let t0 = Instant::now();
        let shape = RateShape::Sine {
            period_s: 10.0,
            ratio: 2.0,
        };
        let mut p = Pacer::new(10_000.0, 10, Arrivals::Poisson).shaped(shape);
        p.origin = t0;
        let mut rng = crate::workload::rng(3);
        let mut per_s = [0u32; 10];
        for conn in 0..10 {
            let mut due = p.first_due(t0, conn, &mut rng);
            while due < t0 + Duration::from_secs(10) {
                per_s[(due - t0).as_secs() as usize] += 1;
                due += p.gap(&mut rng, due);
            }
        }
        for (s, n) in per_s.iter().enumerate() {
            let want = 10_000.0 * shape.mean(s as f64, s as f64 + 1.0);
            assert!(
                (f64::from(*n) / want - 1.0).abs() < 0.05,
                "second {s}: {n} vs {want}"
            );
        }
        let whole = p.mean_gap(t0, t0 + Duration::from_secs(10));
        assert!((whole.as_secs_f64() / (p.per_conn.as_secs_f64() / 0.75) - 1.0).abs() < 1e-3);
    }
}
