//! The URL options of a MySQL/MariaDB target, as its clients read them:
//! `ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key`, and `socket=/path`.

use std::path::PathBuf;

use crate::driver::Endpoint;
use crate::error::UsageError;
use crate::transport::{TlsOptions, Verify};

/// The options [`option`] reads.
pub const OPTIONS: &[&str] = &["ssl-mode", "ssl-ca", "ssl-cert", "ssl-key", "socket"];

/// Applies `key=value` to `ep`; `Ok(false)` for an option it does not read.
pub fn option(key: &str, value: &str, ep: &mut Endpoint) -> Result<bool, UsageError> {
    let bad = |problem: String, fix: &str| UsageError::bad("--target", problem, fix);
    match key.replace('_', "-").as_str() {
        "ssl-mode" => match value.to_ascii_uppercase().as_str() {
            "DISABLED" => ep.tls = None,
            mode @ ("REQUIRED" | "VERIFY_CA" | "VERIFY_IDENTITY") => {
                let t = ep.tls.get_or_insert_with(TlsOptions::default);
                t.verify = match mode {
                    "REQUIRED" => Verify::None,
                    "VERIFY_CA" => Verify::Chain,
                    _ => Verify::Full,
                };
            }
            "PREFERRED" => {
                return Err(bad(
                    "ssl-mode=PREFERRED falls back to plain without saying so, which would blur what was measured".into(),
                    "use ssl-mode=VERIFY_IDENTITY (or REQUIRED, VERIFY_CA), or ssl-mode=DISABLED",
                ));
            }
            _ => {
                return Err(bad(
                    format!("unknown ssl-mode '{value}'"),
                    "use DISABLED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY",
                ));
            }
        },
        k @ ("ssl-ca" | "ssl-cert" | "ssl-key") => {
            let t = ep.tls.get_or_insert_with(|| TlsOptions {
                verify: Verify::Full,
                ..TlsOptions::default()
            });
            let path = Some(PathBuf::from(value));
            match k {
                "ssl-ca" => t.ca = path,
                "ssl-cert" => t.cert = path,
                _ => t.key = path,
            }
        }
        "socket" => ep.socket = Some(PathBuf::from(value)),
        _ => return Ok(false),
    }
    Ok(true)
}
