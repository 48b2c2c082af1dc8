//! Workload profiles (`--profile`, a study's `profile`): the value sizes, the
//! SET:GET mix, the key popularity and the TTL of one published production
//! cache cluster, from the statistics of Twitter's 2020 cache traces
//! (repository `twitter/cache-trace`, file `stat/2020Mar.md`; Yang et al.,
//! OSDI 2020). Each profile says what kvlab does not reproduce.

use super::Ratio;

/// One production cluster's workload, as kvlab reproduces it.
#[derive(Clone, Copy, Debug)]
pub struct Profile {
    /// `twitter-cN`.
    pub name: &'static str,
    /// The published source of the figures.
    pub source: &'static str,
    /// Value sizes (`--value-size`): a bounded Pareto whose mean is the
    /// cluster's mean value size.
    pub value_sizes: &'static str,
    /// The cluster's mean value size, bytes.
    pub value_mean: u32,
    /// SET:GET, from the cluster's operation shares.
    pub ratio: Ratio,
    /// Zipf exponent of key popularity.
    pub theta: f64,
    /// The cluster's most common TTL, seconds.
    pub ttl_s: u32,
    /// Its TTLs as published.
    pub ttls: &'static str,
    /// Its mean key size, bytes.
    pub key_bytes: u32,
    /// Its operations beyond get and set, as published (`""`: none).
    pub other_ops: &'static str,
}

/// The built-in profiles.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "twitter-c1",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster1",
        value_sizes: "pareto:78-4992:1.2",
        value_mean: 267,
        ratio: Ratio { set: 1, get: 99 },
        theta: 2.68,
        ttl_s: 240,
        ttls: "240s:1.00",
        key_bytes: 80,
        other_ops: "",
    },
    Profile {
        name: "twitter-c4",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster4",
        value_sizes: "pareto:715-45760:1.2",
        value_mean: 2439,
        ratio: Ratio { set: 7, get: 93 },
        theta: 1.10,
        ttl_s: 60,
        ttls: "60s:0.39 300s:0.24 1h:0.13 600s:0.12 4h:0.09 1d:0.03",
        key_bytes: 67,
        other_ops: "",
    },
    Profile {
        name: "twitter-c7",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster7",
        value_sizes: "pareto:567-36288:1.2",
        value_mean: 1936,
        ratio: Ratio { set: 18, get: 82 },
        theta: 1.07,
        ttl_s: 6480,
        ttls: "1.8h:0.28 1.7h:0.24 1.9h:0.23 1.6h:0.13 2h:0.12",
        key_bytes: 17,
        other_ops: "",
    },
    Profile {
        name: "twitter-c19",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster19",
        value_sizes: "pareto:32-2048:1.2",
        value_mean: 101,
        ratio: Ratio { set: 25, get: 75 },
        theta: 0.735,
        ttl_s: 27000,
        ttls: "6.6h to 7.5h, about 0.07 each",
        key_bytes: 42,
        other_ops: "",
    },
    Profile {
        name: "twitter-c29",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster29",
        value_sizes: "pareto:234-14976:1.2",
        value_mean: 799,
        ratio: Ratio { set: 13, get: 86 },
        theta: 1.23,
        ttl_s: 3600,
        ttls: "1h:0.67 2h:0.33",
        key_bytes: 36,
        other_ops: "",
    },
];

/// The profile called `name`.
pub fn profile(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name == name)
}

/// The profiles' names: `twitter-c1, …`.
pub fn names() -> String {
    PROFILES
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Profile {
    /// What kvlab does not reproduce of the cluster, in one sentence.
    pub fn not_reproduced(&self, ttl_applied: bool) -> String {
        let mut parts = vec![
            format!(
                "the value sizes' shape (only their mean, {} B, is published: kvlab draws them from {})",
                self.value_mean, self.value_sizes
            ),
            format!(
                "the key size ({} B there; kvlab's keys are its prefix and a number)",
                self.key_bytes
            ),
            "one-hit wonders and a key space that grows (kvlab's keys are a fixed set, --keys)"
                .to_string(),
        ];
        parts.push(match ttl_applied {
            true => format!(
                "the TTL mix ({}: kvlab gives every key {} s)",
                self.ttls, self.ttl_s
            ),
            false => format!("the TTLs ({}: a database keeps its rows)", self.ttls),
        });
        if !self.other_ops.is_empty() {
            parts.push(format!(
                "the operations other than get and set ({})",
                self.other_ops
            ));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{SizeDist, Values};

    #[test]
    fn every_profile_parses_and_keeps_its_published_mean() {
        for p in PROFILES {
            let d: SizeDist = p.value_sizes.parse().unwrap();
            let mean = Values::with(&d).mean();
            let want = f64::from(p.value_mean);
            assert!(
                (mean - want).abs() < 0.1 * want,
                "{}: {mean} vs {want}",
                p.name
            );
            assert!(p.theta > 0.0 && p.ratio.get > 0);
            assert_eq!(profile(p.name).unwrap().name, p.name);
            assert!(p.not_reproduced(true).contains("key size"));
        }
        assert!(profile("nope").is_none());
    }
}
