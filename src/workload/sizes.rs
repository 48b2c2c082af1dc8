//! Value sizes as a distribution (`--value-size`): one size, a weighted list
//! (`100:80,1000:15,10000:5`), a uniform range (`64-4096`) or a bounded
//! Pareto (`pareto:64-65536[:ALPHA]`, heavy-tailed). Each key's size is a
//! fixed function of the key, so a value read back is verified against the
//! size its key must have: the distribution is laid into a table of
//! [`SLOTS`] sizes (its quantiles) and a key hashes to one of them, a lookup
//! per request.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// Entries of the table a key's size is drawn from.
pub const SLOTS: usize = 4096;
/// The largest value kvlab writes.
pub const MAX_VALUE: usize = 64 << 20;

/// How big each key's value is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SizeDist {
    /// Every value this size.
    Fixed {
        /// Bytes.
        size: usize,
    },
    /// Sizes with weights: `size:weight,…`.
    Weighted {
        /// (bytes, weight) pairs.
        sizes: Vec<(usize, u32)>,
    },
    /// Every size from `min` to `max` equally likely.
    Uniform {
        /// Smallest, bytes.
        min: usize,
        /// Largest, bytes.
        max: usize,
    },
    /// A Pareto distribution bounded to `min..=max`: most values near `min`,
    /// a few up to `max` (the heavier the tail, the smaller `alpha`).
    Pareto {
        /// Smallest, bytes.
        min: usize,
        /// Largest, bytes.
        max: usize,
        /// Tail index.
        alpha: f64,
    },
}

impl SizeDist {
    /// The table of [`SLOTS`] sizes (one entry for a fixed size), in order.
    pub fn table(&self) -> Vec<u32> {
        let q = |i: usize| (i as f64 + 0.5) / SLOTS as f64;
        match self {
            SizeDist::Fixed { size } => vec![*size as u32],
            SizeDist::Weighted { sizes } => {
                let total: u64 = sizes.iter().map(|&(_, w)| u64::from(w)).sum();
                let mut t = Vec::with_capacity(SLOTS);
                let mut upto = 0u64;
                for &(size, w) in sizes {
                    upto += u64::from(w);
                    let end = (upto * SLOTS as u64).div_ceil(total.max(1)) as usize;
                    while t.len() < end.min(SLOTS) {
                        t.push(size as u32);
                    }
                }
                t
            }
            SizeDist::Uniform { min, max } => (0..SLOTS)
                .map(|i| (*min as f64 + q(i) * (max - min + 1) as f64) as u32)
                .map(|s| s.min(*max as u32))
                .collect(),
            SizeDist::Pareto { min, max, alpha } => {
                let (lo, hi) = (*min as f64, *max as f64);
                let tail = 1.0 - (lo / hi).powf(*alpha);
                (0..SLOTS)
                    .map(|i| lo / (1.0 - q(i) * tail).powf(1.0 / alpha))
                    .map(|x| (x.round() as u32).clamp(*min as u32, *max as u32))
                    .collect()
            }
        }
    }

    /// Whether every value has one size.
    pub fn is_fixed(&self) -> bool {
        matches!(self, SizeDist::Fixed { .. })
    }
}

impl fmt::Display for SizeDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeDist::Fixed { size } => write!(f, "{size}"),
            SizeDist::Weighted { sizes } => {
                let parts: Vec<String> = sizes.iter().map(|(s, w)| format!("{s}:{w}")).collect();
                f.write_str(&parts.join(","))
            }
            SizeDist::Uniform { min, max } => write!(f, "{min}-{max}"),
            SizeDist::Pareto { min, max, alpha } => write!(f, "pareto:{min}-{max}:{alpha}"),
        }
    }
}

/// How `--value-size` is written, for errors.
const FIX: &str = "give bytes (256), a weighted list SIZE:WEIGHT,… (100:80,1000:15,10000:5), a range MIN-MAX (64-4096) or pareto:MIN-MAX[:ALPHA] (pareto:64-65536:1.2); sizes from 1 to 67108864";

impl FromStr for SizeDist {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, UsageError> {
        let bad = |problem: String| UsageError::bad("--value-size", problem, FIX);
        let bytes = |x: &str| -> Result<usize, UsageError> {
            let n: usize = x
                .trim()
                .parse()
                .map_err(|_| bad(format!("'{x}' in '{s}' is not a number of bytes")))?;
            if n == 0 || n > MAX_VALUE {
                return Err(bad(format!("{n} bytes is out of range")));
            }
            Ok(n)
        };
        let range = |x: &str| -> Result<(usize, usize), UsageError> {
            let (a, b) = x
                .split_once('-')
                .ok_or_else(|| bad(format!("'{x}' is not a range MIN-MAX")))?;
            let (a, b) = (bytes(a)?, bytes(b)?);
            if a > b {
                return Err(bad(format!(
                    "'{x}': the smallest size is above the largest"
                )));
            }
            Ok((a, b))
        };
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("pareto:") {
            let (r, alpha) = match rest.split_once(':') {
                Some((r, a)) => (r, a.parse::<f64>().ok()),
                None => (rest, Some(1.2)),
            };
            let (min, max) = range(r)?;
            let alpha = alpha
                .filter(|a| a.is_finite() && *a > 0.0)
                .ok_or_else(|| bad(format!("'{s}': ALPHA must be a number above 0")))?;
            return Ok(SizeDist::Pareto { min, max, alpha });
        }
        if s.contains(':') || s.contains(',') {
            // A size without a weight beside weighted ones would silently
            // weigh 1: refused.
            let weighted = s.split(',').filter(|p| p.contains(':')).count();
            if weighted > 0 && weighted < s.split(',').count() {
                return Err(UsageError::bad(
                    "--value-size",
                    format!("'{s}' gives some sizes a weight and not others"),
                    "give every size a weight (500:90,4000:10) or none",
                ));
            }
            let mut sizes = Vec::new();
            for part in s.split(',') {
                let (size, w) = part.split_once(':').unwrap_or((part, "1"));
                let w: u32 = w
                    .trim()
                    .parse()
                    .map_err(|_| bad(format!("weight '{w}' in '{s}' is not a whole number")))?;
                if w > 0 {
                    sizes.push((bytes(size)?, w));
                }
            }
            if sizes.is_empty() {
                return Err(bad(format!("'{s}' gives no size a weight above 0")));
            }
            if sizes.iter().map(|&(_, w)| u64::from(w)).sum::<u64>() > u64::from(u32::MAX) {
                return Err(bad(format!("the weights of '{s}' are too large")));
            }
            return Ok(match sizes.as_slice() {
                [(size, _)] => SizeDist::Fixed { size: *size },
                _ => SizeDist::Weighted { sizes },
            });
        }
        if s.contains('-') {
            let (min, max) = range(s)?;
            return Ok(match min == max {
                true => SizeDist::Fixed { size: min },
                false => SizeDist::Uniform { min, max },
            });
        }
        Ok(SizeDist::Fixed { size: bytes(s)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean(t: &[u32]) -> f64 {
        t.iter().map(|&x| f64::from(x)).sum::<f64>() / t.len() as f64
    }

    #[test]
    fn parses_and_prints_back() {
        for (text, want) in [
            ("256", "256"),
            ("100:80,1000:15,10000:5", "100:80,1000:15,10000:5"),
            ("64-4096", "64-4096"),
            ("pareto:64-65536", "pareto:64-65536:1.2"),
            ("pareto:64-65536:0.8", "pareto:64-65536:0.8"),
            ("300:1", "300"),
            ("32-32", "32"),
            ("500,4000", "500:1,4000:1"),
        ] {
            let d: SizeDist = text.parse().unwrap();
            assert_eq!(d.to_string(), want);
            assert_eq!(d.to_string().parse::<SizeDist>().unwrap(), d);
        }
        for bad in [
            "0",
            "x",
            "100:x",
            "100:0",
            "4096-64",
            "pareto:64",
            "pareto:64-128:-1",
            "99999999999",
        ] {
            let e = bad.parse::<SizeDist>().unwrap_err().to_string();
            assert!(e.contains("--value-size"), "{bad}: {e}");
        }
    }

    #[test]
    fn weights_are_given_to_every_size_or_none() {
        for mixed in ["500:90,4000", "500,4000:10", "1,2:3,4"] {
            let e = mixed.parse::<SizeDist>().unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "--value-size: '{mixed}' gives some sizes a weight and not others; give every size a weight (500:90,4000:10) or none"
                )
            );
        }
    }

    #[test]
    fn tables_follow_their_distribution() {
        let w: SizeDist = "100:80,1000:15,10000:5".parse().unwrap();
        let t = w.table();
        assert_eq!(t.len(), SLOTS);
        let share = |s: u32| t.iter().filter(|&&x| x == s).count() as f64 / SLOTS as f64;
        assert!((share(100) - 0.80).abs() < 0.001);
        assert!((share(10000) - 0.05).abs() < 0.001);
        let u = "64-4096".parse::<SizeDist>().unwrap().table();
        assert!((mean(&u) - 2080.0).abs() < 5.0, "{}", mean(&u));
        assert_eq!((u[0], u[SLOTS - 1]), (64, 4096));
        let p = "pareto:64-65536:1.2".parse::<SizeDist>().unwrap().table();
        assert!(p.windows(2).all(|w| w[0] <= w[1]));
        let median = p[SLOTS / 2];
        assert!((100..=120).contains(&median), "{median}");
        assert!(p[SLOTS - 1] > 20_000, "a heavy tail: {}", p[SLOTS - 1]);
        assert_eq!(SizeDist::Fixed { size: 7 }.table(), vec![7]);
    }
}
