//! When requests leave and how long the way to the server is: the arrival
//! process of a fixed rate (`--arrivals`) and the round trip kvlab emulates
//! between the application and a server (`--rtt`, `--cache-rtt`). Plain serde
//! values with one-line parse errors; the request loop applies them.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// How a fixed rate's requests arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Each connection independent, exponential gaps: together a Poisson
    /// process at the rate, as independent clients make production traffic.
    Poisson,
    /// Evenly spaced, each connection at its offset of the run's gap.
    Uniform,
}

impl Arrivals {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Uniform => "uniform",
        }
    }

    /// What results written before `--arrivals` existed used: even spacing.
    pub fn before_choice() -> Arrivals {
        Arrivals::Uniform
    }
}

impl FromStr for Arrivals {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Arrivals, UsageError> {
        match s.to_ascii_lowercase().as_str() {
            "poisson" => Ok(Arrivals::Poisson),
            "uniform" => Ok(Arrivals::Uniform),
            _ => Err(UsageError::bad(
                "--arrivals",
                format!("unknown arrival process '{s}'"),
                "use poisson (independent clients) or uniform (evenly spaced)",
            )),
        }
    }
}

/// An exponentially distributed duration of mean `mean`, drawn from 53 of
/// `bits`' random bits (pacing's Poisson gaps, a link's jitter).
#[inline]
pub fn exponential(mean: Duration, bits: u64) -> Duration {
    // u in [0, 1); 1 - u in (0, 1]: its logarithm is finite.
    let u = (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    mean.mul_f64(-(1.0 - u).ln())
}

/// The most a request leaves before its intended time (then it is timed from
/// its actual send): the send-time tolerance a run reports against.
pub const SEND_TOLERANCE: Duration = Duration::from_micros(20);

/// The most the adaptive send slack lets a request leave early.
pub const SLACK_CAP: Duration = Duration::from_micros(300);

/// The share of a worker's mean gap between arrivals the adaptive send slack
/// is: about this many of its requests leave in one wake-up.
pub const SLACK_ARRIVALS: f64 = 16.0;

/// How early the open loop may send a request, so that one wake-up sends
/// every request due within it (`--send-slack`). A request sent early is
/// timed from its actual send, so the slack never shortens a latency; what
/// it moves is when requests reach the server, by at most the slack.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum SendSlack {
    /// [`SLACK_ARRIVALS`] of the worker's mean gaps between arrivals, at
    /// least [`SEND_TOLERANCE`] and at most [`SLACK_CAP`].
    #[default]
    Auto,
    /// At most this early (below [`SEND_TOLERANCE`]: that tolerance, each
    /// request at its time).
    Fixed(Duration),
}

impl SendSlack {
    /// How early a worker with a mean gap of `gap` between its arrivals
    /// sends.
    pub fn lead(self, gap: Duration) -> Duration {
        match self {
            SendSlack::Auto => gap.mul_f64(SLACK_ARRIVALS).clamp(SEND_TOLERANCE, SLACK_CAP),
            SendSlack::Fixed(d) => d.max(SEND_TOLERANCE),
        }
    }

    /// Serde's test for the default.
    pub fn is_auto(&self) -> bool {
        *self == SendSlack::Auto
    }
}

impl FromStr for SendSlack {
    type Err = UsageError;

    /// `auto`, or a time: `50us`, `0.2ms`, `0` (each request at its time).
    fn from_str(s: &str) -> Result<SendSlack, UsageError> {
        let bad = |what: String| {
            UsageError::bad(
                "--send-slack",
                what,
                "give auto, or how early a request may leave, e.g. 0, 50us or 0.2ms (at most 10ms)",
            )
        };
        let t = s.trim().to_ascii_lowercase();
        if t == "auto" {
            return Ok(SendSlack::Auto);
        }
        let (num, scale) = match t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
            Some(n) => (n, 1e-6),
            None => match t.strip_suffix("ms") {
                Some(n) => (n, 1e-3),
                None => match t.strip_suffix('s') {
                    Some(n) => (n, 1.0),
                    None if t.trim() == "0" => ("0", 1.0),
                    None => return Err(bad(format!("'{s}' has no unit (us or ms)"))),
                },
            },
        };
        let secs = num
            .trim()
            .parse::<f64>()
            .ok()
            .map(|n| n * scale)
            .filter(|x| x.is_finite() && (0.0..=0.01).contains(x))
            .ok_or_else(|| bad(format!("'{s}' is no slack")))?;
        Ok(SendSlack::Fixed(Duration::from_secs_f64(secs)))
    }
}

impl fmt::Display for SendSlack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendSlack::Auto => f.write_str("auto"),
            SendSlack::Fixed(d) => write!(f, "{}us", d.as_secs_f64() * 1e6),
        }
    }
}

impl Serialize for SendSlack {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SendSlack {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SendSlack, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A round trip kvlab emulates on each connection to one server: a link that
/// only delays (no loss, no bandwidth limit), half of it on the way out and
/// half on the way back, each half with an optional random extra.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkDelay {
    /// The round trip, milliseconds.
    pub rtt_ms: f64,
    /// The mean extra of a round trip, milliseconds: each half adds an
    /// exponentially distributed delay of half this mean (0: none).
    #[serde(default, skip_serializing_if = "crate::workload::timing::is_zero")]
    pub jitter_ms: f64,
}

/// Serde's test for an absent jitter.
pub fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl LinkDelay {
    /// The fixed part of one way.
    pub fn half(&self) -> Duration {
        Duration::from_secs_f64(self.rtt_ms / 2e3)
    }

    /// The mean random extra of one way.
    pub fn half_jitter(&self) -> Duration {
        Duration::from_secs_f64(self.jitter_ms / 2e3)
    }

    /// Reads `MS` or `MS,jitter=MS` for `flag`.
    pub fn parse(s: &str, flag: &'static str) -> Result<LinkDelay, UsageError> {
        let bad = |what: String| {
            UsageError::bad(
                flag,
                what,
                "give the round trip in milliseconds, e.g. 0.3 or 0.3,jitter=0.05",
            )
        };
        let ms = |v: &str| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && (0.0..=10_000.0).contains(x))
        };
        let mut parts = s.split(',');
        let rtt_ms = parts
            .next()
            .and_then(ms)
            .ok_or_else(|| bad(format!("'{s}' is no round trip")))?;
        let mut jitter_ms = 0.0;
        for p in parts {
            match p.trim().split_once('=') {
                Some(("jitter", v)) => {
                    jitter_ms = ms(v).ok_or_else(|| bad(format!("'{v}' is no jitter")))?
                }
                _ => return Err(bad(format!("unknown part '{p}'"))),
            }
        }
        Ok(LinkDelay { rtt_ms, jitter_ms })
    }
}

impl fmt::Display for LinkDelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.rtt_ms)?;
        if self.jitter_ms > 0.0 {
            write!(f, " (+ jitter, mean {} ms)", self.jitter_ms)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_arrivals_parse_with_one_line_errors() {
        let d = LinkDelay::parse("0.3,jitter=0.05", "--rtt").unwrap();
        assert_eq!((d.rtt_ms, d.jitter_ms), (0.3, 0.05));
        assert_eq!(d.half(), Duration::from_micros(150));
        assert_eq!(LinkDelay::parse("1", "--rtt").unwrap().jitter_ms, 0.0);
        for bad in ["", "x", "-1", "1,spread=2", "1,jitter=x", "inf"] {
            let e = LinkDelay::parse(bad, "--rtt").unwrap_err().to_string();
            assert!(e.starts_with("--rtt:") && !e.contains('\n'), "{e}");
        }
        assert_eq!("Poisson".parse::<Arrivals>().unwrap(), Arrivals::Poisson);
        assert!("bursty".parse::<Arrivals>().is_err());
    }

    #[test]
    fn the_send_slack_is_a_share_of_the_gap_within_its_bounds() {
        let us = Duration::from_micros;
        assert_eq!(SendSlack::Auto.lead(us(10)), us(160));
        assert_eq!(SendSlack::Auto.lead(us(1)), SEND_TOLERANCE);
        assert_eq!(SendSlack::Auto.lead(us(1000)), SLACK_CAP);
        let fixed = |s: &str| s.parse::<SendSlack>().unwrap();
        assert_eq!(fixed("0").lead(us(1000)), SEND_TOLERANCE);
        assert_eq!(fixed("50us"), SendSlack::Fixed(us(50)));
        assert_eq!(fixed("0.2ms"), SendSlack::Fixed(us(200)));
        assert_eq!(fixed("AUTO"), SendSlack::Auto);
        assert_eq!(
            fixed(&SendSlack::Fixed(us(50)).to_string()),
            SendSlack::Fixed(us(50))
        );
        for bad in ["", "50", "x", "-1us", "1s", "infms"] {
            let e = bad.parse::<SendSlack>().unwrap_err().to_string();
            assert!(e.starts_with("--send-slack:") && !e.contains('\n'), "{e}");
        }
    }
}
