//! Batch reads (`--batch`): how many keys one GET reads, as one number or a
//! weighted mix (`1:50,10:40,100:10`), drawn per request from a table.

use std::fmt;
use std::str::FromStr;

use rand::Rng;
use rand::rngs::SmallRng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The most keys one batch read may ask for.
pub const MAX_BATCH: u32 = 1000;

/// Slots of the draw table: a weight is kept to 1/256.
const SLOTS: usize = 256;

/// Keys per GET: one size or a weighted mix.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchSizes {
    /// (keys, weight), as given.
    parts: Vec<(u32, u32)>,
    /// `SLOTS` sizes laid out by weight.
    table: Vec<u16>,
}

impl BatchSizes {
    /// The keys of the next GET.
    #[inline]
    pub fn draw(&self, rng: &mut SmallRng) -> usize {
        usize::from(self.table[(rng.next_u32() as usize) % SLOTS])
    }

    /// The most keys a GET reads.
    pub fn max(&self) -> usize {
        self.parts.iter().map(|p| p.0 as usize).max().unwrap_or(1)
    }

    /// The mean keys per GET, by weight.
    pub fn mean(&self) -> f64 {
        let w: u64 = self.parts.iter().map(|p| u64::from(p.1)).sum();
        let k: u64 = self.parts.iter().map(|p| u64::from(p.0 * p.1)).sum();
        k as f64 / w.max(1) as f64
    }

    /// Whether every GET reads one key.
    pub fn single(&self) -> bool {
        self.max() == 1
    }
}

impl FromStr for BatchSizes {
    type Err = String;

    fn from_str(s: &str) -> Result<BatchSizes, String> {
        let keys = |t: &str| -> Result<u32, String> {
            match t.trim().parse::<u32>() {
                Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
                _ => Err(format!(
                    "'{t}' is not a number of keys from 1 to {MAX_BATCH}"
                )),
            }
        };
        let parts: Vec<(u32, u32)> = if s.contains(':') {
            s.split(',')
                .map(|p| {
                    let (k, w) = p
                        .split_once(':')
                        .ok_or_else(|| format!("'{p}' is not KEYS:WEIGHT"))?;
                    let w = w
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|&w| w > 0)
                        .ok_or_else(|| format!("'{w}' is not a positive weight"))?;
                    Ok((keys(k)?, w))
                })
                .collect::<Result<_, String>>()?
        } else {
            vec![(keys(s)?, 1)]
        };
        let total: u64 = parts.iter().map(|p| u64::from(p.1)).sum();
        // Each size gets its share of the slots (at least one), by largest
        // remainder so that the table has exactly SLOTS entries.
        let mut counts: Vec<usize> = parts
            .iter()
            .map(|p| ((u64::from(p.1) * SLOTS as u64 / total) as usize).max(1))
            .collect();
        while counts.iter().sum::<usize>() > SLOTS {
            let i = (0..counts.len()).max_by_key(|&i| counts[i]).unwrap_or(0);
            counts[i] -= 1;
        }
        let mut i = 0;
        while counts.iter().sum::<usize>() < SLOTS {
            counts[i % parts.len()] += 1;
            i += 1;
        }
        let table = parts
            .iter()
            .zip(&counts)
            .flat_map(|(p, &n)| std::iter::repeat_n(p.0 as u16, n))
            .collect();
        Ok(BatchSizes { parts, table })
    }
}

impl fmt::Display for BatchSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [(k, _)] = self.parts[..] {
            return write!(f, "{k}");
        }
        let parts: Vec<String> = self.parts.iter().map(|(k, w)| format!("{k}:{w}")).collect();
        f.write_str(&parts.join(","))
    }
}

impl Serialize for BatchSizes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for BatchSizes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BatchSizes, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_draw_by_weight_and_print_back() {
        let b: BatchSizes = "10".parse().unwrap();
        assert_eq!((b.max(), b.mean(), b.to_string()), (10, 10.0, "10".into()));
        let b: BatchSizes = "1:50,10:40,100:10".parse().unwrap();
        assert_eq!(b.max(), 100);
        assert!((b.mean() - 14.5).abs() < 1e-9);
        assert_eq!(b.to_string(), "1:50,10:40,100:10");
        let mut rng = crate::workload::rng(7);
        let n = 100_000;
        let big = (0..n).filter(|_| b.draw(&mut rng) == 100).count();
        assert!((big as f64 / n as f64 - 0.1).abs() < 0.01, "{big}");
        for bad in ["0", "1001", "x", "10:0", "10:", "5:1,x:2"] {
            assert!(bad.parse::<BatchSizes>().is_err(), "{bad}");
        }
        let b: BatchSizes = "1:1,2:1000".parse().unwrap();
        assert_eq!(b.table.len(), SLOTS);
        assert!(b.table.contains(&1));
    }
}
