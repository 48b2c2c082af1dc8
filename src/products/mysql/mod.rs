//! MariaDB and MySQL over the MySQL client/server protocol. Everything kvlab
//! knows of them lives here: the `mysql://` URL, the codec (prepared
//! statements, one command at a time per connection), the set-up session, the
//! managed MariaDB server, kvlab's table (InnoDB or MEMORY, loaded by
//! multi-row INSERTs) and the server's own counters (`SHOW GLOBAL STATUS`).
//!
//! # Layout
//! - [`codec`]: the sans-IO codec (`COM_STMT_EXECUTE` templates, result walker).
//! - [`packet`]: the protocol's packets and length-encoded values.
//! - [`observe`]: watching a server read-only (`kvlab observe`).
//! - [`conn`]: the blocking set-up session (handshake, auth, queries, INSERT).
//! - [`server`]: the managed server (`mariadb-install-db`, kvlab's login).
//! - `replicas`: its binlog read replicas (`--server-opt replicas=N`) and their lag.
//! - [`table`]: kvlab's table: check, load, reset, size.
//! - [`url`]: the URL options (TLS modes and files, the unix socket).

mod batch;
pub mod codec;
pub mod conn;
pub mod observe;
pub mod packet;
mod replicas;
pub mod server;
pub mod table;
pub mod url;

use std::io;
use std::time::Duration;

use anyhow::Result;

pub use codec::{GET_SQL, MAX_VALUE, MyCodec, SET_SQL};
pub use conn::{MyConn, open};

use crate::driver::product::declares;
use crate::driver::setup::hand_over;
use crate::driver::wire::Session;
use crate::driver::{
    Connector, Endpoint, Facts, Product, Server, ServerCounters, ServerFacts, ServerInfo,
    TableFacts,
};
use crate::error::UsageError;
use crate::transport::{Stream, TlsStart};

/// MariaDB (managed `mariadbd`) or MySQL (by URL).
pub struct Mariadb;

/// The MariaDB/MySQL product.
pub static MARIADB: Mariadb = Mariadb;

/// What MariaDB/MySQL declares; the protocol answers one command at a time
/// on a connection (no pipelining).
static FACTS: Facts = Facts {
    batch_reads: Some(
        "SELECT k, v FROM kvlab_kv WHERE k IN (…) as a text query: the server counts one Com_select",
    ),
    name: "mariadb",
    title: "MariaDB/MySQL",
    aliases: &["mysql"],
    schemes: &["mysql", "mariadb"],
    default_port: 3306,
    password_env: Some("MYSQL_PWD"),
    unix_url_example: Some("mysql://user:pass@localhost/db?socket=/path"),
    example_url: "mysql://user:pass@host:3306/db",
    url_database: true,
    pipelines: false,
    url_options: url::OPTIONS,
    tls_start: TlsStart::Negotiated,
    server: ServerFacts {
        binary: "mariadbd",
        package: "mariadb-server",
        system_user: Some("mysql"),
        on_disk: true,
        major_parts: 2,
        // How a commit waits for the disk.
        copied_beside: &[
            "innodb_flush_log_at_trx_commit",
            "sync_binlog",
            "innodb_doublewrite",
        ],
        ..ServerFacts::DEFAULTS
    },
    table: TableFacts {
        options: &["table_engine"],
        engines: &["innodb", "memory"],
    },
    ..Facts::DEFAULTS
};

impl Product for Mariadb {
    declares!(&FACTS, Database);

    fn url_option(&self, key: &str, value: &str, ep: &mut Endpoint) -> Result<bool, UsageError> {
        url::option(key, value, ep)
    }

    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(Stream, Session)> {
        let mut conn = open(c, timeout)?;
        let (get, set) = conn.prepare_ids()?;
        hand_over(conn.into_stream(), Session::Statements { get, set })
    }

    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo> {
        let conn = open(c, timeout).map_err(|e| c.setup_error(e))?;
        let product = if conn.server_version.to_ascii_lowercase().contains("mariadb") {
            "mariadb"
        } else {
            "mysql"
        };
        Ok(ServerInfo {
            product: product.into(),
            version: conn.server_version,
        })
    }

    /// `SHOW GLOBAL STATUS`: executed prepared statements are counted per
    /// statement type (`Com_stmt_execute` is their total).
    fn counters(&self, c: &Connector) -> Result<ServerCounters> {
        let mut conn = open(c, Duration::from_secs(5))?;
        let rows = conn.query(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_stmt_execute', 'Com_select', 'Com_insert', 'Handler_read_key')",
        )?;
        let get = |name: &str| -> u64 {
            rows.iter()
                .find(|r| r.first().and_then(|v| v.as_deref()) == Some(name))
                .and_then(|r| r.get(1).cloned().flatten())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        Ok(ServerCounters::requests(
            get("Com_select"),
            get("Com_insert"),
        ))
    }

    fn clients(&self, c: &Connector) -> Result<Option<u64>> {
        crate::products::sql::clients::<MyConn>(
            c,
            "SELECT variable_value FROM information_schema.global_status WHERE variable_name = 'THREADS_CONNECTED'",
        )
    }

    fn server(&self) -> &dyn Server {
        self
    }

    fn observe(&self) -> Option<&dyn crate::driver::Observe> {
        Some(&observe::MyObserve)
    }
}
