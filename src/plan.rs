//! The plan of one run: what to drive (target), with what data (workload) and how
//! hard (load). Plain serde structs, built by `cli` and later by study files.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// Everything one measured run needs, grouped by concern.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunPlan {
    /// The server to drive.
    pub target: TargetSpec,
    /// Keys, values and the operation mix.
    pub workload: Workload,
    /// Connections, threads, pipeline, pacing and duration.
    pub load: LoadShape,
    /// A cache in front of the target (cache-aside); `None`: the target alone.
    #[serde(default)]
    pub cache: Option<CacheAside>,
}

/// Cache-aside in front of the run's target (the database): each read asks the
/// cache first and, on a miss, reads the database and fills the cache; each write
/// updates the database, then invalidates or updates the cache entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CacheAside {
    /// The cache (redis, valkey or memcached; managed or URL).
    pub cache: TargetSpec,
    /// What a write does to the cache after updating the database.
    pub policy: WritePolicy,
    /// Expiry of cache entries, seconds (0: never).
    pub ttl_s: u32,
}

/// What a cache-aside write does to the cache once the database has the new value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WritePolicy {
    /// Delete the cache entry; the next read fills it from the database.
    Invalidate,
    /// Write the new value into the cache.
    Update,
}

impl WritePolicy {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            WritePolicy::Invalidate => "invalidate",
            WritePolicy::Update => "update",
        }
    }
}

impl FromStr for WritePolicy {
    type Err = UsageError;
    fn from_str(s: &str) -> Result<Self, UsageError> {
        match s {
            "invalidate" | "delete" => Ok(WritePolicy::Invalidate),
            "update" | "write" => Ok(WritePolicy::Update),
            _ => Err(UsageError::bad(
                "--write-policy",
                format!("unknown policy '{s}'"),
                "use invalidate (delete the cache entry after a write) or update (write the new value into the cache)",
            )),
        }
    }
}

impl RunPlan {
    /// A copy safe to print and store: server settings that hold secrets are masked.
    pub fn redacted(&self) -> RunPlan {
        let mut p = self.clone();
        let cache = p.cache.as_mut().map(|c| &mut c.cache.server_opts);
        for opts in std::iter::once(&mut p.target.server_opts).chain(cache) {
            for (k, v) in opts.iter_mut() {
                if is_secret_key(k) {
                    *v = "***".into();
                }
            }
        }
        p
    }
}

impl RunPlan {
    /// Checks that a cache-aside plan makes sense: a cache in front of a
    /// database, one request at a time per client, the data loaded.
    pub fn check_cache(&self) -> Result<(), UsageError> {
        let Some(c) = &self.cache else { return Ok(()) };
        if c.cache.kind.is_sql() {
            return Err(UsageError::bad(
                "--cache",
                format!("{} is a database, not a cache", c.cache.kind.name()),
                "use redis, valkey or memcached",
            ));
        }
        if !self.target.kind.is_sql() {
            return Err(UsageError::bad(
                "--cache",
                "cache-aside puts a cache in front of a database",
                "use --target postgres|mariadb (or a postgres:// or mysql:// URL)",
            ));
        }
        if self.load.pipeline > 1 {
            return Err(UsageError::bad(
                "--pipeline",
                "a cache-aside client waits for each step before the next",
                "use pipeline 1 (add connections for more load)",
            ));
        }
        if !self.workload.load {
            return Err(UsageError::bad(
                "--no-load",
                "cache-aside reads need every key in the database",
                "load the data",
            ));
        }
        if self.workload.background_writes.is_some() {
            return Err(UsageError::bad(
                "--background-writes",
                "is not supported with a cache",
                "put writes in the measured load with a SET:GET ratio, e.g. 1:19",
            ));
        }
        if c.ttl_s > 30 * 24 * 3600 {
            return Err(UsageError::bad(
                "--cache-ttl",
                format!("{} s is more than 30 days", c.ttl_s),
                "give at most 2592000 seconds, or 0 for no expiry",
            ));
        }
        Ok(())
    }
}

/// Whether a server setting holds a secret (its value is never printed or stored).
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("pass") || k.contains("secret") || k.contains("auth")
}

/// The product a target speaks for: decides the protocol and, when managed, the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// Redis (RESP protocol), managed binary `redis-server`.
    Redis,
    /// Valkey (RESP protocol), managed binary `valkey-server`.
    Valkey,
    /// Memcached (text protocol), managed binary `memcached`.
    Memcached,
    /// PostgreSQL (wire protocol v3), managed binaries `initdb` + `postgres`.
    Postgres,
    /// MariaDB or MySQL (client/server protocol), managed binary `mariadbd`.
    Mariadb,
}

impl TargetKind {
    /// The lower-case name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Redis => "redis",
            TargetKind::Valkey => "valkey",
            TargetKind::Memcached => "memcached",
            TargetKind::Postgres => "postgres",
            TargetKind::Mariadb => "mariadb",
        }
    }

    /// Whether this is a database (table-backed) rather than a cache.
    pub fn is_sql(self) -> bool {
        matches!(self, TargetKind::Postgres | TargetKind::Mariadb)
    }

    /// URL scheme used when displaying an address of this kind.
    pub fn scheme(self) -> &'static str {
        match self {
            TargetKind::Mariadb => "mysql",
            k => k.name(),
        }
    }
}

/// Which server a run drives.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetSpec {
    /// Product and protocol.
    pub kind: TargetKind,
    /// Where the server is; `None` means kvlab starts (and stops) its own.
    pub external: Option<Endpoint>,
    /// Settings for a managed server (`--server-opt KEY=VALUE`), in order given.
    #[serde(default)]
    pub server_opts: BTreeMap<String, String>,
    /// How kvlab's table is made (databases only).
    #[serde(default)]
    pub schema: SchemaOptions,
}

/// Options of kvlab's own table on a database target.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SchemaOptions {
    /// MariaDB storage engine of the table (`innodb` or `memory`).
    pub table_engine: Option<String>,
    /// PostgreSQL: create the table UNLOGGED.
    pub unlogged: bool,
    /// Drop and reload kvlab's table even if it looks right.
    pub recreate: bool,
}

/// A server kvlab did not start.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Endpoint {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// User name for AUTH (Redis ACL), if any.
    pub user: Option<String>,
    /// Password; serialized as `"***"`, never printed.
    pub password: Option<Secret>,
    /// Database name (SQL targets).
    #[serde(default)]
    pub database: Option<String>,
}

impl Endpoint {
    /// The URL with the password masked, safe to print and store.
    pub fn display_url(&self, kind: TargetKind) -> String {
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (None, Some(_)) => ":***@".to_string(),
            (Some(u), None) => format!("{u}@"),
            (None, None) => String::new(),
        };
        let db = self
            .database
            .as_ref()
            .map(|d| format!("/{d}"))
            .unwrap_or_default();
        format!("{}://{auth}{}:{}{db}", kind.scheme(), self.host, self.port)
    }
}

/// A password. `Debug`, `Display` and serde all show `***`.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl Secret {
    /// The real value, for the wire only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

impl FromStr for TargetSpec {
    type Err = UsageError;

    /// Parses `redis`, `valkey`, `memcached`, `postgres`, `mariadb` (managed) or a
    /// URL `redis://[user:pass@]host:port`, `valkey://…`, `memcached://host:port`,
    /// `postgres://user:pass@host:port/db`, `mysql://user:pass@host:port/db`.
    fn from_str(s: &str) -> Result<Self, UsageError> {
        const FIX: &str = "use redis, valkey, memcached, postgres or mariadb (a server kvlab starts) or a URL such as redis://127.0.0.1:6379, memcached://127.0.0.1:11211, postgres://user:pass@host:5432/db, mysql://user:pass@host:3306/db";
        let kind_of = |name: &str| match name {
            "redis" => Some(TargetKind::Redis),
            "valkey" => Some(TargetKind::Valkey),
            "memcached" | "memcache" => Some(TargetKind::Memcached),
            "postgres" | "postgresql" => Some(TargetKind::Postgres),
            "mariadb" | "mysql" => Some(TargetKind::Mariadb),
            _ => None,
        };
        if let Some(kind) = kind_of(s) {
            return Ok(TargetSpec {
                kind,
                external: None,
                server_opts: BTreeMap::new(),
                schema: SchemaOptions::default(),
            });
        }
        let Some((scheme, _)) = s.split_once("://") else {
            return Err(UsageError::bad(
                "--target",
                format!("unknown target '{s}'"),
                FIX,
            ));
        };
        let kind = match scheme {
            "redis" | "valkey" | "postgres" | "postgresql" | "mysql" | "mariadb" => {
                kind_of(scheme).unwrap_or(TargetKind::Redis)
            }
            "memcached" | "memcache" => TargetKind::Memcached,
            "rediss" => {
                return Err(UsageError::bad(
                    "--target",
                    "TLS (rediss://) is not supported",
                    "use redis:// on a plain TCP port",
                ));
            }
            other => {
                return Err(UsageError::bad(
                    "--target",
                    format!("unsupported scheme '{other}://'"),
                    FIX,
                ));
            }
        };
        let url = url::Url::parse(s)
            .map_err(|e| UsageError::bad("--target", format!("cannot parse URL: {e}"), FIX))?;
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| UsageError::bad("--target", "the URL has no host", FIX))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let default_port = match kind {
            TargetKind::Memcached => 11211,
            TargetKind::Postgres => 5432,
            TargetKind::Mariadb => 3306,
            _ => 6379,
        };
        let port = url.port().unwrap_or(default_port);
        let decode = |p: &str| {
            url::form_urlencoded::parse(format!("x={p}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let user = Some(url.username()).filter(|u| !u.is_empty()).map(decode);
        let password = url.password().map(|p| Secret(decode(p)));
        if kind == TargetKind::Memcached && (user.is_some() || password.is_some()) {
            return Err(UsageError::bad(
                "--target",
                "memcached:// URLs take no user or password (SASL is not supported)",
                "remove the user:pass@ part",
            ));
        }
        let path = url.path().trim_start_matches('/');
        let database = if kind.is_sql() {
            if path.is_empty() || path.contains('/') {
                return Err(UsageError::bad(
                    "--target",
                    "the URL names no database",
                    "end it with /DBNAME, e.g. postgres://user:pass@host:5432/mydb",
                ));
            }
            if user.is_none() {
                return Err(UsageError::bad(
                    "--target",
                    "the URL names no user",
                    "write scheme://USER:PASS@host:port/db",
                ));
            }
            Some(decode(path))
        } else if !path.is_empty() {
            return Err(UsageError::bad(
                "--target",
                format!("unexpected path '/{path}' in the URL"),
                "give only scheme://[user:pass@]host:port",
            ));
        } else {
            None
        };
        Ok(TargetSpec {
            kind,
            external: Some(Endpoint {
                host,
                port,
                user,
                password,
                database,
            }),
            server_opts: BTreeMap::new(),
            schema: SchemaOptions::default(),
        })
    }
}

/// The data and the operations.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Workload {
    /// Number of distinct keys (ids `0..keys`).
    pub keys: u64,
    /// Value size in bytes.
    pub value_size: usize,
    /// SET:GET ratio.
    pub ratio: Ratio,
    /// How keys are picked.
    pub distribution: KeyDistribution,
    /// Prefix of every key kvlab reads or writes.
    pub key_prefix: String,
    /// Load all keys before measuring.
    pub load: bool,
    /// Seed of the key and operation generators.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// A separate writer at this many SETs per second beside the measured load.
    #[serde(default)]
    pub background_writes: Option<f64>,
}

fn default_seed() -> u64 {
    1
}

/// Relative weights of SET and GET.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ratio {
    /// Weight of SET.
    pub set: u32,
    /// Weight of GET.
    pub get: u32,
}

impl Ratio {
    /// Fraction of operations that are SETs, in `[0, 1]`.
    pub fn set_fraction(self) -> f64 {
        f64::from(self.set) / f64::from(self.set + self.get)
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.set, self.get)
    }
}

impl FromStr for Ratio {
    type Err = UsageError;
    fn from_str(s: &str) -> Result<Self, UsageError> {
        const FIX: &str = "give SET:GET weights, e.g. 0:1 (read-only), 1:10, 1:0 (write-only)";
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| UsageError::bad("--ratio", format!("'{s}' has no ':'"), FIX))?;
        let parse = |x: &str| {
            x.trim().parse::<u32>().map_err(|_| {
                UsageError::bad("--ratio", format!("'{x}' is not a whole number"), FIX)
            })
        };
        let r = Ratio {
            set: parse(a)?,
            get: parse(b)?,
        };
        if r.set == 0 && r.get == 0 {
            return Err(UsageError::bad("--ratio", "both weights are 0", FIX));
        }
        if r.set.checked_add(r.get).is_none() {
            return Err(UsageError::bad("--ratio", "weights too large", FIX));
        }
        Ok(r)
    }
}

/// How keys are chosen for each request.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum KeyDistribution {
    /// Every key equally likely.
    Uniform,
    /// Zipfian with exponent `theta`: key 0 is the hottest.
    Zipf {
        /// Skew; YCSB uses 0.99.
        theta: f64,
    },
    /// Keys in order, each connection walking its own slice of the key space.
    Sequential,
}

impl fmt::Display for KeyDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDistribution::Uniform => f.write_str("uniform"),
            KeyDistribution::Zipf { theta } => write!(f, "zipf:{theta}"),
            KeyDistribution::Sequential => f.write_str("sequential"),
        }
    }
}

impl FromStr for KeyDistribution {
    type Err = UsageError;
    fn from_str(s: &str) -> Result<Self, UsageError> {
        const FIX: &str = "use uniform, sequential, zipf or zipf:THETA (THETA > 0, e.g. zipf:0.99)";
        match s {
            "uniform" => Ok(KeyDistribution::Uniform),
            "sequential" => Ok(KeyDistribution::Sequential),
            "zipf" => Ok(KeyDistribution::Zipf { theta: 0.99 }),
            _ => {
                let theta = s
                    .strip_prefix("zipf:")
                    .and_then(|t| t.parse::<f64>().ok())
                    .ok_or_else(|| {
                        UsageError::bad(
                            "--key-distribution",
                            format!("unknown distribution '{s}'"),
                            FIX,
                        )
                    })?;
                if !(theta.is_finite() && theta > 0.0) {
                    return Err(UsageError::bad(
                        "--key-distribution",
                        format!("theta {theta} must be greater than 0"),
                        FIX,
                    ));
                }
                Ok(KeyDistribution::Zipf { theta })
            }
        }
    }
}

/// How hard, how long, and how the load is shaped.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadShape {
    /// Total connections, spread over the threads.
    pub connections: usize,
    /// Client threads.
    pub threads: usize,
    /// Requests kept in flight per connection.
    pub pipeline: usize,
    /// When the measured phase ends.
    pub stop: Stop,
    /// Seconds of load before measuring, excluded from the figures.
    pub warmup_s: f64,
    /// Open loop: total requests per second on a fixed schedule. `None`: closed loop.
    pub rate: Option<f64>,
    /// Seconds a request may wait for its reply before it counts as a timeout.
    pub timeout_s: f64,
}

/// The end of the measured phase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// After this many seconds.
    Duration(f64),
    /// After this many requests in total.
    Requests(u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        let t: TargetSpec = "redis".parse().unwrap();
        assert!(t.external.is_none());
        assert_eq!(t.kind, TargetKind::Redis);
        let t: TargetSpec = "valkey://bob:s%40cret@127.0.0.1:7000".parse().unwrap();
        assert_eq!(t.kind, TargetKind::Valkey);
        let e = t.external.unwrap();
        assert_eq!((e.host.as_str(), e.port), ("127.0.0.1", 7000));
        assert_eq!(e.user.as_deref(), Some("bob"));
        assert_eq!(e.password.as_ref().unwrap().expose(), "s@cret");
        assert_eq!(
            e.display_url(TargetKind::Valkey),
            "valkey://bob:***@127.0.0.1:7000"
        );
        let t: TargetSpec = "memcached://localhost".parse().unwrap();
        assert_eq!(t.external.unwrap().port, 11211);
        assert!("mongodb://x".parse::<TargetSpec>().is_err());
        assert!("redis-server".parse::<TargetSpec>().is_err());
        assert!("memcached://u:p@h:1".parse::<TargetSpec>().is_err());
        let t: TargetSpec = "postgresql://app:pw@db.local/shop".parse().unwrap();
        assert_eq!(t.kind, TargetKind::Postgres);
        let e = t.external.unwrap();
        assert_eq!((e.port, e.database.as_deref()), (5432, Some("shop")));
        assert_eq!(
            e.display_url(TargetKind::Postgres),
            "postgres://app:***@db.local:5432/shop"
        );
        let t: TargetSpec = "mysql://root@127.0.0.1:3307/kv".parse().unwrap();
        assert_eq!(t.kind, TargetKind::Mariadb);
        assert!(
            "postgres://u:p@h:1".parse::<TargetSpec>().is_err(),
            "no database"
        );
        assert!("mysql://h:1/db".parse::<TargetSpec>().is_err(), "no user");
    }

    #[test]
    fn secrets_never_serialize() {
        let t: TargetSpec = "redis://:hunter2@h:1".parse().unwrap();
        let json = serde_json::to_string(&t).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        assert!(!format!("{t:?}").contains("hunter2"));
    }

    #[test]
    fn parses_ratio_and_distribution() {
        assert_eq!("1:10".parse::<Ratio>().unwrap(), Ratio { set: 1, get: 10 });
        assert!("0:0".parse::<Ratio>().is_err());
        assert!("1/10".parse::<Ratio>().is_err());
        assert!("a:1".parse::<Ratio>().is_err());
        assert_eq!(
            "zipf:0.8".parse::<KeyDistribution>().unwrap(),
            KeyDistribution::Zipf { theta: 0.8 }
        );
        assert!("zipf:-1".parse::<KeyDistribution>().is_err());
        assert!("pareto".parse::<KeyDistribution>().is_err());
    }
}
