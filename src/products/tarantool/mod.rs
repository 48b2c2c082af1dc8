//! Tarantool over IPROTO. Everything kvlab knows of it lives here: the
//! `tarantool://` URL, the codec (SELECT/REPLACE/DELETE by primary key, many in
//! flight per connection, matched by sync id), the set-up session (greeting,
//! CHAP-SHA1, EVAL), the managed server (a Lua init), kvlab's space (memtx or
//! vinyl, loaded by pipelined REPLACEs) and the server's own counters
//! (`box.stat()`).
//!
//! # Layout
//! - [`codec`]: the sans-IO IPROTO codec.
//! - [`iproto`]: the protocol's framing and MessagePack (request types,
//!   reply frames, the reader).
//! - [`conn`]: the blocking set-up session.
//! - [`server`]: the managed server.
//! - [`table`]: kvlab's space: check, load, reset, size.

mod batch;
pub mod codec;
pub mod conn;
pub mod iproto;
pub mod server;
pub mod table;

use std::io;
use std::time::Duration;

use anyhow::{Context, Result};

pub use codec::TtCodec;
pub use conn::{TtConn, open};

use crate::driver::product::declares;
use crate::driver::setup::hand_over;
use crate::driver::wire::Session;
use crate::driver::{
    Connector, Facts, Product, ReportedUsage, Server, ServerCounters, ServerFacts, ServerInfo,
    TableFacts, UsageReport,
};
use crate::transport::{Stream, TlsStart};

/// Tarantool (`tarantool`).
pub struct Tarantool;

/// The Tarantool product.
pub static TARANTOOL: Tarantool = Tarantool;

/// The id of kvlab's space, from a session.
pub fn space_id(c: &mut TtConn) -> io::Result<Option<u32>> {
    let r = c.eval("local s = box.space.kvlab_kv return s and s.id", vec![])?;
    Ok(r.first().and_then(rmpv::Value::as_u64).map(|v| v as u32))
}

/// What Tarantool declares; its URLs name no database.
static FACTS: Facts = Facts {
    batch_reads: Some(
        "SQL SELECT \"k\", \"v\" FROM \"kvlab_kv\" WHERE \"k\" IN (?, …) as IPROTO_EXECUTE: box.stat() counts one EXECUTE",
    ),
    name: "tarantool",
    title: "Tarantool",
    schemes: &["tarantool"],
    default_port: 3301,
    password_env: Some("KVLAB_TARANTOOL_PASSWORD"),
    unix_url_example: Some("tarantool+unix:///path/to.sock"),
    example_url: "tarantool://[user:pass@]host:3301",
    tls_start: TlsStart::Unsupported("Tarantool speaks TLS only in its Enterprise edition"),
    usage_report: Some(UsageReport {
        cpu: "os.clock(), the process's CPU time",
        memory: Some("box.slab.info().arena_used + box.info.memory().lua"),
        resident: false,
    }),
    server: ServerFacts {
        binary: "tarantool",
        package: "tarantool",
        ..ServerFacts::DEFAULTS
    },
    table: TableFacts {
        options: &["table_engine"],
        engines: &["memtx", "vinyl"],
    },
    ..Facts::DEFAULTS
};

impl Product for Tarantool {
    declares!(&FACTS, Database);

    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(Stream, Session)> {
        let mut conn = open(c, timeout)?;
        let id = space_id(&mut conn)?.ok_or_else(|| {
            io::Error::other("kvlab's space kvlab_kv does not exist (load the data first)")
        })?;
        hand_over(conn.into_stream(), Session::Table { id })
    }

    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo> {
        let conn = open(c, timeout).map_err(|e| c.setup_error(e))?;
        Ok(ServerInfo {
            product: "tarantool".into(),
            version: conn.version,
        })
    }

    /// `box.stat()`: SELECT and REPLACE requests since the server started (set-up
    /// uses EVAL, which is counted apart).
    fn counters(&self, c: &Connector) -> Result<ServerCounters> {
        let mut conn = open(c, crate::driver::COUNTERS_TIMEOUT)?;
        let r = conn
            .eval(
                "local s = box.stat() return s.SELECT.total + (s.EXECUTE and s.EXECUTE.total or 0), s.REPLACE.total",
                vec![],
            )
            .context("cannot read box.stat()")?;
        let num = |i: usize| r.get(i).and_then(rmpv::Value::as_u64).unwrap_or(0);
        Ok(ServerCounters::requests(num(0), num(1)))
    }

    fn reported_usage(&self, c: &Connector) -> Result<ReportedUsage> {
        let mut conn = open(c, crate::driver::COUNTERS_TIMEOUT)?;
        let r = conn
            .eval(
                "return os.clock(), box.slab.info().arena_used + box.info.memory().lua",
                vec![],
            )
            .context("cannot read os.clock()")?;
        let cpu = r.first().and_then(rmpv::Value::as_f64);
        let mem = r
            .get(1)
            .and_then(|v| v.as_u64().or(v.as_f64().map(|f| f as u64)));
        Ok(ReportedUsage {
            cpu_s: cpu.with_context(|| format!("{}: os.clock() gave no number", c.display))?,
            memory_bytes: mem,
        })
    }

    fn server(&self) -> &dyn Server {
        self
    }
}
