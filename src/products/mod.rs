//! The registry: the one list of the products kvlab drives, and the only place
//! outside their folders that names them. Each product family lives in its own
//! folder (URL schemes, codec, connection set-up, managed server, counters,
//! data loading) behind the traits of `driver`; generic code asks this
//! registry for names, help texts and URL rules, and the engine
//! (`engine::execute`) gets a point's concrete codec from [`with_codec`] and
//! [`with_cache_codec`], statically (no `dyn` on the hot path).
//!
//! Adding a product: a folder here with its `driver::Facts` and implementing
//! `driver::Product` (and `Server`, and `Cache` or `Database` with its
//! `TableSteps`), and one entry in the `products!` list below (variant, name,
//! product, codec).
//!
//! # Layout
//! - [`resp`]: Redis and Valkey (RESP), single servers and clusters.
//! - [`memcached`]: memcached (text protocol).
//! - [`postgres`]: PostgreSQL (wire protocol v3).
//! - [`mysql`]: MariaDB and MySQL (client/server protocol).
//! - [`tarantool`]: Tarantool (IPROTO).
//! - [`cql`]: Cassandra and other CQL stores (CQL native protocol v4).
//! - [`pgbouncer`]: PgBouncer, a pooler kvlab runs in front of PostgreSQL.
//! - [`sql`]: what the SQL databases' set-up sessions share.
//! - [`sql_watch`]: what watching a SQL database read-only shares (`kvlab observe`).
//! - `registry`: the `products!` macro behind the list, and the codec dispatch.

pub mod cql;
#[cfg(test)]
mod fuzz;
pub mod memcached;
pub mod mysql;
pub mod pgbouncer;
pub mod postgres;
#[macro_use]
mod registry;
pub mod resp;
pub mod sql;
pub mod sql_watch;
pub mod tarantool;
#[cfg(test)]
mod url_tests;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::driver::wire::CodecInput;
use crate::driver::{Pooler, Product, Role};
pub use registry::{WithCacheCodec, WithCodec};

/// The poolers kvlab can start in front of a managed database (`--pooler`).
pub static POOLERS: [&dyn Pooler; 1] = [&pgbouncer::PGBOUNCER];

/// The pooler called `name`.
pub fn pooler(name: &str) -> Option<&'static dyn Pooler> {
    POOLERS.iter().copied().find(|p| p.name() == name)
}

/// The poolers' names joined by `sep`.
pub fn pooler_names(sep: &str) -> String {
    POOLERS
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(sep)
}

products! {
    caches {
        /// Redis (RESP), managed binary `redis-server`.
        Redis = "redis" => resp::REDIS, |_| resp::Resp;
        /// Valkey (RESP), managed binary `valkey-server`.
        Valkey = "valkey" => resp::VALKEY, |_| resp::Resp;
        /// Redis Cluster (RESP, slot-routed), managed as N `redis-server` nodes.
        RedisCluster = "redis-cluster" => resp::REDIS_CLUSTER, |_| resp::Resp;
        /// Valkey Cluster (RESP, slot-routed), managed as N `valkey-server` nodes.
        ValkeyCluster = "valkey-cluster" => resp::VALKEY_CLUSTER, |_| resp::Resp;
        /// Memcached (text or meta protocol), managed binary `memcached`.
        Memcached = "memcached" => memcached::MEMCACHED,
            |s| memcached::Memcache::for_connector(s.connector);
    }
    databases {
        /// PostgreSQL (wire protocol v3), managed binaries `initdb` + `postgres`.
        Postgres = "postgres" => postgres::POSTGRES,
            |s| postgres::PgCodec::for_connector(s.value_size, s.connector);
        /// MariaDB or MySQL (client/server protocol), managed binary `mariadbd`.
        Mariadb = "mariadb" => mysql::MARIADB, |s| mysql::MyCodec::new(s.value_size);
        /// Tarantool (IPROTO), managed binary `tarantool`.
        Tarantool = "tarantool" => tarantool::TARANTOOL, |_| tarantool::TtCodec::new();
        /// Cassandra or another CQL store (CQL v4), managed from Cassandra's jars.
        Cassandra = "cassandra" => cql::CASSANDRA, |_| cql::CqlCodec::default();
    }
}

impl TargetKind {
    /// The kind of a product implementation.
    pub fn of(product: &dyn Product) -> TargetKind {
        let name = product.facts().name;
        TargetKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .expect("every product is in the registry")
    }

    /// The lower-case name used on the command line and in results.
    pub fn name(self) -> &'static str {
        self.product().facts().name
    }

    /// Whether this is a database (table-backed) rather than a cache.
    pub fn is_sql(self) -> bool {
        matches!(self.product().role(), Role::Database(_))
    }

    /// Whether it expires keys kvlab writes with a TTL (the caches: RESP and
    /// memcached servers and clusters).
    pub fn expires(self) -> bool {
        !self.is_sql()
    }

    /// URL scheme used when displaying an address of this kind.
    pub fn scheme(self) -> &'static str {
        self.product().facts().schemes[0]
    }

    /// Whether this kind's table takes option `option` (a `SchemaOptions`
    /// field name, e.g. `unlogged`).
    pub fn takes(self, option: &str) -> bool {
        self.product().facts().table.options.contains(&option)
    }

    /// The kind a managed-target name (or alias) means.
    pub fn named(name: &str) -> Option<TargetKind> {
        TargetKind::ALL
            .into_iter()
            .find(|k| k.name() == name || k.product().facts().aliases.contains(&name))
    }

    /// The kind a URL scheme means and whether the scheme turns TLS on:
    /// `Ok(None)` for an unknown scheme, `Err` with (problem, fix) for one a
    /// product refuses.
    pub fn of_scheme(
        scheme: &str,
    ) -> Result<Option<(TargetKind, bool)>, (&'static str, &'static str)> {
        for k in TargetKind::ALL {
            let facts = k.product().facts();
            if facts.schemes.contains(&scheme) {
                return Ok(Some((k, false)));
            }
            if facts.tls_schemes.contains(&scheme) {
                return Ok(Some((k, true)));
            }
            if let Some((_, problem, fix)) =
                facts.refused_schemes.iter().find(|(s, _, _)| *s == scheme)
            {
                return Err((problem, fix));
            }
        }
        Ok(None)
    }
}

impl From<TargetKind> for &'static dyn Product {
    fn from(k: TargetKind) -> &'static dyn Product {
        k.product()
    }
}

/// The kinds that are caches (`true`) or databases (`false`).
pub fn kinds(caches: bool) -> impl Iterator<Item = TargetKind> {
    TargetKind::ALL
        .into_iter()
        .filter(move |k| k.is_sql() != caches)
}

/// The managed caches a cache-aside run can put in front of a database (a
/// sharded cache is not supported there).
pub fn aside_caches() -> Vec<&'static str> {
    kinds(true)
        .filter(|k| !k.product().facts().sharded)
        .map(TargetKind::name)
        .collect()
}

/// `a, b or c`.
pub fn or_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [rest @ .., last] => format!(
            "{} or {}",
            rest.iter()
                .map(AsRef::as_ref)
                .collect::<Vec<_>>()
                .join(", "),
            last.as_ref()
        ),
    }
}

/// The names of caches (or databases): `redis, valkey or memcached`.
pub fn names(caches: bool) -> String {
    or_list(&kinds(caches).map(TargetKind::name).collect::<Vec<_>>())
}

/// The names of caches (or databases) for a flag: `redis|valkey|memcached`.
pub fn choices(caches: bool) -> String {
    kinds(caches)
        .map(TargetKind::name)
        .collect::<Vec<_>>()
        .join("|")
}

/// Every managed-target name: `redis | valkey | ...`.
pub fn all_names(sep: &str) -> String {
    TargetKind::ALL.map(TargetKind::name).join(sep)
}

/// Every product's example URL: `redis://127.0.0.1:6379, …`.
fn example_urls() -> String {
    TargetKind::ALL
        .map(|k| k.product().facts().example_url)
        .join(", ")
}

/// Every product's unix-socket URL form, for messages.
pub fn unix_url_examples() -> Vec<&'static str> {
    TargetKind::ALL
        .iter()
        .filter_map(|k| k.product().facts().unix_url_example)
        .collect()
}

/// How to write a target, for error messages.
pub fn target_fix() -> String {
    format!(
        "use {} (a server kvlab starts) or a URL such as {}",
        or_list(&TargetKind::ALL.map(TargetKind::name)),
        example_urls()
    )
}

/// The `--target` help: every name and URL form.
pub fn target_help() -> String {
    format!(
        "{} (kvlab starts the server), or a URL: {}",
        all_names(" | "),
        example_urls()
    )
}

/// The managed target of `kvlab run` when none is given.
pub const DEFAULT_TARGET: &str = "redis";

/// Examples shown after `kvlab run --help`.
pub const RUN_EXAMPLES: &str = "Examples:
  kvlab run --target redis --duration 10
  kvlab run --target valkey --server-opt io-threads=4 --pipeline 16
  kvlab run --target redis-cluster --server-opt shards=3 --pipeline 16
  kvlab run --target memcached --server-opt threads=2 --ratio 1:9
  kvlab run --target redis://:secret@10.0.0.5:6379 --key-prefix bench: --json out.json
  kvlab run --target redis --rate 20000 --duration 30
  kvlab run --target postgres --cache redis --ratio 1:19 --write-policy invalidate";

/// Examples shown after `kvlab capacity --help`.
pub const CAPACITY_EXAMPLE: &str = "kvlab capacity --target redis --p99-ms 1 --duration 5";

/// Examples shown after `kvlab serve --help`.
pub const SERVE_EXAMPLE: &str =
    "kvlab serve --target redis --server-opt io-threads=2   # prints redis://127.0.0.1:PORT";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::TargetSpec;

    #[test]
    fn names_and_schemes_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for k in TargetKind::ALL {
            let p = k.product().facts();
            assert_eq!(TargetKind::of(k.product()), k);
            for n in std::iter::once(&p.name).chain(p.aliases) {
                assert!(seen.insert(format!("name {n}")), "{n} twice");
            }
            for s in p.schemes {
                assert!(seen.insert(format!("scheme {s}")), "{s} twice");
            }
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
        }
        assert_eq!(
            names(true),
            "redis, valkey, redis-cluster, valkey-cluster or memcached"
        );
    }
    #[test]
    fn every_product_declares_its_facts() {
        for k in TargetKind::ALL {
            let f = k.product().facts();
            let what = format!("{k:?}");
            assert!(!f.name.is_empty() && !f.title.is_empty(), "{what}: name");
            assert!(!f.schemes.is_empty(), "{what}: schemes");
            assert!(f.default_port != 0, "{what}: port");
            assert!(f.example_url.contains("://"), "{what}: example URL");
            assert!(!f.server.binary.is_empty(), "{what}: binary");
            assert!(!f.server.package.is_empty(), "{what}: package");
            assert!(f.max_pipeline >= 1, "{what}: pipeline");
            if !k.is_sql() {
                assert!(f.table.options.is_empty() && !f.url_database, "{what}");
            }
            for &o in f.table.options {
                assert!(["unlogged", "table_engine"].contains(&o), "{what}: {o}");
            }
            assert_eq!(
                f.table.options.contains(&"table_engine"),
                !f.table.engines.is_empty(),
                "{what}: engines"
            );
        }
    }

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
            e.display_url(TargetKind::Valkey.scheme()),
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
            e.display_url(TargetKind::Postgres.scheme()),
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
    fn cql_urls_name_an_optional_keyspace_and_a_consistency_level() {
        let t: TargetSpec = "cql://app:pw@10.0.0.9/shop".parse().unwrap();
        assert_eq!(t.kind, TargetKind::Cassandra);
        let e = t.external.as_ref().unwrap();
        assert_eq!((e.port, e.database.as_deref()), (9042, Some("shop")));
        let t: TargetSpec = "scylla://h:19042".parse().unwrap();
        assert_eq!(t.external.unwrap().database, None);
        assert!("cassandra://h/a/b".parse::<TargetSpec>().is_err());
        assert!("redis://h/ks".parse::<TargetSpec>().is_err());
        let level = |kind, l| crate::plan::consistency_of(kind, l, "--consistency");
        let quorum = level(TargetKind::Cassandra, "LOCAL_QUORUM").unwrap();
        assert_eq!(quorum.name(), "local_quorum");
        // As a result file has it, read back.
        let json = serde_json::to_string(&quorum).unwrap();
        assert_eq!(
            serde_json::from_str::<crate::plan::Consistency>(&json).unwrap(),
            quorum
        );
        assert!(serde_json::from_str::<crate::plan::Consistency>("\"most\"").is_err());
        let e = level(TargetKind::Cassandra, "most")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown level 'most'") && e.contains("quorum"),
            "{e}"
        );
        let e = level(TargetKind::Redis, "one").unwrap_err().to_string();
        assert!(e.contains("Cassandra/CQL targets only"), "{e}");
    }

    #[test]
    fn secrets_never_serialize() {
        let t: TargetSpec = "redis://:hunter2@h:1".parse().unwrap();
        let json = serde_json::to_string(&t).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        assert!(!format!("{t:?}").contains("hunter2"));
    }
}
