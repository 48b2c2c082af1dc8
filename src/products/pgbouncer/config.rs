//! PgBouncer's settings: the `--pooler-opt` keys it takes (those of
//! `pgbouncer.ini`'s `[pgbouncer]` section in 1.18 that kvlab does not set
//! itself), their checks, kvlab's defaults, and the `pgbouncer.ini` kvlab
//! writes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::error::UsageError;

/// Settings kvlab sets itself (address, authentication, files).
const OWN: &[&str] = &[
    "listen_addr",
    "listen_port",
    "unix_socket_dir",
    "auth_type",
    "auth_file",
    "auth_hba_file",
    "auth_query",
    "auth_user",
    "admin_users",
    "stats_users",
    "logfile",
    "pidfile",
    "user",
    "conffile",
];

/// Settings that take a whole number.
const NUMBERS: &[&str] = &[
    "default_pool_size",
    "min_pool_size",
    "reserve_pool_size",
    "reserve_pool_timeout",
    "max_client_conn",
    "max_db_connections",
    "max_user_connections",
    "server_round_robin",
    "disable_pqexec",
    "application_name_add_host",
    "stats_period",
    "log_connections",
    "log_disconnections",
    "log_pooler_errors",
    "log_stats",
    "verbose",
    "server_reset_query_always",
    "server_check_delay",
    "server_fast_close",
    "server_lifetime",
    "server_idle_timeout",
    "server_connect_timeout",
    "server_login_retry",
    "client_login_timeout",
    "autodb_idle_timeout",
    "dns_max_ttl",
    "dns_nxdomain_ttl",
    "dns_zone_check_period",
    "query_timeout",
    "query_wait_timeout",
    "client_idle_timeout",
    "idle_transaction_timeout",
    "suspend_timeout",
    "pkt_buf",
    "max_packet_size",
    "listen_backlog",
    "sbuf_loopcnt",
    "so_reuseport",
    "tcp_defer_accept",
    "tcp_socket_buffer",
    "tcp_keepalive",
    "tcp_keepcnt",
    "tcp_keepidle",
    "tcp_keepintvl",
    "tcp_user_timeout",
];

/// Settings that take text.
const TEXTS: &[&str] = &[
    "pool_mode",
    "ignore_startup_parameters",
    "server_reset_query",
    "server_check_query",
    "track_extra_parameters",
];

/// The pooling modes.
pub const POOL_MODES: [&str; 3] = ["session", "transaction", "statement"];

/// The default pool size (server connections per database and user) behind
/// transaction and statement pooling; session pooling gets one per client.
pub const DEFAULT_POOL_SIZE: usize = 20;

fn bad(problem: String, fix: impl Into<String>) -> UsageError {
    UsageError::bad("--pooler-opt", problem, fix)
}

/// Checks `opts` and adds kvlab's defaults for `connections` clients.
pub fn configure(
    opts: &BTreeMap<String, String>,
    connections: usize,
) -> Result<BTreeMap<String, String>, UsageError> {
    let mut s = BTreeMap::new();
    for (k, v) in opts {
        let key = k.replace('-', "_").to_ascii_lowercase();
        if OWN.contains(&key.as_str()) {
            return Err(bad(
                format!("kvlab sets pgbouncer's '{key}' itself"),
                "remove it",
            ));
        }
        if v.contains(['\n', '\r']) {
            return Err(bad(
                format!("the value of '{key}' spans lines"),
                "give one line",
            ));
        }
        if NUMBERS.contains(&key.as_str()) {
            if v.trim().parse::<u64>().is_err() {
                return Err(bad(
                    format!("'{key}' takes a whole number, not '{v}'"),
                    format!("e.g. {key}=20"),
                ));
            }
        } else if key == "pool_mode" {
            if !POOL_MODES.contains(&v.as_str()) {
                return Err(bad(
                    format!("unknown pool_mode '{v}'"),
                    format!("use pool_mode={}", POOL_MODES.join("|")),
                ));
            }
        } else if !TEXTS.contains(&key.as_str()) {
            return Err(bad(
                format!("unknown pgbouncer setting '{key}'"),
                "give a [pgbouncer] setting of pgbouncer.ini, e.g. pool_mode=transaction or default_pool_size=20",
            ));
        }
        s.insert(key, v.trim().to_string());
    }
    s.entry("pool_mode".into()).or_insert("session".into());
    // A session holds its server connection until the client leaves: a
    // smaller pool would leave clients waiting for the whole run.
    let session = s["pool_mode"] == "session";
    let pool = if session {
        connections.max(DEFAULT_POOL_SIZE)
    } else {
        DEFAULT_POOL_SIZE
    };
    s.entry("default_pool_size".into())
        .or_insert(pool.to_string());
    if session && server_connections(&s) < connections {
        return Err(bad(
            format!(
                "pool_mode=session holds a server connection per client, and a pool of {} leaves {} of the {connections} connections waiting",
                server_connections(&s),
                connections - server_connections(&s)
            ),
            format!("raise default_pool_size to {connections} or use pool_mode=transaction"),
        ));
    }
    let mut default = |k: &str, v: String| {
        s.entry(k.to_string()).or_insert(v);
    };
    default("max_client_conn", (connections + 100).to_string());
    default("log_connections", "0".into());
    default("log_disconnections", "0".into());
    Ok(s)
}

/// The most server connections the pool opens: its size and reserve, or the
/// database limit when that is lower.
pub fn server_connections(s: &BTreeMap<String, String>) -> usize {
    let num = |k: &str| s.get(k).and_then(|v| v.parse::<usize>().ok());
    let pool = num("default_pool_size").unwrap_or(DEFAULT_POOL_SIZE)
        + num("reserve_pool_size").unwrap_or(0);
    match num("max_db_connections") {
        Some(m) if m > 0 => pool.min(m),
        _ => pool,
    }
}

/// `pgbouncer.ini`: every database of the server at `host:port`, clients on
/// `127.0.0.1:listen`, `user` trusted (listed in `auth_file`) and the admin.
pub fn ini(
    settings: &BTreeMap<String, String>,
    host: &str,
    port: u16,
    listen: u16,
    user: &str,
    auth_file: &str,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "[databases]\n* = host={host} port={port}\n");
    let _ = writeln!(s, "[pgbouncer]");
    let _ = writeln!(s, "listen_addr = 127.0.0.1\nlisten_port = {listen}");
    let _ = writeln!(
        s,
        "unix_socket_dir =\nauth_type = trust\nauth_file = {auth_file}"
    );
    let _ = writeln!(s, "admin_users = {user}\nstats_users = {user}");
    for (k, v) in settings {
        let _ = writeln!(s, "{k} = {v}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_and_checks() {
        let s = configure(&opts(&[("pool_mode", "transaction")]), 1000).unwrap();
        assert_eq!(s["pool_mode"], "transaction");
        assert_eq!(s["default_pool_size"], "20");
        assert_eq!(s["max_client_conn"], "1100");
        assert_eq!(server_connections(&s), 20);
        let session = configure(&BTreeMap::new(), 500).unwrap();
        assert_eq!(
            (
                session["pool_mode"].as_str(),
                session["default_pool_size"].as_str()
            ),
            ("session", "500")
        );
        let e = configure(&opts(&[("default_pool_size", "10")]), 50).unwrap_err();
        assert!(
            e.to_string()
                .contains("leaves 40 of the 50 connections waiting"),
            "{e}"
        );
        for (k, v, says) in [
            ("pool_mode", "txn", "unknown pool_mode"),
            ("default_pool_size", "lots", "whole number"),
            ("listen_port", "1", "itself"),
            ("poolmode", "session", "unknown pgbouncer setting"),
        ] {
            let e = configure(&opts(&[(k, v)]), 10).unwrap_err().to_string();
            assert!(e.starts_with("--pooler-opt: "), "{e}");
            assert!(e.contains(says), "{e}");
        }
        let ini = ini(&s, "127.0.0.1", 5432, 6432, "postgres", "/tmp/u");
        assert!(ini.contains("* = host=127.0.0.1 port=5432"));
        assert!(ini.contains("pool_mode = transaction\n"));
    }
}
