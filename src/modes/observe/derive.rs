//! The stated load from what the watched servers counted. With a cache in
//! front of a database, each request of the application reads the cache or
//! writes the database (a miss reads the database and fills the cache; a
//! write invalidates the cache's copy), so the rate is the cache's reads plus
//! the database's writes, second by second. The keys are the database's (the
//! table read most), else the cache's; value sizes the cache's sample, else
//! the table's; the skew is the Zipf exponent under which a cache of the
//! items it holds, with the writes seen, hits as it did under its own
//! eviction policy and TTL (the model `kvlab decide` draws its curves with,
//! [`crate::workload::trace::model::Model`]: Che's approximation for exact LRU,
//! the policy simulated otherwise).

use crate::results::observe::{ObservedLoad, ValueSizes, Watched};
use crate::results::stats::num;
use crate::results::usage::Role;
use crate::workload::params::KeyDistribution;
use crate::workload::trace::model::Model;
use crate::workload::trace::policy::Policy;

/// The exponents the fit searches within.
const THETA: (f64, f64) = (0.05, 2.5);

/// The server watched as `role`.
fn of(w: &[Watched], role: Role) -> Option<&Watched> {
    w.iter().find(|s| s.role == role)
}

/// The load the servers `w` show.
pub fn load(w: &[Watched]) -> ObservedLoad {
    let (cache, db) = (of(w, Role::Cache), of(w, Role::Database));
    let (rps, rps_mean, rps_busiest, rps_from) = rate(cache, db);
    let (write_share, mix_from) = mix(cache, db);
    let (keys, keys_from) = match (db, cache) {
        (Some(d), _) if d.holding.keys.is_some() => (d.holding.keys, d.holding.keys_from.clone()),
        (None, Some(c)) => (
            c.holding.keys,
            format!("{} (the cache alone holds the data)", c.holding.keys_from),
        ),
        _ => (
            None,
            "not known: the database's table could not be read".into(),
        ),
    };
    let sampled = [cache, db]
        .into_iter()
        .flatten()
        .find(|s| !s.holding.value_sizes.is_empty());
    let value_size = sampled.map(|s| sizes(&s.holding.value_sizes));
    let value_size_from = sampled.map_or(
        "not known: no server's values could be sampled".into(),
        |s| format!("the {}: {}", s.role, s.holding.sizes_from),
    );
    let cache_hit_ratio = cache.and_then(|c| {
        let (h, m) = (c.window.hits?, c.window.misses?);
        (h + m > 0).then(|| h as f64 / (h + m) as f64)
    });
    let (cache_ttl_s, ttl_from) = ttl(cache);
    // A TTL counts by the reads a second: without a rate, none is modelled.
    let clock = match rps_mean.filter(|r| *r > 0.0) {
        Some(r) => (r, cache_ttl_s.unwrap_or(0)),
        None => (0.0, 0),
    };
    let (zipf, skew_from) = skew(cache, keys, cache_hit_ratio, write_share, clock);
    ObservedLoad {
        rps,
        rps_mean,
        rps_busiest,
        rps_from,
        ratio: write_share.map(ratio),
        write_share,
        mix_from,
        keys,
        keys_from,
        value_size,
        value_size_from,
        zipf,
        skew_from,
        cache_hit_ratio,
        cache_items: cache.and_then(|c| c.holding.keys),
        cache_memory_bytes: cache.and_then(|c| c.holding.memory_bytes),
        cache_resident_bytes: cache.and_then(|c| c.holding.resident_bytes),
        cache_memory_limit: cache.and_then(|c| c.holding.memory_limit),
        cache_ttl_s,
        ttl_from,
    }
}

/// The TTL the cache's fills live: where most sampled keys carry one, the
/// longest left among them (a fill lives its TTL from its fill: the TTLs
/// left spread from 0 up to it), rounded up; with where it came from.
fn ttl(cache: Option<&Watched>) -> (Option<u32>, String) {
    let Some(c) = cache else {
        return (None, "no cache watched".into());
    };
    let (asked, left) = (c.holding.ttl_asked, &c.holding.ttls_left_s);
    let with = left.len() as u64;
    let longest = left.iter().copied().fold(0.0, f64::max);
    match (asked, 2 * with >= asked) {
        (0, _) => (None, "not known: no key's TTL could be asked".into()),
        (_, false) => (
            None,
            format!(
                "{with} of {asked} sampled keys carry a TTL: most live until evicted; none taken"
            ),
        ),
        (_, true) => {
            let t = (longest.ceil() as u32).max(1);
            (
                Some(t),
                format!(
                    "{with} of {asked} sampled keys carry a TTL; the longest left, {t} s, taken as the TTL each fill lives"
                ),
            )
        }
    }
}

/// The share of the watch's seconds the stated peak is taken at: a high
/// percentile, so that one burst second (an application catching up after a
/// stall) does not size the decision.
pub const PEAK_PERCENTILE: f64 = 0.9;

/// The peak a load is stated at from its per-second rates `each`: their
/// [`PEAK_PERCENTILE`] (nearest rank; from five seconds on, never the
/// busiest second itself); and the busiest second.
pub fn stated_peak(each: &[f64]) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = each.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let busiest = *v.last()?;
    let mut rank = ((PEAK_PERCENTILE * n as f64).ceil() as usize).clamp(1, n);
    if n >= 5 {
        rank = rank.min(n - 1);
    }
    Some((v[rank - 1], busiest))
}

/// The application's requests a second: (the stated peak, the mean, the
/// busiest second, source).
type Rate = (Option<f64>, Option<f64>, Option<f64>, String);

/// The application's requests a second ([`Rate`]).
fn rate(cache: Option<&Watched>, db: Option<&Watched>) -> Rate {
    // (reads of, writes of): whose counters hold the application's reads
    // and whose its writes.
    let (r, w, from) = match (cache, db) {
        (Some(c), Some(d)) => (
            c,
            d,
            "the cache's reads + the database's writes (each request of the application reads the cache or writes the database)",
        ),
        (Some(c), None) => (c, c, "the cache's reads + writes"),
        (None, Some(d)) => (d, d, "the database's reads + writes"),
        (None, None) => return (None, None, None, "no server watched".into()),
    };
    let seconds = r.per_second.len().min(w.per_second.len());
    let each: Vec<f64> = (0..seconds)
        .filter_map(|i| Some(r.per_second[i].reads? + w.per_second[i].writes?))
        .collect();
    let peaks = stated_peak(&each).filter(|p| p.1 > 0.0);
    let mean = match (r.window.reads, w.window.writes, r.window_s.min(w.window_s)) {
        (Some(a), Some(b), s) if s > 0.0 => Some((a + b) as f64 / s),
        _ => None,
    };
    let from = match (peaks, each.is_empty()) {
        (Some((p, busiest)), _) => format!(
            "{from}, over {} seconds: the {:.0}th percentile of the per-second rates{}",
            each.len(),
            PEAK_PERCENTILE * 100.0,
            match busiest > p * 1.1 {
                true => format!(
                    ", not the busiest second ({} req/s, {:.1}x: a burst, such as an application catching up after a stall, does not size the decision)",
                    num(busiest),
                    busiest / p.max(1e-9)
                ),
                false => String::new(),
            }
        ),
        (None, false) => "not known: no request in the window".into(),
        (None, true) => format!("not known: {} did not count reads and writes", r.server),
    };
    let mean = mean.filter(|_| peaks.is_some());
    // Uneven seconds (a stall, then a burst that catches up) can put the
    // percentile under the mean: a peak is never stated below the mean.
    let (peak, from) = match peaks.map(|p| (p.0, never_below_mean(p.0, mean))) {
        Some((p, (m, true))) => (
            Some(m),
            format!(
                "{from}; the mean over the window ({} req/s), above that percentile ({} req/s): a peak is never stated below the mean",
                num(m),
                num(p)
            ),
        ),
        Some((_, (p, false))) => (Some(p), from),
        None => (None, from),
    };
    (peak, mean, peaks.map(|p| p.1), from)
}

/// The peak stated from the percentile `p` of the per-second rates and the
/// window's mean `m`: `p`, or `m` where uneven seconds (a stall, then a
/// burst that catches up) put `p` under it; whether it is the mean.
fn never_below_mean(p: f64, m: Option<f64>) -> (f64, bool) {
    match m {
        Some(m) if m > p => (m, true),
        _ => (p, false),
    }
}

/// The writes' share of the application's requests, and its source.
fn mix(cache: Option<&Watched>, db: Option<&Watched>) -> (Option<f64>, String) {
    let (reads, writes, from) = match (cache, db) {
        (Some(c), Some(d)) => (
            c.window.reads,
            d.window.writes,
            "the database's writes over the cache's reads and them",
        ),
        (Some(c), None) => (
            c.window.reads,
            c.window.writes,
            "the cache's writes over its reads and writes",
        ),
        (None, Some(d)) => (
            d.window.reads,
            d.window.writes,
            "the database's writes over its reads and writes",
        ),
        (None, None) => (None, None, ""),
    };
    match (reads, writes) {
        (Some(r), Some(w)) if r + w > 0 => (Some(w as f64 / (r + w) as f64), from.into()),
        _ => (
            None,
            "not known: reads and writes were not both counted".into(),
        ),
    }
}

/// `share` of writes as `--ratio` SET:GET: the simplest weights within a
/// quarter of a point of it.
pub fn ratio(share: f64) -> String {
    let share = share.clamp(0.0, 1.0);
    for total in 1..=400u64 {
        let w = (share * total as f64).round() as u64;
        if (w as f64 / total as f64 - share).abs() <= 0.0025 {
            return format!("{w}:{}", total - w);
        }
    }
    let w = (share * 1000.0).round() as u64;
    format!("{w}:{}", 1000 - w)
}

/// A sample of value sizes summed up, with its `--value-size`.
pub fn sizes(sample: &[u64]) -> ValueSizes {
    let mut s = sample.to_vec();
    s.sort_unstable();
    let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    let mean = s.iter().sum::<u64>() as f64 / s.len() as f64;
    let (lo, hi) = (s[0], s[s.len() - 1]);
    let flag = match hi - lo <= (mean * 0.02) as u64 {
        true => format!("{}", mean.round() as u64),
        false => {
            // The deciles' midpoints, equal sizes merged.
            let mut parts: Vec<(u64, u32)> = Vec::new();
            for d in 0..10 {
                let size = at((d as f64 + 0.5) / 10.0).max(1);
                match parts.last_mut() {
                    Some(last) if last.0 == size => last.1 += 1,
                    _ => parts.push((size, 1)),
                }
            }
            let each: Vec<String> = parts.iter().map(|(s, w)| format!("{s}:{w}")).collect();
            each.join(",")
        }
    };
    ValueSizes {
        sampled: s.len(),
        mean,
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        max: hi,
        flag,
    }
}

/// The Zipf exponent under which a cache of its items, of `keys` keys, with
/// `writes` of requests invalidating, hits `hit` under its eviction policy
/// at `rps` requests a second with fills living `ttl_s` (0: no TTL); and how
/// it was found.
fn skew(
    cache: Option<&Watched>,
    keys: Option<u64>,
    hit: Option<f64>,
    writes: Option<f64>,
    (rps, ttl_s): (f64, u32),
) -> (Option<f64>, String) {
    let Some(c) = cache else {
        return (
            None,
            "not known: no cache watched (its hit ratio is what the skew is fitted to)".into(),
        );
    };
    let (Some(keys), Some(items), Some(hit), Some(w)) = (keys, c.holding.keys, hit, writes) else {
        return (
            None,
            "not known: the keys, the cache's items, its hit ratio or the mix is unknown".into(),
        );
    };
    if items >= keys {
        return (
            None,
            format!(
                "not known: the cache holds all {} keys, so its hit ratio says nothing of the skew",
                num(keys as f64)
            ),
        );
    }
    let policy = c.eviction.as_ref().map_or(Policy::Lru, |e| e.policy);
    let model = |theta: f64| {
        Model::new(&KeyDistribution::Zipf { theta }, w, (policy, rps))
            .with_ttl(f64::from(ttl_s))
            .hit(keys, items as f64)
            .unwrap_or(0.0)
    };
    let said = format!(
        "fitted: the exponent under which a cache of {} of {} keys, with {:.1}% of requests writes that drop a key{}, hits {:.2}% as the cache's own counters say ({})",
        num(items as f64),
        num(keys as f64),
        w * 100.0,
        match ttl_s {
            0 => String::new(),
            t => format!(" and fills that live {t} s"),
        },
        hit * 100.0,
        match (policy, ttl_s) {
            (Policy::Lru, 0) => "Che's approximation of LRU".to_string(),
            _ => format!("its {policy} simulated, as kvlab decide draws its curve"),
        }
    );
    // A cache that evicted nothing holds every key read since it started,
    // not an LRU's share: its hit ratio overstates the skew.
    let said = match c.window.evictions {
        Some(0) => format!(
            "{said}; the cache evicted nothing in the window, so it is not yet the LRU of its size the fit takes: an upper bound"
        ),
        _ => said,
    };
    let (mut lo, mut hi) = THETA;
    if model(lo) >= hit {
        return (
            Some(lo),
            format!("{said}; at most {lo}: the keys are read about uniformly"),
        );
    }
    if model(hi) <= hit {
        return (
            Some(hi),
            format!("{said}; at least {hi}, the most the fit tries"),
        );
    }
    // A simulated policy takes a tenth of a second a step: 2.45 / 2^14 is
    // finer than the exponent is said.
    let steps = match (policy, ttl_s) {
        (Policy::Lru, 0) => 40,
        _ => 14,
    };
    for _ in 0..steps {
        let mid = (lo + hi) / 2.0;
        match model(mid) < hit {
            true => lo = mid,
            false => hi = mid,
        }
    }
    (Some(((lo + hi) / 2.0 * 1000.0).round() / 1000.0), said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_burst_second_does_not_size_the_stated_peak() {
        // 20 s paced at 3,000 with one second of 5,000 more reads beside it
        // (2.7x): stated within 10% of 3,000, the burst the busiest second.
        let mut each = vec![3000.0; 20];
        each[7] = 8000.0;
        let (peak, busiest) = stated_peak(&each).unwrap();
        assert!((peak - 3000.0).abs() <= 300.0, "{peak}");
        assert_eq!(busiest, 8000.0);
        // A load that moves: its high seconds, not its mean.
        let ramp: Vec<f64> = (1..=10).map(|i| i as f64 * 100.0).collect();
        assert_eq!(stated_peak(&ramp).unwrap(), (900.0, 1000.0));
        // Too few seconds to leave one out: the busiest.
        assert_eq!(stated_peak(&[1.0, 5.0, 2.0]).unwrap(), (5.0, 5.0));
        assert_eq!(stated_peak(&[]), None);
        // Uneven seconds on a busy host put the percentile (5,116) under
        // the mean (5,118): the mean is stated.
        assert_eq!(never_below_mean(5116.0, Some(5118.0)), (5118.0, true));
        assert_eq!(never_below_mean(900.0, Some(550.0)), (900.0, false));
        assert_eq!(never_below_mean(900.0, None), (900.0, false));
    }

    #[test]
    fn a_mix_reads_as_a_reduced_ratio_and_sizes_as_a_flag() {
        assert_eq!(ratio(0.1), "1:9");
        assert_eq!(ratio(0.0), "0:1");
        assert_eq!(ratio(0.102), "1:9");
        assert_eq!(ratio(0.05), "1:19");
        assert_eq!(ratio(0.333), "1:2");
        let fixed = sizes(&[512; 100]);
        assert_eq!((fixed.flag.as_str(), fixed.mean), ("512", 512.0));
        let spread: Vec<u64> = (1..=100).map(|i| i * 10).collect();
        let s = sizes(&spread);
        assert_eq!(s.p50, 510);
        assert_eq!(s.flag.split(',').count(), 10);
        assert!(s.flag.starts_with("60:1,"), "{}", s.flag);
    }
}
