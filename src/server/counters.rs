//! Server-side counters (Redis/Valkey `INFO`, memcached `stats`), read before and
//! after a run so kvlab's own counts can be checked against the server's.

use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::driver::{Connector, Protocol, memcache, resp};

/// Request counters as the server reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// GET commands executed.
    pub gets: u64,
    /// SET commands executed.
    pub sets: u64,
    /// GETs that found the key.
    pub hits: u64,
    /// GETs that did not.
    pub misses: u64,
    /// Whether these are exact per-command counts (false: derived from table
    /// statistics, e.g. PostgreSQL without pg_stat_statements).
    #[serde(default = "yes")]
    pub exact: bool,
}

fn yes() -> bool {
    true
}

impl ServerCounters {
    /// `self - before`, field by field.
    pub fn since(&self, before: &ServerCounters) -> ServerCounters {
        ServerCounters {
            gets: self.gets.saturating_sub(before.gets),
            sets: self.sets.saturating_sub(before.sets),
            hits: self.hits.saturating_sub(before.hits),
            misses: self.misses.saturating_sub(before.misses),
            exact: self.exact && before.exact,
        }
    }
}

/// Reads the counters over a fresh connection.
pub fn read(connector: &Connector) -> Result<ServerCounters> {
    match connector.protocol {
        Protocol::Postgres => return read_postgres(connector),
        Protocol::Mysql => return read_mysql(connector),
        _ => {}
    }
    let (s, _) = connector.connect(Duration::from_secs(5)).with_context(|| {
        format!(
            "cannot connect to {} to read its counters",
            connector.display
        )
    })?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut s = &s;
    match connector.protocol {
        Protocol::Resp => {
            let frame = resp::command(&mut s, &[b"INFO", b"commandstats"])?;
            let cmd = String::from_utf8_lossy(resp::bulk_payload(&frame)?).into_owned();
            let frame = resp::command(&mut s, &[b"INFO", b"stats"])?;
            let st = String::from_utf8_lossy(resp::bulk_payload(&frame)?).into_owned();
            let calls = |name: &str| -> u64 {
                resp::info_field(&cmd, name)
                    .and_then(|v| {
                        v.split(',')
                            .find_map(|kv| kv.strip_prefix("calls=")?.parse().ok())
                    })
                    .unwrap_or(0)
            };
            let num = |name: &str| {
                resp::info_field(&st, name)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0)
            };
            Ok(ServerCounters {
                gets: calls("cmdstat_get"),
                sets: calls("cmdstat_set"),
                hits: num("keyspace_hits"),
                misses: num("keyspace_misses"),
                exact: true,
            })
        }
        _ => {
            let stats = memcache::stats(&mut s)?;
            let num = |name: &str| {
                stats
                    .iter()
                    .find(|(k, _)| k == name)
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0)
            };
            Ok(ServerCounters {
                gets: num("cmd_get"),
                sets: num("cmd_set"),
                hits: num("get_hits"),
                misses: num("get_misses"),
                exact: true,
            })
        }
    }
}

/// PostgreSQL: executions of kvlab's two statements from `pg_stat_statements`.
/// Without that extension there is no exact per-statement counter (table
/// statistics lag and mix the upsert's index probes with reads), so this fails.
fn read_postgres(connector: &Connector) -> Result<ServerCounters> {
    use crate::driver::postgres::{GET_SQL, SET_SQL, literal};
    let mut c = connector.open_pg(Duration::from_secs(5))?;
    let q = format!(
        "SELECT coalesce(sum(calls) FILTER (WHERE query = {}), 0), coalesce(sum(calls) FILTER (WHERE query = {}), 0) FROM pg_stat_statements",
        literal(GET_SQL),
        literal(SET_SQL)
    );
    let rows = c
        .query(&q)
        .context("pg_stat_statements is not available: load it (shared_preload_libraries) and CREATE EXTENSION pg_stat_statements to cross-check kvlab's counts")?;
    let num = |v: Option<&Option<String>>| {
        v.and_then(|x| x.as_deref())
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let r = rows.first().cloned().unwrap_or_default();
    Ok(ServerCounters {
        gets: num(r.first()),
        sets: num(r.get(1)),
        hits: 0,
        misses: 0,
        exact: true,
    })
}

/// MariaDB/MySQL: `SHOW GLOBAL STATUS`. Executed prepared statements are
/// counted per statement type (`Com_stmt_execute` is their total).
fn read_mysql(connector: &Connector) -> Result<ServerCounters> {
    let mut c = connector.open_my(Duration::from_secs(5))?;
    let rows = c.query(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_stmt_execute', 'Com_select', 'Com_insert', 'Handler_read_key')",
    )?;
    let get = |name: &str| -> u64 {
        rows.iter()
            .find(|r| r.first().and_then(|v| v.as_deref()) == Some(name))
            .and_then(|r| r.get(1).cloned().flatten())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok(ServerCounters {
        gets: get("Com_select"),
        sets: get("Com_insert"),
        hits: 0,
        misses: 0,
        exact: true,
    })
}
