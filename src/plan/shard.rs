//! Sharded runs: one run's load split over N client processes (`--shard I/N`)
//! that start their measured windows at one wall-clock instant (`--start-at`).
//! This module parses both flags and computes a client's part of the run:
//! its connections, rate, requests and the slice of keys it loads.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::workload::slice_of;

/// This process is client `index` of `count` of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 0-based index of this client.
    pub index: usize,
    /// Clients of the run.
    pub count: usize,
}

/// The most clients one run may have.
pub const MAX_SHARDS: usize = 10_000;

impl FromStr for Shard {
    type Err = UsageError;

    /// Parses `I/N` (0 <= I < N).
    fn from_str(s: &str) -> Result<Shard, UsageError> {
        let fix = "give I/N with 0 <= I < N, e.g. --shard 0/4 for the first of 4 clients";
        let bad = |problem: String| UsageError::bad("--shard", problem, fix);
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| bad(format!("'{s}' is not I/N")))?;
        let parse = |x: &str| x.trim().parse::<usize>().ok();
        let (Some(index), Some(count)) = (parse(i), parse(n)) else {
            return Err(bad(format!("'{s}' is not two whole numbers I/N")));
        };
        if count == 0 || count > MAX_SHARDS {
            return Err(bad(format!(
                "{count} clients is out of range 1..{MAX_SHARDS}"
            )));
        }
        if index >= count {
            return Err(bad(format!(
                "client {index} of {count} does not exist (indexes run 0..{})",
                count - 1
            )));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// This client's part of `total` (requests, keys): the parts of all
    /// clients add up to exactly `total`.
    pub fn part(&self, total: u64) -> (u64, u64) {
        slice_of(total, self.index, self.count)
    }

    /// This client's connections among `total`.
    pub fn connections(&self, total: usize) -> Share {
        let (first, _) = slice_of(total as u64, self.index, self.count);
        Share {
            first: first as usize,
            total,
        }
    }

    /// The seed of this client's generators: the run's seed for client 0, a
    /// different one for each other client (so they draw different keys).
    pub fn seed(&self, seed: u64) -> u64 {
        seed.wrapping_add((self.index as u64).wrapping_mul(0xd1b5_4a32_d192_ed03))
    }

    /// Checks the shard against the run's connections and requests.
    pub fn check(&self, connections: usize, requests: Option<u64>) -> Result<(), UsageError> {
        if connections < self.count {
            return Err(UsageError::bad(
                "--shard",
                format!(
                    "{} clients cannot share {connections} connections",
                    self.count
                ),
                format!("give --connections {} or more", self.count),
            ));
        }
        if let Some(n) = requests
            && n < self.count as u64
        {
            return Err(UsageError::bad(
                "--requests",
                format!("{n} requests cannot be split over {} clients", self.count),
                format!("give --requests {} or more", self.count),
            ));
        }
        Ok(())
    }
}

/// The number of this client's connections among `total`.
pub fn local_connections(shard: Option<Shard>, total: usize) -> usize {
    match shard {
        Some(s) => {
            let (a, b) = slice_of(total as u64, s.index, s.count);
            (b - a) as usize
        }
        None => total,
    }
}

/// Parses `--start-at`: Unix milliseconds (e.g. `1767225600000`) or an RFC
/// 3339 time (`2026-01-01T00:00:00Z`, `2026-01-01T01:00:00.5+01:00`) → Unix ms.
pub fn parse_start_at(s: &str) -> Result<u64, UsageError> {
    let fix = "give Unix milliseconds (e.g. $(( $(date +%s) * 1000 + 30000 )) for 30 s from now) or an RFC 3339 time such as 2026-01-01T12:00:00Z";
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let ms: u64 = s
            .parse()
            .map_err(|_| UsageError::bad("--start-at", format!("'{s}' is too large"), fix))?;
        if ms < 1_000_000_000_000 {
            return Err(UsageError::bad(
                "--start-at",
                format!("{ms} looks like seconds, not milliseconds, since 1970"),
                fix,
            ));
        }
        return Ok(ms);
    }
    rfc3339_ms(s).ok_or_else(|| {
        UsageError::bad(
            "--start-at",
            format!("'{s}' is neither Unix milliseconds nor an RFC 3339 time"),
            fix,
        )
    })
}

/// Checks that a start instant leaves time for the warm-up from `now`.
pub fn check_start_at(at_ms: u64, warmup_s: f64, now: SystemTime) -> Result<(), UsageError> {
    let now_ms = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis()) as u64;
    let warm_ms = (warmup_s * 1000.0).ceil() as u64;
    if at_ms <= now_ms + warm_ms {
        let past = at_ms <= now_ms;
        return Err(UsageError::bad(
            "--start-at",
            if past {
                format!("{:.1} s in the past", (now_ms - at_ms) as f64 / 1000.0)
            } else {
                format!(
                    "only {:.1} s from now, less than the {warmup_s} s warm-up",
                    (at_ms - now_ms) as f64 / 1000.0
                )
            },
            "give a time far enough ahead for every client to load, connect and warm up (e.g. now + 30 s)",
        ));
    }
    Ok(())
}

/// The wall-clock instant of Unix milliseconds `ms`.
pub fn instant_of(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// Unix milliseconds of `t` (fractional).
pub fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` → Unix ms.
fn rfc3339_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let sep = |i: usize, c: &[u8]| c.contains(&b[i]);
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_ms = 0i64;
    if b[i] == b'.' {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = &s[start..i.min(start + 3)];
        frac_ms = digits.parse::<i64>().ok()? * 10i64.pow(3 - digits.len() as u32);
    }
    let offset_min = match &s[i..] {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (oh * 60 + om)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    u64::try_from(secs * 1000 + frac_ms).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// This process's part of a run whose connections several client processes
/// split: connections `first..first + Spec::connections` of `total`. Quotas,
/// the open-loop schedule and sequential key slices are taken over all
/// `total`, so the parts together make the run the flags describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// Index, among all the run's connections, of this process's first one.
    pub first: usize,
    /// All the run's connections, over every client process.
    pub total: usize,
}

impl Share {
    /// The whole run of `connections` in one process.
    pub fn all(connections: usize) -> Share {
        Share {
            first: 0,
            total: connections,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_what_does_not_exist() {
        assert_eq!(
            "1/4".parse::<Shard>().unwrap(),
            Shard { index: 1, count: 4 }
        );
        for bad in ["2/2", "0/0", "x", "1", "-1/2", "1/x", ""] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains("--shard"), "{bad}: {e}");
        }
    }

    #[test]
    fn parts_add_up_to_the_whole() {
        for n in 1..7 {
            let shards: Vec<Shard> = (0..n).map(|index| Shard { index, count: n }).collect();
            let reqs: u64 = shards
                .iter()
                .map(|s| s.part(1001))
                .map(|(a, b)| b - a)
                .sum();
            assert_eq!(reqs, 1001);
            let conns: usize = shards.iter().map(|s| local_connections(Some(*s), 50)).sum();
            assert_eq!(conns, 50);
            // Connections are numbered contiguously over every client.
            let mut next = 0;
            for s in &shards {
                let share = s.connections(50);
                assert_eq!((share.first, share.total), (next, 50));
                next += local_connections(Some(*s), 50);
            }
        }
        let s = Shard { index: 0, count: 3 };
        assert_eq!(s.seed(9), 9);
        assert_ne!(Shard { index: 1, count: 3 }.seed(9), 9);
    }

    #[test]
    fn start_times_parse_as_unix_ms_or_rfc3339() {
        assert_eq!(parse_start_at("1767225600000").unwrap(), 1_767_225_600_000);
        assert_eq!(
            parse_start_at("2026-01-01T00:00:00Z").unwrap(),
            1_767_225_600_000
        );
        assert_eq!(
            parse_start_at("2026-01-01T01:00:00.25+01:00").unwrap(),
            1_767_225_600_250
        );
        assert_eq!(parse_start_at("1970-01-01t00:00:01.5z").unwrap(), 1500);
        for bad in [
            "tomorrow",
            "1767225600",
            "2026-13-01T00:00:00Z",
            "2026-01-01",
        ] {
            let e = parse_start_at(bad).unwrap_err().to_string();
            assert!(e.contains("--start-at"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_start_must_leave_time_for_the_warm_up() {
        let now = instant_of(1_767_225_600_000);
        assert!(check_start_at(1_767_225_600_000 - 1, 2.0, now).is_err());
        assert!(check_start_at(1_767_225_601_000, 2.0, now).is_err());
        assert!(check_start_at(1_767_225_603_000, 2.0, now).is_ok());
    }
}
