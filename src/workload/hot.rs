//! A hot-key burst (`--hot-keys`): for a period of the window, a share of the
//! reads goes to a few keys, as when one item goes viral. A plain serde value
//! with one-line parse errors; the request loop applies it, and the result
//! counts the reads it sent there.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::shape::seconds;
use crate::error::UsageError;

/// Reads drawn onto a few keys for a period.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HotKeys {
    /// The share of reads sent to the hot keys while the burst lasts.
    pub share: f64,
    /// Reads per second asked of the hot keys (`rps=`), when given so: the
    /// share is then this over the run's reads per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps: Option<f64>,
    /// How many keys are hot, from the middle of the key space (keys no
    /// skew makes hot otherwise).
    pub keys: u64,
    /// Seconds into the window the burst starts.
    pub from_s: f64,
    /// Seconds it lasts (`None`: to the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_s: Option<f64>,
}

impl HotKeys {
    /// Reads `share=F` or `rps=N`, with optional `keys=N`, `from=T`,
    /// `for=T` (T: seconds, `s` or `m` after the number), e.g.
    /// `rps=3000,keys=1,from=10s,for=20s`.
    pub fn parse(s: &str) -> Result<HotKeys, UsageError> {
        let bad = |what: String| {
            UsageError::bad(
                "--hot-keys",
                what,
                "give share=F (of reads) or rps=N, and optionally keys=N,from=T,for=T, e.g. rps=3000,keys=1,from=10s,for=20s",
            )
        };
        let mut h = HotKeys {
            share: 0.0,
            rps: None,
            keys: 1,
            from_s: 0.0,
            for_s: None,
        };
        let mut share = None;
        for p in s.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = p
                .trim()
                .split_once('=')
                .ok_or_else(|| bad(format!("'{p}' is no KEY=VALUE")))?;
            let num = || {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0)
            };
            match k.trim() {
                "share" => {
                    share = Some(num().filter(|x| *x <= 1.0).ok_or_else(|| {
                        bad(format!("share '{v}': give a share above 0, at most 1"))
                    })?)
                }
                "rps" => h.rps = Some(num().ok_or_else(|| bad(format!("rps '{v}' is no rate")))?),
                "keys" => {
                    h.keys = v
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad(format!("keys '{v}' is no count")))?
                }
                "from" => {
                    h.from_s = seconds(v).ok_or_else(|| bad(format!("from '{v}' is no time")))?
                }
                "for" => {
                    h.for_s = Some(
                        seconds(v)
                            .filter(|x| *x > 0.0)
                            .ok_or_else(|| bad(format!("for '{v}' is no time")))?,
                    )
                }
                _ => return Err(bad(format!("unknown part '{p}'"))),
            }
        }
        match (share, h.rps) {
            (Some(s), None) => h.share = s,
            (None, Some(_)) => {}
            _ => return Err(bad("give one of share= and rps=".into())),
        }
        Ok(h)
    }

    /// This burst with its share settled for a run of `reads_per_s` reads a
    /// second (`None`: a closed loop); `Err` says why it cannot be.
    pub fn settled(mut self, reads_per_s: Option<f64>, keys: u64) -> Result<HotKeys, UsageError> {
        let bad = |what: String, fix: &str| UsageError::bad("--hot-keys", what, fix);
        if self.keys > keys / 2 {
            return Err(bad(
                format!("{} hot keys of {keys}", self.keys),
                "give at most half of the keys",
            ));
        }
        if let Some(rps) = self.rps {
            let reads = reads_per_s.ok_or_else(|| {
                bad(
                    "rps= needs a fixed rate".into(),
                    "give --rate, or share= for a closed loop",
                )
            })?;
            self.share = rps / reads;
            if self.share > 1.0 {
                return Err(bad(
                    format!("{rps} reads/s asked of the hot keys, of {reads} reads/s in all"),
                    "give fewer, or raise --rate",
                ));
            }
        }
        Ok(self)
    }

    /// The first hot key (the others follow it).
    pub fn first_key(&self, keys: u64) -> u64 {
        keys / 2
    }
}

impl fmt::Display for HotKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rps {
            Some(r) => write!(f, "{r} reads/s")?,
            None => write!(f, "{:.1}% of reads", self.share * 100.0)?,
        }
        write!(f, " on {} key(s) from second {}", self.keys, self.from_s)?;
        match self.for_s {
            Some(d) => write!(f, " for {d} s"),
            None => write!(f, " to the end"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_parse_settle_and_refuse_in_one_line() {
        let h = HotKeys::parse("rps=3000,from=10s,for=20s").unwrap();
        assert_eq!((h.keys, h.from_s, h.for_s), (1, 10.0, Some(20.0)));
        let s = h.settled(Some(12_000.0), 1000).unwrap();
        assert_eq!(s.share, 0.25);
        assert_eq!(HotKeys::parse("share=0.3,keys=4").unwrap().share, 0.3);
        for bad in [
            "",
            "share=2",
            "rps=0",
            "share=0.1,rps=5",
            "keys=0,share=0.1",
            "share=0.1,x=1",
            "share",
        ] {
            let e = HotKeys::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--hot-keys:") && !e.contains('\n'), "{e}");
        }
        assert!(h.settled(None, 1000).is_err());
        assert!(h.settled(Some(1000.0), 1000).is_err());
        let many = HotKeys::parse("share=0.1,keys=600").unwrap();
        assert!(many.settled(None, 1000).is_err());
        assert_eq!(many.first_key(1000), 500);
    }
}
