//! PgBouncer (Debian's `pgbouncer`), the connection pooler kvlab runs in front
//! of a managed PostgreSQL with `--pooler pgbouncer`: its settings
//! (`--pooler-opt`, any `[pgbouncer]` setting), the `pgbouncer.ini` and
//! trusted user list kvlab writes, readiness through its admin console, and
//! its own counters (`SHOW STATS`). Other poolers (Odyssey, PgCat) are reached
//! by a plain `postgres://` URL.
//!
//! # Layout
//! - [`config`]: the settings it takes, their checks and defaults, the ini file.

pub mod config;

use std::collections::BTreeMap;
use std::net::ToSocketAddrs;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::postgres::PgConn;
use crate::driver::{Endpoint, Login, Pooler, PoolerCounters, PoolerLaunch, Product};
use crate::error::UsageError;
use crate::products::sql::SqlConn;
use crate::transport::Transport;

/// PgBouncer.
pub struct PgBouncer;

/// The PgBouncer pooler.
pub static PGBOUNCER: PgBouncer = PgBouncer;

/// The admin console's database.
const ADMIN_DB: &str = "pgbouncer";

/// A session on the admin console at `at`.
fn admin(at: &Endpoint, timeout: Duration) -> Result<PgConn> {
    let addr = (at.host.as_str(), at.port)
        .to_socket_addrs()?
        .next()
        .context("no address")?;
    let s = Transport::default().dial(&addr, timeout)?;
    let user = at.user.as_deref().unwrap_or("postgres");
    let password = at.password.as_ref().map(|p| p.expose());
    PgConn::start(s, user, password, ADMIN_DB)
        .with_context(|| format!("pgbouncer's admin console on port {}", at.port))
}

impl Pooler for PgBouncer {
    fn name(&self) -> &'static str {
        "pgbouncer"
    }
    fn binary(&self) -> &'static str {
        "pgbouncer"
    }
    fn package(&self) -> &'static str {
        "pgbouncer"
    }
    fn fronts(&self, product: &dyn Product) -> bool {
        product.name() == "postgres"
    }

    fn configure(
        &self,
        opts: &BTreeMap<String, String>,
        connections: usize,
    ) -> Result<BTreeMap<String, String>, UsageError> {
        config::configure(opts, connections)
    }

    fn server_connections(&self, settings: &BTreeMap<String, String>) -> usize {
        config::server_connections(settings)
    }

    /// Named prepared statements live on one server connection; behind
    /// transaction (or statement) pooling the next request may get another,
    /// so PgBouncer 1.18 needs the unnamed statement.
    fn query_mode(&self, settings: &BTreeMap<String, String>) -> Option<&'static str> {
        match settings.get("pool_mode").map(String::as_str) {
            Some("transaction" | "statement") => Some("extended"),
            _ => None,
        }
    }

    fn query_mode_problem(
        &self,
        settings: &BTreeMap<String, String>,
        mode: &str,
    ) -> Option<String> {
        let pooling = settings.get("pool_mode").map_or("session", String::as_str);
        (mode == "prepared" && pooling != "session").then(|| {
            format!(
                "named prepared statements do not survive pgbouncer 1.18's pool_mode={pooling} (the next request may get another server connection)"
            )
        })
    }

    fn command(&self, l: &PoolerLaunch<'_>) -> Result<(Command, Login)> {
        let user = l.backend.user.clone().unwrap_or_else(|| "postgres".into());
        let auth = l.dir.join("userlist.txt");
        // Trusted: the managed PostgreSQL behind it trusts this login too.
        std::fs::write(&auth, format!("\"{user}\" \"\"\n"))?;
        let ini = config::ini(
            l.settings,
            &l.backend.host,
            l.backend.port,
            l.port,
            &user,
            &auth.to_string_lossy(),
        );
        let path = l.dir.join("pgbouncer.ini");
        std::fs::write(&path, ini)?;
        let mut cmd = Command::new(l.binary);
        cmd.arg(&path);
        let login = Login {
            user: Some(user),
            password: None,
            database: l.backend.database.clone(),
        };
        Ok((cmd, login))
    }

    fn probe(&self, at: &Endpoint, timeout: Duration) -> Result<String> {
        let mut c = admin(at, timeout)?;
        let v = c.query_one("SHOW VERSION")?.unwrap_or_default();
        Ok(v.trim_start_matches("PgBouncer ").to_string())
    }

    /// `SHOW STATS`, summed over the databases clients use (the admin
    /// console's own row left out): `total_query_count` counts each query it
    /// passed on (a `Sync` or a simple `Query`), `total_xact_count` each
    /// transaction.
    fn counters(&self, at: &Endpoint) -> Result<PoolerCounters> {
        let mut c = admin(at, Duration::from_secs(5))?;
        let (names, rows) = c.query_named("SHOW STATS")?;
        let col = |n: &str| names.iter().position(|x| x == n);
        let (db, q, x) = (
            col("database"),
            col("total_query_count"),
            col("total_xact_count"),
        );
        let (Some(db), Some(q), Some(x)) = (db, q, x) else {
            anyhow::bail!("pgbouncer's SHOW STATS has no total_query_count/total_xact_count");
        };
        let num = |r: &[Option<String>], i: usize| {
            r.get(i)
                .and_then(|v| v.as_deref())
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let mut out = PoolerCounters::default();
        for r in rows
            .iter()
            .filter(|r| r.get(db).and_then(|v| v.as_deref()) != Some(ADMIN_DB))
        {
            out.queries += num(r, q);
            out.transactions += num(r, x);
        }
        Ok(out)
    }
}
