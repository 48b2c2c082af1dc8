//! Picks the concrete codecs of a cache-aside point from the protocols of its
//! cache and its database, and runs it through [`super::execute_with_codecs`].

use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use super::execute_with_codecs;
use crate::driver::Protocol;
use crate::driver::memcache::Memcache;
use crate::driver::mysql::Mysql;
use crate::driver::postgres::Postgres;
use crate::driver::resp::Resp;
use crate::engine::{AsideSpec, EngineReport, Observer, Spec};

/// Runs one cache-aside point (the database is `spec.connector`).
pub fn execute(
    spec: &Spec,
    aside: &AsideSpec,
    shutdown: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<EngineReport> {
    let size = spec.values.size();
    macro_rules! with_db {
        ($cache:expr) => {
            match spec.connector.protocol {
                Protocol::Postgres => execute_with_codecs(
                    $cache,
                    Postgres::new(size),
                    spec,
                    aside,
                    shutdown,
                    observer,
                ),
                Protocol::Mysql => {
                    execute_with_codecs($cache, Mysql::new(size), spec, aside, shutdown, observer)
                }
                _ => bail!("cache-aside needs a database behind the cache"),
            }
        };
    }
    match aside.cache.protocol {
        Protocol::Resp => with_db!(Resp),
        Protocol::Memcache => with_db!(Memcache),
        _ => bail!("cache-aside needs redis, valkey or memcached as the cache"),
    }
}
