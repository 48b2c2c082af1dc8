//! Workload profiles (`--profile`, a study's `profile`): the value sizes, the
//! SET:GET mix, the key popularity and the TTL of one published production
//! cache cluster, from the statistics of Twitter's 2020 cache traces
//! (repository `twitter/cache-trace`, file `stat/2020Mar.md`; Yang et al.,
//! OSDI 2020), and presets from the figures published across clusters
//! (Twitter's 54 clusters; Meta's CacheLib workload models, Berg et al.,
//! OSDI 2020). Each profile says what kvlab does not reproduce.

use super::Ratio;

/// One production cluster's workload, as kvlab reproduces it.
#[derive(Clone, Copy, Debug)]
pub struct Profile {
    /// `twitter-cN`, or a preset's name (`twitter-median`, `meta-low-skew`, …).
    pub name: &'static str,
    /// The published source of the figures.
    pub source: &'static str,
    /// Value sizes (`--value-size`): a bounded Pareto whose mean is the
    /// cluster's mean value size.
    pub value_sizes: &'static str,
    /// The cluster's mean value size, bytes (`None`: not among the published
    /// figures used; `value_sizes` is then kvlab's default).
    pub value_mean: Option<u32>,
    /// SET:GET, from the cluster's operation shares.
    pub ratio: Ratio,
    /// Zipf exponent of key popularity.
    pub theta: f64,
    /// The cluster's most common TTL, seconds (0: none is given).
    pub ttl_s: u32,
    /// Its TTLs as published.
    pub ttls: &'static str,
    /// Its mean key size, bytes (`None`: not published as one figure).
    pub key_bytes: Option<u32>,
    /// Its operations beyond get and set, as published (`""`: none).
    pub other_ops: &'static str,
    /// A preset: what it stands for, a composite of figures published across
    /// clusters rather than one cluster (`""`: one cluster).
    pub composite: &'static str,
}

/// The built-in profiles.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "twitter-c1",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster1",
        value_sizes: "pareto:78-4992:1.2",
        value_mean: Some(267),
        ratio: Ratio { set: 1, get: 99 },
        theta: 2.68,
        ttl_s: 240,
        ttls: "240s:1.00",
        key_bytes: Some(80),
        other_ops: "",
        composite: "",
    },
    Profile {
        name: "twitter-c4",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster4",
        value_sizes: "pareto:715-45760:1.2",
        value_mean: Some(2439),
        ratio: Ratio { set: 7, get: 93 },
        theta: 1.10,
        ttl_s: 60,
        ttls: "60s:0.39 300s:0.24 1h:0.13 600s:0.12 4h:0.09 1d:0.03",
        key_bytes: Some(67),
        other_ops: "",
        composite: "",
    },
    Profile {
        name: "twitter-c7",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster7",
        value_sizes: "pareto:567-36288:1.2",
        value_mean: Some(1936),
        ratio: Ratio { set: 18, get: 82 },
        theta: 1.07,
        ttl_s: 6480,
        ttls: "1.8h:0.28 1.7h:0.24 1.9h:0.23 1.6h:0.13 2h:0.12",
        key_bytes: Some(17),
        other_ops: "",
        composite: "",
    },
    Profile {
        name: "twitter-c19",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster19",
        value_sizes: "pareto:32-2048:1.2",
        value_mean: Some(101),
        ratio: Ratio { set: 25, get: 75 },
        theta: 0.735,
        ttl_s: 27000,
        ttls: "6.6h to 7.5h, about 0.07 each",
        key_bytes: Some(42),
        other_ops: "",
        composite: "",
    },
    Profile {
        name: "twitter-c29",
        source: "Twitter's cache traces, stat/2020Mar.md, cluster29",
        value_sizes: "pareto:234-14976:1.2",
        value_mean: Some(799),
        ratio: Ratio { set: 13, get: 86 },
        theta: 1.23,
        ttl_s: 3600,
        ttls: "1h:0.67 2h:0.33",
        key_bytes: Some(36),
        other_ops: "",
        composite: "",
    },
    TWITTER_MEDIAN,
    Profile {
        name: "twitter-skew-p25",
        theta: 0.63,
        composite: "the median of Twitter's 54 clusters with its key popularity at their 25th percentile (zipf 0.63)",
        ..TWITTER_MEDIAN
    },
    Profile {
        name: "twitter-skew-p90",
        theta: 1.88,
        composite: "the median of Twitter's 54 clusters with its key popularity at their 90th percentile (zipf 1.88)",
        ..TWITTER_MEDIAN
    },
    Profile {
        name: "twitter-write-heavy",
        ratio: Ratio { set: 30, get: 70 },
        composite: "the median of Twitter's 54 clusters with 30% writes (38% of the clusters write more)",
        ..TWITTER_MEDIAN
    },
    Profile {
        name: "twitter-short-ttl",
        ttl_s: 300,
        composite: "the median of Twitter's 54 clusters with a main TTL of 5 minutes (a quarter of the clusters have one that short or shorter)",
        ..TWITTER_MEDIAN
    },
    META_LOW_SKEW,
    Profile {
        name: "meta-high-skew",
        theta: 0.97,
        composite: "the most skewed of the Zipf fits of Meta's CacheLib workload models (zipf 0.97); their write share, sizes and TTLs are not among the figures used: kvlab's defaults (GET only, 256 B, no TTL)",
        ..META_LOW_SKEW
    },
];

/// The median of Twitter's 54 clusters: each figure at its median across
/// them (Zipf 1.21, 13% writes, a mean object of 230 B).
const TWITTER_MEDIAN: Profile = Profile {
    name: "twitter-median",
    source: "Yang, Yue and Rashmi, OSDI 2020, the figures across Twitter's 54 cache clusters",
    value_sizes: "pareto:67-4288:1.2",
    value_mean: Some(230),
    ratio: Ratio { set: 13, get: 87 },
    theta: 1.21,
    ttl_s: 0,
    ttls: "a main TTL of 5 minutes or less in a quarter of the clusters, no one median",
    key_bytes: None,
    other_ops: "",
    composite: "the median of Twitter's 54 clusters: key popularity (zipf 1.21), write share (13%) and mean object size (230 B, key and value, all of it drawn as the value here) each at its median",
};

/// The least skewed of the Zipf fits of Meta's CacheLib workload models.
const META_LOW_SKEW: Profile = Profile {
    name: "meta-low-skew",
    source: "Berg et al., \"The CacheLib Caching Engine\", OSDI 2020, the Zipf fits of its workload models (0.44 to 0.97)",
    value_sizes: "256",
    value_mean: None,
    ratio: Ratio { set: 0, get: 1 },
    theta: 0.44,
    ttl_s: 0,
    ttls: "not among the figures used",
    key_bytes: None,
    other_ops: "",
    composite: "the least skewed of the Zipf fits of Meta's CacheLib workload models (zipf 0.44); their write share, sizes and TTLs are not among the figures used: kvlab's defaults (GET only, 256 B, no TTL)",
};

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
        let mut parts = Vec::new();
        if !self.composite.is_empty() {
            parts.push(format!(
                "one cluster (a preset: {}; one cluster has all its figures together)",
                self.composite
            ));
        }
        if let Some(mean) = self.value_mean {
            parts.push(format!(
                "the value sizes' shape (only their mean, {mean} B, is published: kvlab draws them from {})",
                self.value_sizes
            ));
        }
        parts.push(match self.key_bytes {
            Some(b) => {
                format!("the key size ({b} B there; kvlab's keys are its prefix and a number)")
            }
            None => "the key size (kvlab's keys are its prefix and a number)".to_string(),
        });
        parts.push(
            "one-hit wonders and a key space that grows (kvlab's keys are a fixed set, --keys)"
                .to_string(),
        );
        parts.push(match (self.ttl_s, ttl_applied) {
            (0, _) => format!(
                "the TTLs ({}: kvlab sets none unless --ttl gives one)",
                self.ttls
            ),
            (_, true) => format!(
                "the TTL mix ({}: kvlab gives every key {} s)",
                self.ttls, self.ttl_s
            ),
            (_, false) => format!("the TTLs ({}: a database keeps its rows)", self.ttls),
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
            let want = f64::from(p.value_mean.unwrap_or(256));
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

    #[test]
    fn the_presets_carry_the_published_figures_across_clusters() {
        let m = profile("twitter-median").unwrap();
        assert_eq!(
            (m.theta, m.ratio.set, m.ratio.get, m.ttl_s),
            (1.21, 13, 87, 0)
        );
        assert_eq!(profile("twitter-skew-p25").unwrap().theta, 0.63);
        assert_eq!(profile("twitter-skew-p90").unwrap().theta, 1.88);
        assert_eq!(profile("twitter-write-heavy").unwrap().ratio.set, 30);
        assert_eq!(profile("twitter-short-ttl").unwrap().ttl_s, 300);
        assert_eq!(profile("meta-low-skew").unwrap().theta, 0.44);
        assert_eq!(profile("meta-high-skew").unwrap().theta, 0.97);
        let said = m.not_reproduced(false);
        assert!(
            said.contains("a preset") && said.contains("kvlab sets none"),
            "{said}"
        );
        let one = profile("twitter-c29").unwrap().not_reproduced(true);
        assert!(!one.contains("preset") && one.contains("3600 s"), "{one}");
    }
}
