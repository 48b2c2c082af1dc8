//! How long a connection lives (`--conn-life`): a number of requests or a
//! time, with a random spread so that connections do not all reconnect at
//! once. When it ends, the connection finishes what it has in flight, closes,
//! and opens again, as a pooled application recycling its connections does.
//! A plain serde value with one-line parse errors; the request loop applies it.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// The spread of a life unless given (`jitter=`): each life is drawn
/// uniformly within ±20% of the one given.
pub const DEFAULT_JITTER: f64 = 0.2;

/// One connection's life.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnLife {
    /// Requests a connection makes before it reconnects (`None`: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Seconds a connection lives before it reconnects (`None`: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Each life is drawn within ±this share of the one given.
    pub jitter: f64,
}

impl ConnLife {
    /// Reads `N` (requests), `Ts`/`Tms` (a time), either with `,jitter=F`.
    pub fn parse(s: &str) -> Result<ConnLife, UsageError> {
        let bad = |what: String| {
            UsageError::bad(
                "--conn-life",
                what,
                "give requests per connection or its life in time, e.g. 1000, 5s or 500ms,jitter=0.2",
            )
        };
        let mut parts = s.split(',');
        let first = parts.next().unwrap_or("").trim();
        let mut life = ConnLife {
            requests: None,
            seconds: None,
            jitter: DEFAULT_JITTER,
        };
        if let Some(ms) = first.strip_suffix("ms") {
            life.seconds = positive(ms).map(|v| v / 1e3);
        } else if let Some(secs) = first.strip_suffix('s') {
            life.seconds = positive(secs);
        } else {
            life.requests = first.parse::<u64>().ok().filter(|n| *n > 0);
        }
        if life.requests.is_none() && life.seconds.is_none() {
            return Err(bad(format!("'{first}' is no life")));
        }
        for p in parts {
            match p.trim().split_once('=') {
                Some(("jitter", v)) => {
                    life.jitter = v
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|j| (0.0..1.0).contains(j))
                        .ok_or_else(|| {
                            bad(format!("jitter '{v}': give a share from 0 to below 1"))
                        })?
                }
                _ => return Err(bad(format!("unknown part '{p}'"))),
            }
        }
        Ok(life)
    }

    /// One connection's life, spread by `u` (uniform in [0, 1)): requests it
    /// may make and how long it may live.
    pub fn draw(&self, u: f64) -> (u64, Option<Duration>) {
        let k = 1.0 + self.jitter * (2.0 * u - 1.0);
        let requests = self
            .requests
            .map_or(u64::MAX, |n| ((n as f64 * k).round() as u64).max(1));
        (
            requests,
            self.seconds.map(|s| Duration::from_secs_f64(s * k)),
        )
    }
}

/// A positive finite number, or `None`.
fn positive(v: &str) -> Option<f64> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0)
}

impl fmt::Display for ConnLife {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.requests, self.seconds) {
            (Some(n), _) => write!(f, "{n} requests")?,
            (None, Some(s)) => write!(f, "{s} s")?,
            (None, None) => write!(f, "unlimited")?,
        }
        write!(f, " (±{:.0}%)", self.jitter * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lives_parse_with_one_line_errors_and_spread_within_their_jitter() {
        let l = ConnLife::parse("1000").unwrap();
        assert_eq!((l.requests, l.seconds, l.jitter), (Some(1000), None, 0.2));
        let l = ConnLife::parse("500ms,jitter=0.1").unwrap();
        assert_eq!((l.requests, l.seconds, l.jitter), (None, Some(0.5), 0.1));
        assert_eq!(ConnLife::parse("5s").unwrap().seconds, Some(5.0));
        for bad in ["", "0", "x", "-3s", "10,jitter=1", "10,spread=0.1", "1.5"] {
            let e = ConnLife::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--conn-life:") && !e.contains('\n'), "{e}");
        }
        let l = ConnLife::parse("1000").unwrap();
        assert_eq!(l.draw(0.0).0, 800);
        assert_eq!(l.draw(0.5).0, 1000);
        assert!(l.draw(0.999_999).0 <= 1200);
        assert_eq!(l.draw(0.3).1, None);
        assert_eq!(
            ConnLife::parse("2s,jitter=0").unwrap().draw(0.9).1,
            Some(Duration::from_secs(2))
        );
        assert_eq!(l.to_string(), "1000 requests (±20%)");
    }
}
