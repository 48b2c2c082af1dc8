//! Server-side counters (Redis/Valkey `INFO`, memcached `stats`), read before and
//! after a run so kvlab's own counts can be checked against the server's.

use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::driver::{Connector, Protocol, memcache, resp};

/// Request counters as the server reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// GET commands executed.
    pub gets: u64,
    /// SET commands executed.
    pub sets: u64,
    /// GETs that found the key.
    pub hits: u64,
    /// GETs that did not.
    pub misses: u64,
}

impl ServerCounters {
    /// `self - before`, field by field.
    pub fn since(&self, before: &ServerCounters) -> ServerCounters {
        ServerCounters {
            gets: self.gets.saturating_sub(before.gets),
            sets: self.sets.saturating_sub(before.sets),
            hits: self.hits.saturating_sub(before.hits),
            misses: self.misses.saturating_sub(before.misses),
        }
    }
}

/// Reads the counters over a fresh connection.
pub fn read(connector: &Connector) -> Result<ServerCounters> {
    let s = connector.connect(Duration::from_secs(5)).with_context(|| {
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
            })
        }
        Protocol::Memcache => {
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
            })
        }
    }
}
