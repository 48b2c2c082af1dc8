//! Cassandra and other CQL stores (ScyllaDB speaks the same protocol) over the
//! CQL native protocol v4. Everything kvlab knows of them lives here: the
//! `cql://` URL (its path names the keyspace), the codec (prepared EXECUTEs,
//! many streams in flight per connection, matched by stream id), the set-up
//! session (STARTUP, SASL PLAIN, PREPARE), the managed node (a JVM started
//! from the Cassandra jars `make deps` fetched), kvlab's table (loaded by
//! pipelined INSERTs) and the node's own counters (`system_views`).
//!
//! # Layout
//! - [`codec`]: the sans-IO codec (EXECUTE templates, RESULT walker).
//! - [`frame`]: the protocol's framing (opcodes, frames, the body reader).
//! - [`conn`]: the blocking set-up session.
//! - [`server`]: the managed node (`cassandra.yaml`, JVM options).
//! - [`table`]: kvlab's keyspace and table: check, load, reset, size.

mod batch;
pub mod codec;
pub mod conn;
pub mod frame;
pub mod server;
pub mod table;

use std::io;
use std::time::Duration;

use anyhow::{Context, Result};

pub use codec::CqlCodec;
pub use conn::{CqlConn, open};

use crate::driver::product::declares;
use crate::driver::setup::hand_over;
use crate::driver::wire::Session;
use crate::driver::{Connector, Facts, Product, Server, ServerCounters, ServerFacts, ServerInfo};
use crate::transport::Stream;

/// Cassandra (managed, from its jars) or any CQL store (by URL).
pub struct Cassandra;

/// The Cassandra/CQL product.
pub static CASSANDRA: Cassandra = Cassandra;

/// The keyspace kvlab uses unless the URL names one.
pub const KEYSPACE: &str = "kvlab";

/// The keyspace of `c` (the URL's path, else `kvlab`), checked to be a plain
/// CQL identifier, in lower case as CQL folds unquoted names.
pub fn keyspace(c: &Connector) -> io::Result<String> {
    let ks = c.database.as_deref().unwrap_or(KEYSPACE);
    let plain = !ks.is_empty()
        && ks.len() <= 48
        && ks.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if plain {
        Ok(ks.to_ascii_lowercase())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "keyspace '{ks}' is not a plain CQL name; use letters, digits and _ (at most 48)"
            ),
        ))
    }
}

/// The protocol code of `c`'s consistency level (ONE unless given).
fn consistency(c: &Connector) -> u16 {
    c.consistency
        .and_then(|l| codec::level(l.name()))
        .unwrap_or(1)
}

/// What Cassandra/CQL declares: URLs may name a keyspace, the native port has
/// no unix socket, stream ids are 15 bits; the managed node is a JVM started
/// from Cassandra's jars.
static FACTS: Facts = Facts {
    batch_reads: Some(
        "the prepared SELECT k, v FROM kvlab_kv WHERE k IN ? with the keys as one list: Cassandra counts a local read per key",
    ),
    name: "cassandra",
    title: "Cassandra/CQL",
    schemes: &["cql", "cassandra", "scylla"],
    default_port: 9042,
    password_env: Some("KVLAB_CQL_PASSWORD"),
    example_url: "cql://[user:pass@]host:9042[/keyspace]",
    url_namespace: Some("keyspace"),
    unix_sockets: false,
    consistency_levels: &codec::LEVEL_NAMES,
    max_pipeline: 16_384,
    server: ServerFacts {
        binary: "java",
        package: "openjdk-17-jre-headless",
        missing: Some(
            "Cassandra's jars or Java are not installed; run `make deps` (scripts/cassandra-jars.sh fetches the jars into ~/.cache/kvlab)",
        ),
        start_timeout: Duration::from_secs(180),
        on_disk: true,
        ..ServerFacts::DEFAULTS
    },
    ..Facts::DEFAULTS
};

impl Product for Cassandra {
    declares!(&FACTS, Database);

    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(Stream, Session)> {
        let mut conn = open(c, timeout)?;
        let ks = keyspace(c)?;
        let get = conn.prepare(&format!("SELECT v FROM {ks}.kvlab_kv WHERE k = ?"))?;
        let set = conn.prepare(&format!("INSERT INTO {ks}.kvlab_kv (k, v) VALUES (?, ?)"))?;
        let batch = conn.prepare(&batch::cql(&ks))?;
        let level = consistency(c);
        let session = Session::Prepared {
            get,
            set,
            batch,
            level,
        };
        hand_over(conn.into_stream(), session)
    }

    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo> {
        let mut conn = open(c, timeout).map_err(|e| c.setup_error(e))?;
        keyspace(c).map_err(|e| anyhow::anyhow!("{}: {e}", c.display))?;
        let rows = conn
            .query("SELECT release_version FROM system.local")
            .map_err(|e| c.setup_error(e))?;
        Ok(ServerInfo {
            product: if conn.scylla { "scylla" } else { "cassandra" }.into(),
            version: conn::text(rows.first().and_then(|r| r.first())),
        })
    }

    /// The node's local reads and writes of kvlab's table
    /// (`system_views.local_read_latency` and `local_write_latency`).
    fn counters(&self, c: &Connector) -> Result<ServerCounters> {
        let mut conn = open(c, Duration::from_secs(5))?;
        let ks = keyspace(c)?;
        let mut count = |view: &str| -> Result<u64> {
            let rows = conn
                .query(&format!(
                    "SELECT count FROM system_views.{view} WHERE keyspace_name = '{ks}' AND table_name = 'kvlab_kv'"
                ))
                .with_context(|| format!("cannot read system_views.{view}"))?;
            Ok(conn::bigint(rows.first().and_then(|r| r.first())).unwrap_or(0) as u64)
        };
        Ok(ServerCounters {
            per_key: true,
            ..ServerCounters::requests(count("local_read_latency")?, count("local_write_latency")?)
        })
    }

    fn server(&self) -> &dyn Server {
        self
    }
}
