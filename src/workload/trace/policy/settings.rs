//! A cache's eviction policy from its own settings, by the names the server
//! gives them: Redis's and Valkey's `CONFIG GET` (`maxmemory-policy`,
//! `maxmemory-samples`, `lfu-log-factor`, `lfu-decay-time`) and memcached's
//! `stats settings` (`lru_segmented`, `evictions`).

use std::collections::BTreeMap;

use super::Policy;

/// Redis's `maxmemory-samples` (and Valkey's) when not set.
const REDIS_SAMPLES: u32 = 5;

impl Policy {
    /// The policy that `settings` (a server's, by its own names) say the
    /// cache evicts by; an error says why it has no miss-ratio curve for
    /// kvlab's keys (it evicts only keys with a TTL, or never evicts) or
    /// that the settings name no policy.
    pub fn of_settings(settings: &BTreeMap<String, String>) -> Result<Policy, String> {
        let get = |k: &str| settings.get(k).map(String::as_str);
        let number = |k: &str, default: u32| -> Result<u32, String> {
            get(k).map_or(Ok(default), |v| {
                v.trim()
                    .parse()
                    .map_err(|_| format!("{k} {v}: not a whole number"))
            })
        };
        if let Some(p) = get("maxmemory-policy") {
            let samples = number("maxmemory-samples", REDIS_SAMPLES)?.clamp(1, 64);
            return match p.trim() {
                "allkeys-lru" => Ok(Policy::RedisLru { samples }),
                "allkeys-lfu" => Ok(Policy::RedisLfu {
                    samples,
                    log_factor: number("lfu-log-factor", 10)?,
                    decay_time_min: number("lfu-decay-time", 1)?,
                }),
                "allkeys-random" => Ok(Policy::Random),
                "noeviction" => Err(
                    "maxmemory-policy noeviction: a full cache refuses writes instead of evicting"
                        .into(),
                ),
                v if v.starts_with("volatile-") => Err(format!(
                    "maxmemory-policy {v}: it evicts only keys with a TTL, and kvlab's keys have none, so a full cache refuses writes"
                )),
                v => Err(format!("maxmemory-policy {v}: not a policy kvlab knows")),
            };
        }
        if get("evictions") == Some("off") {
            return Err(
                "memcached runs with -M (evictions off): a full cache refuses writes".into(),
            );
        }
        match get("lru_segmented") {
            Some("yes") => Ok(Policy::SegmentedLru),
            Some(_) => Ok(Policy::Lru),
            None => Err("the cache's settings name no eviction policy".into()),
        }
    }
}

impl Policy {
    /// The Redis (and Valkey) settings that make a server evict by this
    /// policy, by their own names; none for a policy Redis does not run.
    /// [`Policy::of_settings`] reads them back as this policy.
    pub fn redis_settings(&self) -> Vec<(String, String)> {
        let pairs: Vec<(&str, String)> = match *self {
            Policy::RedisLru { samples } => vec![
                ("maxmemory-policy", "allkeys-lru".into()),
                ("maxmemory-samples", samples.to_string()),
            ],
            Policy::RedisLfu {
                samples,
                log_factor,
                decay_time_min,
            } => vec![
                ("maxmemory-policy", "allkeys-lfu".into()),
                ("maxmemory-samples", samples.to_string()),
                ("lfu-log-factor", log_factor.to_string()),
                ("lfu-decay-time", decay_time_min.to_string()),
            ],
            Policy::Random => vec![("maxmemory-policy", "allkeys-random".into())],
            _ => Vec::new(),
        };
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pairs: &[(&str, &str)]) -> Result<Policy, String> {
        let s = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Policy::of_settings(&s)
    }

    #[test]
    fn each_servers_settings_name_their_policy() {
        assert_eq!(
            of(&[("maxmemory-policy", "allkeys-lru")]),
            Ok(Policy::REDIS_LRU)
        );
        assert_eq!(
            of(&[("maxmemory-policy", "allkeys-lfu")]),
            Ok(Policy::REDIS_LFU)
        );
        assert_eq!(
            of(&[
                ("maxmemory-policy", "allkeys-lfu"),
                ("maxmemory-samples", "10"),
                ("lfu-log-factor", "1"),
                ("lfu-decay-time", "0"),
            ]),
            Ok(Policy::RedisLfu {
                samples: 10,
                log_factor: 1,
                decay_time_min: 0
            })
        );
        assert_eq!(
            of(&[("maxmemory-policy", "allkeys-random")]),
            Ok(Policy::Random)
        );
        assert_eq!(
            of(&[("lru_segmented", "yes"), ("evictions", "on")]),
            Ok(Policy::SegmentedLru)
        );
        assert_eq!(of(&[("lru_segmented", "no")]), Ok(Policy::Lru));
        for p in [Policy::REDIS_LRU, Policy::REDIS_LFU, Policy::Random] {
            let back = Policy::of_settings(&p.redis_settings().into_iter().collect());
            assert_eq!(back, Ok(p));
        }
        assert!(Policy::SegmentedLru.redis_settings().is_empty());
        let refused = |k: &str, v: &str, says: &str| {
            let e = of(&[(k, v)]).unwrap_err();
            assert!(e.contains(says), "{e}");
        };
        refused("maxmemory-policy", "noeviction", "refuses writes");
        refused("maxmemory-policy", "volatile-lfu", "only keys with a TTL");
        refused(
            "maxmemory-policy",
            "allkeys-fifo",
            "not a policy kvlab knows",
        );
        refused("evictions", "off", "-M");
        refused("maxmemory-samples", "5", "name no eviction policy");
        let e = of(&[
            ("maxmemory-policy", "allkeys-lru"),
            ("maxmemory-samples", "x"),
        ]);
        assert!(e.unwrap_err().contains("maxmemory-samples x"));
    }
}
