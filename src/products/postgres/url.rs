//! The URL options of a PostgreSQL target, as libpq reads them: `sslmode`,
//! `sslrootcert`, `sslcert`, `sslkey`, and `host=/dir` for a unix socket.

use std::path::PathBuf;

use crate::driver::Endpoint;
use crate::error::UsageError;
use crate::transport::{TlsOptions, Verify};

/// The options [`option`] reads.
pub const OPTIONS: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "host",
    "port",
];

/// Applies `key=value` to `ep`; `Ok(false)` for an option it does not read.
pub fn option(key: &str, value: &str, ep: &mut Endpoint) -> Result<bool, UsageError> {
    let bad = |problem: String, fix: &str| UsageError::bad("--target", problem, fix);
    match key {
        "sslmode" => match value {
            "disable" => ep.tls = None,
            "require" | "verify-ca" | "verify-full" => {
                let t = ep.tls.get_or_insert_with(TlsOptions::default);
                t.verify = match value {
                    // libpq: require checks the chain when a root certificate is given.
                    "require" if t.ca.is_none() => Verify::None,
                    "require" | "verify-ca" => Verify::Chain,
                    _ => Verify::Full,
                };
            }
            "allow" | "prefer" => {
                return Err(bad(
                    format!(
                        "sslmode={value} falls back to plain without saying so, which would blur what was measured"
                    ),
                    "use sslmode=verify-full (or require, verify-ca), or sslmode=disable",
                ));
            }
            _ => {
                return Err(bad(
                    format!("unknown sslmode '{value}'"),
                    "use disable, require, verify-ca or verify-full",
                ));
            }
        },
        "sslrootcert" | "sslcert" | "sslkey" => {
            let t = ep.tls.get_or_insert_with(|| TlsOptions {
                verify: Verify::Full,
                ..TlsOptions::default()
            });
            let path = Some(PathBuf::from(value));
            match key {
                "sslrootcert" if value == "system" => t.ca = None,
                "sslrootcert" => {
                    t.ca = path;
                    if t.verify == Verify::None {
                        t.verify = Verify::Chain;
                    }
                }
                "sslcert" => t.cert = path,
                _ => t.key = path,
            }
        }
        "host" if value.starts_with('/') => {
            ep.socket = Some(PathBuf::from(value).join(format!(".s.PGSQL.{}", ep.port)));
        }
        "host" => ep.host = value.to_string(),
        "port" => {
            ep.port = value.parse().map_err(|_| {
                bad(
                    format!("port '{value}' is not a port number"),
                    "give e.g. port=5432",
                )
            })?;
            // A socket named by `host=/dir` is named by the port too.
            if let Some(dir) = ep.socket.as_ref().and_then(|s| s.parent()) {
                ep.socket = Some(dir.join(format!(".s.PGSQL.{}", ep.port)));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}
