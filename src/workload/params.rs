//! The workload's parameters as a user writes them: the SET:GET ratio, how keys
//! are drawn, when the measured phase stops, and what a cache-aside write does.
//! Plain serde values with one-line parse errors; `plan` groups them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// What a cache-aside write does to the cache once the database has the new value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WritePolicy {
    /// Delete the cache entry; the next read fills it from the database.
    Invalidate,
    /// Write the new value into the cache.
    Update,
}

impl WritePolicy {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            WritePolicy::Invalidate => "invalidate",
            WritePolicy::Update => "update",
        }
    }
}

impl FromStr for WritePolicy {
    type Err = UsageError;
    fn from_str(s: &str) -> Result<Self, UsageError> {
        match s {
            "invalidate" | "delete" => Ok(WritePolicy::Invalidate),
            "update" | "write" => Ok(WritePolicy::Update),
            _ => Err(UsageError::bad(
                "--write-policy",
                format!("unknown policy '{s}'"),
                "use invalidate (delete the cache entry after a write) or update (write the new value into the cache)",
            )),
        }
    }
}

/// Relative weights of SET and GET.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ratio {
    /// Weight of SET.
    pub set: u32,
    /// Weight of GET.
    pub get: u32,
}

impl Ratio {
    /// Fraction of operations that are SETs, in `[0, 1]`.
    pub fn set_fraction(self) -> f64 {
        f64::from(self.set) / f64::from(self.set + self.get)
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.set, self.get)
    }
}

impl FromStr for Ratio {
    type Err = UsageError;
    fn from_str(s: &str) -> Result<Self, UsageError> {
        const FIX: &str = "give SET:GET weights, e.g. 0:1 (read-only), 1:10, 1:0 (write-only)";
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| UsageError::bad("--ratio", format!("'{s}' has no ':'"), FIX))?;
        if b.contains(':') {
            let parts = s.split(':').count();
            return Err(UsageError::bad(
                "--ratio",
                format!("'{s}' has {parts} weights; a ratio is two, SET:GET"),
                FIX,
            ));
        }
        let parse = |x: &str| {
            x.trim().parse::<u32>().map_err(|_| {
                UsageError::bad("--ratio", format!("'{x}' is not a whole number"), FIX)
            })
        };
        let r = Ratio {
            set: parse(a)?,
            get: parse(b)?,
        };
        if r.set == 0 && r.get == 0 {
            return Err(UsageError::bad("--ratio", "both weights are 0", FIX));
        }
        if r.set.checked_add(r.get).is_none() {
            return Err(UsageError::bad("--ratio", "weights too large", FIX));
        }
        Ok(r)
    }
}

/// How keys are chosen for each request.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum KeyDistribution {
    /// Every key equally likely.
    Uniform,
    /// Zipfian with exponent `theta`: key 0 is the hottest.
    Zipf {
        /// Skew; YCSB uses 0.99.
        theta: f64,
    },
    /// Keys in order, each connection walking its own slice of the key space.
    Sequential,
    /// Keys from the last down to the first, connection `c` of `n` taking
    /// every `n`-th from the last but `c`: kvlab's fill of a cache in rising
    /// popularity (key 0, the hottest, last). Not a user's choice.
    Countdown,
}

impl fmt::Display for KeyDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDistribution::Uniform => f.write_str("uniform"),
            KeyDistribution::Zipf { theta } => write!(f, "zipf:{theta}"),
            KeyDistribution::Sequential => f.write_str("sequential"),
            KeyDistribution::Countdown => f.write_str("countdown"),
        }
    }
}

impl FromStr for KeyDistribution {
    type Err = UsageError;
    fn from_str(s: &str) -> Result<Self, UsageError> {
        const FIX: &str = "use uniform, sequential, zipf or zipf:THETA (THETA > 0, e.g. zipf:0.99)";
        match s {
            "uniform" => Ok(KeyDistribution::Uniform),
            "sequential" => Ok(KeyDistribution::Sequential),
            "zipf" => Ok(KeyDistribution::Zipf { theta: 0.99 }),
            _ => {
                let theta = s
                    .strip_prefix("zipf:")
                    .and_then(|t| t.parse::<f64>().ok())
                    .ok_or_else(|| {
                        UsageError::bad(
                            "--key-distribution",
                            format!("unknown distribution '{s}'"),
                            FIX,
                        )
                    })?;
                if !(theta.is_finite() && theta > 0.0) {
                    return Err(UsageError::bad(
                        "--key-distribution",
                        format!("theta {theta} must be greater than 0"),
                        FIX,
                    ));
                }
                Ok(KeyDistribution::Zipf { theta })
            }
        }
    }
}

/// The end of the measured phase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// After this many seconds.
    Duration(f64),
    /// After this many requests in total.
    Requests(u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ratio_and_distribution() {
        assert_eq!("1:10".parse::<Ratio>().unwrap(), Ratio { set: 1, get: 10 });
        assert!("0:0".parse::<Ratio>().is_err());
        assert!("1/10".parse::<Ratio>().is_err());
        assert!("a:1".parse::<Ratio>().is_err());
        assert_eq!(
            "zipf:0.8".parse::<KeyDistribution>().unwrap(),
            KeyDistribution::Zipf { theta: 0.8 }
        );
        assert!("zipf:-1".parse::<KeyDistribution>().is_err());
        assert!("pareto".parse::<KeyDistribution>().is_err());
    }
}
