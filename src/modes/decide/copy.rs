//! The copy of the data a decision measures, settled once before the first
//! run: all the stated keys where they fit this machine, else as many as do;
//! what a key of it takes; and what a decision learns on it beside what it
//! was asked ([`OnCopy`]).

use super::ask::Asked;
use crate::results::decide::DataCopy;
use crate::results::decide::assumptions::Method;
use crate::results::stats::num;

/// What a decision measures on, learnt before its first run and passed
/// beside the [`Asked`] it never writes into: the copy of the data, and the
/// team's cache (given by URL and measured beside, or observed) carried to
/// it, a point of the curve at its size.
#[derive(Clone, Debug, PartialEq)]
pub struct OnCopy {
    /// The copy of the data measured.
    pub copy: DataCopy,
    /// The team's cache carried to the copy, MiB (`None`: no cache of the
    /// team's was read).
    pub team_cache_mb: Option<u64>,
}

/// The keys of the copy kvlab measures for `ask`'s stated keys, and why: all
/// of them when they fit the method's share of the memory available (and
/// its most keys, a load of a minute or so), else as many as do.
pub fn scaled_keys(ask: &Asked) -> DataCopy {
    copy_of(
        ask.load.keys,
        ask.load.value_size,
        ask.quick,
        &ask.assumed.method,
    )
}

/// [`scaled_keys`] of `keys` of `value_size` bytes by method `m`.
fn copy_of(keys: u64, value_size: usize, quick: bool, m: &Method) -> DataCopy {
    let per_key = key_bytes(value_size, m);
    let available = available();
    let cap = m.copy_keys(quick);
    let by_memory = fitting(available, per_key, m);
    let fit = by_memory.min(cap);
    let limit = match (fit < by_memory, quick) {
        (false, _) => format!(
            "the most that fit {}% of this machine's available memory",
            m.copy_memory_share * 100.0
        ),
        (true, true) => format!(
            "--quick measures at most {} keys (drop --quick for up to {})",
            num(cap as f64),
            num(m.copy_keys(false) as f64)
        ),
        (true, false) => format!(
            "kvlab measures at most {} keys, a load of a minute or so",
            num(cap as f64)
        ),
    };
    let (keys, why) = match keys <= fit {
        true => (keys, "the whole data set fits this machine".into()),
        false => (
            fit,
            format!(
                "{} of the {} keys: {limit}; hit ratios are measured on the copy (the same distribution over fewer keys) and memory is carried to the stated keys per key",
                num(fit as f64),
                num(keys as f64),
            ),
        ),
    };
    DataCopy {
        keys,
        why,
        bytes_per_key: per_key,
    }
}

/// The memory this machine has free, bytes (4 GiB where /proc does not
/// say): what a copy, or a check's, is fitted to.
pub(in crate::modes::decide) fn available() -> u64 {
    crate::system::procfs::meminfo("MemAvailable").unwrap_or(4 << 30)
}

/// What a key of `value_size` bytes takes in a server's memory by method
/// `m`, bytes.
pub(in crate::modes::decide) fn key_bytes(value_size: usize, m: &Method) -> u64 {
    crate::workload::bytes_per_key(value_size as u64, 0, m.key_overhead_bytes)
}

/// The most keys of `per_key` bytes whose data fits method `m`'s share of
/// `available` bytes of memory (at least 1,000).
pub(in crate::modes::decide) fn fitting(available: u64, per_key: u64, m: &Method) -> u64 {
    ((available as f64 * m.copy_memory_share) as u64 / per_key.max(1)).max(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_names_what_limited_it() {
        // --quick: at most 100,000 keys, said as --quick's limit (not memory).
        let DataCopy { keys, why, .. } =
            copy_of(2_000_000, 500, true, &crate::results::decide::KVLAB.method);
        assert_eq!(keys, 100_000);
        assert!(why.contains("--quick measures at most"), "{why}");
        assert!(!why.contains("available memory"), "{why}");
        let DataCopy {
            keys,
            why,
            bytes_per_key,
        } = copy_of(50_000, 500, true, &crate::results::decide::KVLAB.method);
        assert_eq!(bytes_per_key, 620);
        assert_eq!(
            (keys, why.as_str()),
            (50_000, "the whole data set fits this machine")
        );
    }
}
