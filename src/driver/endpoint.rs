//! Where a target is and how to log in: the address of a server kvlab did not
//! start, its password (never printed), which settings are secrets, and the
//! options of kvlab's own table on a database.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::transport::TlsOptions;
use std::path::PathBuf;

/// Whether a server setting holds a secret (its value is never printed or stored).
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let auth = k.contains("auth") && !k.contains("authenticator") && !k.contains("authorizer");
    k.contains("pass") || k.contains("secret") || auth
}

/// Options of kvlab's own table on a database target.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SchemaOptions {
    /// MariaDB storage engine of the table (`innodb` or `memory`).
    pub table_engine: Option<String>,
    /// PostgreSQL: create the table UNLOGGED.
    pub unlogged: bool,
    /// Drop and reload kvlab's table even if it looks right.
    pub recreate: bool,
}

/// A server kvlab did not start.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Endpoint {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// User name for AUTH (Redis ACL), if any.
    pub user: Option<String>,
    /// Password; serialized as `"***"`, never printed.
    pub password: Option<Secret>,
    /// Database name (SQL targets).
    #[serde(default)]
    pub database: Option<String>,
    /// A unix socket to connect to instead of `host:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
    /// TLS, if the connection uses it (from the URL or the `--tls*` flags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsOptions>,
}

impl Endpoint {
    /// Whether the server is on this machine: a unix socket, or a loopback
    /// host (`localhost`, `127.*`, `::1`).
    pub fn is_loopback(&self) -> bool {
        self.socket.is_some()
            || self.host == "localhost"
            || self
                .host
                .trim_matches(|c| c == '[' || c == ']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// The URL with the password masked for a server of `product`: its TLS
    /// scheme (`rediss://`) when TLS is on and it has one.
    pub fn display_for(&self, product: &dyn crate::driver::Product) -> String {
        self.display_url(self.scheme_for(product))
    }

    /// The scheme a URL of this endpoint of `product` shows: its TLS scheme
    /// (`rediss`) when TLS is on and it has one, else its first.
    pub fn scheme_for(&self, product: &dyn crate::driver::Product) -> &'static str {
        match (&self.tls, product.facts().tls_schemes.first()) {
            (Some(_), Some(s)) => s,
            _ => product.facts().schemes[0],
        }
    }

    /// The URL with the password masked, safe to print and store.
    pub fn display_url(&self, scheme: &str) -> String {
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (None, Some(_)) => ":***@".to_string(),
            (Some(u), None) => format!("{u}@"),
            (None, None) => String::new(),
        };
        let db = self
            .database
            .as_ref()
            .map(|d| format!("/{d}"))
            .unwrap_or_default();
        match &self.socket {
            Some(path) => format!("{scheme}+unix://{auth}{}{db}", path.display()),
            None => format!("{}://{auth}{}:{}{db}", scheme, self.host, self.port),
        }
    }
}

/// A password. `Debug`, `Display` and serde all show `***`.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl Secret {
    /// The real value, for the wire only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}
