//! PostgreSQL. Everything kvlab knows of it lives here: the `postgres://` URL,
//! the codec (prepared statements over the v3 protocol), the set-up session,
//! the managed server (`initdb`, settings), kvlab's table (load by COPY) and the
//! server's own counters (`pg_stat_statements`). Poolers that speak the same
//! protocol are reached by a `postgres://` URL.
//!
//! # Layout
//! - [`codec`]: the sans-IO codec (Bind/Execute/Sync templates, reply walker).
//! - [`observe`]: watching a server read-only (`kvlab observe`).
//! - [`conn`]: the blocking set-up session (auth, queries, COPY).
//! - [`server`]: the managed server.
//! - `replicas`: its streaming read replicas (`--server-opt replicas=N`) and their lag.
//! - [`table`]: kvlab's table: check, load, reset, size.
//! - [`url`]: the URL options (TLS modes and files, the unix socket).

mod batch;
pub mod codec;
pub mod conn;
pub mod observe;
mod replicas;
pub mod server;
pub mod table;
pub mod url;

use std::io;
use std::time::Duration;

use anyhow::{Context, Result};

pub use codec::{GET_SQL, PgCodec, QueryMode, SET_SQL, SIMPLE_GET_STAT};
pub use conn::{PgConn, literal, open};

use crate::driver::product::declares;
use crate::driver::setup::hand_over;
use crate::driver::wire::Session;
use crate::driver::{
    Connector, Endpoint, Facts, Product, Server, ServerCounters, ServerFacts, ServerInfo,
    TableFacts,
};
use crate::error::UsageError;
use crate::transport::{Stream, TlsStart};

/// PostgreSQL (`postgres`, initialised by `initdb`).
pub struct Postgres;

/// The PostgreSQL product.
pub static POSTGRES: Postgres = Postgres;

/// What PostgreSQL declares.
static FACTS: Facts = Facts {
    name: "postgres",
    title: "PostgreSQL",
    aliases: &["postgresql"],
    schemes: &["postgres", "postgresql"],
    default_port: 5432,
    password_env: Some("PGPASSWORD"),
    unix_url_example: Some("postgres://user@/db?host=/dir"),
    example_url: "postgres://user:pass@host:5432/db",
    url_database: true,
    query_modes: &QueryMode::NAMES,
    batch_reads: Some(
        "SELECT k, v FROM kvlab_kv WHERE k = ANY($1), the unnamed statement of the extended protocol in every query mode: pg_stat_statements counts one statement",
    ),
    url_options: url::OPTIONS,
    tls_start: TlsStart::Negotiated,
    server: ServerFacts {
        binary: "postgres",
        package: "postgresql",
        system_user: Some("postgres"),
        on_disk: true,
        // How a commit waits for the disk.
        copied_beside: &["synchronous_commit", "fsync", "full_page_writes"],
        ..ServerFacts::DEFAULTS
    },
    table: TableFacts {
        options: &["unlogged"],
        engines: &[],
    },
    ..Facts::DEFAULTS
};

impl Product for Postgres {
    declares!(&FACTS, Database);
    /// Preparing kvlab's two statements is one `Sync`.
    fn set_up_round_trips(&self, query_mode: Option<crate::driver::QueryMode>) -> u64 {
        u64::from(QueryMode::named(query_mode.map(|m| m.name())) == Some(QueryMode::Prepared))
    }

    fn url_option(&self, key: &str, value: &str, ep: &mut Endpoint) -> Result<bool, UsageError> {
        url::option(key, value, ep)
    }

    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(Stream, Session)> {
        let mut conn = open(c, timeout)?;
        if QueryMode::named(c.query_mode.map(|m| m.name())) == Some(QueryMode::Prepared) {
            conn.prepare_kv()?;
        }
        hand_over(conn.into_stream(), Session::Plain)
    }

    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo> {
        let conn = open(c, timeout).map_err(|e| c.setup_error(e))?;
        Ok(ServerInfo {
            product: "postgres".into(),
            version: conn.server_version,
        })
    }

    /// Executions of kvlab's two statements from `pg_stat_statements` (in any
    /// query mode: a simple query's constants are recorded as parameters). Without
    /// that extension there is no exact per-statement counter (table statistics
    /// lag and mix the upsert's index probes with reads), so this fails.
    fn counters(&self, c: &Connector) -> Result<ServerCounters> {
        let mut conn = open(c, Duration::from_secs(5))?;
        let q = format!(
            "SELECT coalesce(sum(calls) FILTER (WHERE query IN ({}, {}, {})), 0), coalesce(sum(calls) FILTER (WHERE query = {}), 0) FROM pg_stat_statements",
            literal(GET_SQL),
            literal(SIMPLE_GET_STAT),
            literal(batch::BATCH_SQL),
            literal(SET_SQL)
        );
        let rows = conn
            .query(&q)
            .context("pg_stat_statements is not available: load it (shared_preload_libraries) and CREATE EXTENSION pg_stat_statements to cross-check kvlab's counts")?;
        let num = |v: Option<&Option<String>>| {
            v.and_then(|x| x.as_deref())
                .and_then(|x| x.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let r = rows.first().cloned().unwrap_or_default();
        Ok(ServerCounters::requests(num(r.first()), num(r.get(1))))
    }

    fn clients(&self, c: &Connector) -> Result<Option<u64>> {
        crate::products::sql::clients::<PgConn>(
            c,
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'",
        )
    }

    fn server(&self) -> &dyn Server {
        self
    }

    fn observe(&self) -> Option<&dyn crate::driver::Observe> {
        Some(&observe::PgObserve)
    }
}
