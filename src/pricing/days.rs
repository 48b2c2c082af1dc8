//! Calendar days as the catalogs write them (`YYYY-MM-DD`): a price's age is
//! the days between its date and the day it is used.

use anyhow::{Result, bail};

/// Days a price may be old before it is said to be old.
pub const OLD_AFTER_DAYS: i64 = 365;

/// Days since 1970-01-01 of `date` (`YYYY-MM-DD`).
pub fn parse(date: &str) -> Result<i64> {
    let p: Vec<&str> = date.split('-').collect();
    let n = |s: &str| s.parse::<i64>().ok();
    match p.as_slice() {
        [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2 => {
            let (Some(y), Some(m), Some(d)) = (n(y), n(m), n(d)) else {
                bail!("not a date as YYYY-MM-DD");
            };
            if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
                bail!("not a date as YYYY-MM-DD");
            }
            Ok(crate::plan::shard::days_from_civil(y, m, d))
        }
        _ => bail!("not a date as YYYY-MM-DD"),
    }
}

/// Today, as `YYYY-MM-DD` (UTC).
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    to_civil(secs.div_euclid(86_400))
}

/// Whether `date` is older than [`OLD_AFTER_DAYS`] on `on` (both dates; one
/// not a date is not said old).
pub fn old(date: &str, on: &str) -> bool {
    match (parse(date), parse(on)) {
        (Ok(d), Ok(o)) => o - d > OLD_AFTER_DAYS,
        _ => false,
    }
}

/// The civil date of a day since 1970-01-01, as `YYYY-MM-DD`.
fn to_civil(z: i64) -> String {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_a_price_over_a_year_old_is_old() {
        assert_eq!(parse("1970-01-01").unwrap(), 0);
        for d in ["2021-08-03", "2024-02-29", "2026-12-07"] {
            assert_eq!(to_civil(parse(d).unwrap()), d);
        }
        assert!(old("2021-08-03", "2026-12-07"));
        assert!(!old("2026-07-20", "2026-12-07"));
        assert!(!old("2025-12-07", "2026-12-07"));
        assert!(old("2025-12-06", "2026-12-07"));
        assert!(parse("2026-13-01").is_err() && parse("26-1-1").is_err());
        assert_eq!(today().len(), 10);
    }
}
