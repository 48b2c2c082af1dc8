//! The names a decision branches on (its rows' architectures, its curve
//! points' sources, the figures its sweeps move) and the copy it measures,
//! each written to files as the words kvlab 0.1 wrote.

use serde::{Deserialize, Serialize};

/// Which architecture a row weighs (serialised as its name, e.g.
/// `cache-aside`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchName {
    /// The database alone.
    Database,
    /// A cache in front of the database.
    CacheAside,
    /// The cache alone, holding the data.
    Cache,
    /// The database with read replicas.
    DatabaseReplicas,
    /// Cache-aside with a near cache in each application instance.
    CacheAsideNear,
    /// The database with a near cache in each application instance.
    DatabaseNear,
    /// Cache-aside with its database sized to carry the load while a lost
    /// cache warms (the cache-loss run's peak).
    CacheAsideLossSized,
}

impl ArchName {
    /// Its name as written (`cache-aside`).
    pub fn name(self) -> &'static str {
        match self {
            ArchName::Database => "database",
            ArchName::CacheAside => "cache-aside",
            ArchName::Cache => "cache",
            ArchName::DatabaseReplicas => "database-replicas",
            ArchName::CacheAsideNear => "cache-aside-near",
            ArchName::DatabaseNear => "database-near",
            ArchName::CacheAsideLossSized => "cache-aside-loss-sized",
        }
    }
}

impl std::fmt::Display for ArchName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a point of the miss-ratio curve comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CurveSource {
    /// A settled cache-aside run on the copy.
    Measured,
    /// A measured point carried to the stated keys by the popularity model.
    Carried,
    /// The popularity model alone.
    Model,
    /// The trace's own curve (`--trace`).
    Trace,
}

impl std::fmt::Display for CurveSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CurveSource::Measured => "measured",
            CurveSource::Carried => "carried",
            CurveSource::Model => "model",
            CurveSource::Trace => "trace",
        })
    }
}

/// One figure of the stated load the sweeps move (a flip's variable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variable {
    /// Requests per second.
    Rps,
    /// The share of requests that write.
    WriteShare,
    /// The keys of the data.
    Keys,
}

/// The copy of the data kvlab measures in place of the stated keys, settled
/// once before the first run (saved in `manifest.json` as an object; the
/// `[keys, why]` pair of kvlab 0.1 is read too, its bytes per key settled
/// from the load it was saved with: [`DataCopy::settled`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "CopyFile")]
pub struct DataCopy {
    /// Its keys.
    pub keys: u64,
    /// Why this copy.
    pub why: String,
    /// What a key of it takes in a server's memory, bytes
    /// ([`crate::workload::bytes_per_key`]); 0 in a copy saved before it
    /// was written, until [`settled`](Self::settled).
    #[serde(default)]
    pub bytes_per_key: u64,
}

/// [`DataCopy`] as files hold it.
#[derive(Deserialize)]
#[serde(untagged)]
enum CopyFile {
    Object {
        keys: u64,
        why: String,
        #[serde(default)]
        bytes_per_key: u64,
    },
    Pair(u64, String),
}

impl From<CopyFile> for DataCopy {
    fn from(f: CopyFile) -> DataCopy {
        let (keys, why, bytes_per_key) = match f {
            CopyFile::Object {
                keys,
                why,
                bytes_per_key,
            } => (keys, why, bytes_per_key),
            CopyFile::Pair(keys, why) => (keys, why, 0),
        };
        DataCopy {
            keys,
            why,
            bytes_per_key,
        }
    }
}

impl DataCopy {
    /// Its share of `stated` keys: the one factor a figure of the stated
    /// keys is carried to the copy by.
    pub fn factor(&self, stated: u64) -> f64 {
        self.keys as f64 / stated.max(1) as f64
    }

    /// Stated keys per key of the copy: what a figure per key of the copy
    /// is carried to the stated keys by.
    pub fn per_key(&self, stated: u64) -> f64 {
        stated as f64 / self.keys.max(1) as f64
    }

    /// Its data in a server's memory, bytes.
    pub fn bytes(&self) -> u64 {
        self.keys.saturating_mul(self.bytes_per_key)
    }

    /// A copy saved before its bytes per key were written, with them:
    /// `bytes_per_key`, as the load it was saved with gives them.
    pub fn settled(self, bytes_per_key: u64) -> DataCopy {
        match self.bytes_per_key {
            0 => DataCopy {
                bytes_per_key,
                ..self
            },
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_is_written_as_an_object_and_read_from_the_pair_of_kvlab_0_1() {
        let c = DataCopy {
            keys: 100_000,
            why: "fits".into(),
            bytes_per_key: 376,
        };
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(text, r#"{"keys":100000,"why":"fits","bytes_per_key":376}"#);
        assert_eq!(serde_json::from_str::<DataCopy>(&text).unwrap(), c);
        let old: DataCopy = serde_json::from_str(r#"[100000, "fits"]"#).unwrap();
        assert_eq!(old.bytes_per_key, 0);
        assert_eq!(old.clone().settled(376), c);
        assert_eq!(c.clone().settled(1), c);
        assert_eq!((c.factor(1_000_000), c.per_key(1_000_000)), (0.1, 10.0));
        assert_eq!(c.bytes(), 37_600_000);
    }
}

/// The eviction policy a decision's curves are drawn for (the model's, the
/// trace's, and the measured points carried by them), and where kvlab took
/// it from. A decision saved without one was drawn for exact LRU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Eviction {
    /// The policy, with its parameters.
    pub policy: crate::workload::trace::policy::Policy,
    /// Where it was read: the settings given, the product's default for a
    /// full cache, or the cache's own settings (read-only).
    pub source: String,
}

impl Eviction {
    /// Its line in a decision's output: `Eviction: allkeys-lfu (samples 5,
    /// ...), as set (...); ...`.
    pub fn said(&self) -> String {
        use crate::workload::trace::policy::Policy;
        format!(
            "Eviction: {}, {}; the curves are drawn for it ({}), and a point measured on the copy is carried to the stated keys by it.",
            self.policy,
            self.source,
            match self.policy {
                Policy::Lru =>
                    "Che's approximation of exact LRU, the trace's exact LRU stack distances",
                _ => "the model's and the trace's simulated",
            }
        )
    }
}
