//! The version of a product installed on this machine (what its server
//! binary's `--version` prints), to set beside a version observed elsewhere.

use std::process::{Command, Stdio};

use crate::driver::Product;

/// The version of the server binary kvlab would start for `product`, e.g.
/// `7.0.15`; `None` when it is not installed or does not say.
pub fn installed_version(product: &'static dyn Product) -> Option<String> {
    let bin = product.server().find(product.facts().server.binary)?;
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    first_version(&String::from_utf8_lossy(&out.stdout))
}

/// The first `N.N[.N…]` in `text` (`7.0.15` of `Redis server v=7.0.15 sha=…`).
pub fn first_version(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|w| w.trim_matches('.'))
        .find(|w| w.contains('.') && w.split('.').all(|p| !p.is_empty()))
        .map(str::to_string)
}

/// The major version of `version` for `product` (its first
/// [`major_parts`](crate::driver::facts::ServerFacts::major_parts) numbers).
pub fn major(product: &'static dyn Product, version: &str) -> Option<String> {
    let v = first_version(version)?;
    let parts = product.facts().server.major_parts;
    Some(v.split('.').take(parts).collect::<Vec<_>>().join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_what_servers_print() {
        for (text, v) in [
            (
                "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0",
                "7.0.15",
            ),
            ("memcached 1.6.18", "1.6.18"),
            (
                "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)",
                "15.18",
            ),
            (
                "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian",
                "10.11.19",
            ),
            ("16.4 (Ubuntu 16.4-1)", "16.4"),
        ] {
            assert_eq!(first_version(text).as_deref(), Some(v), "{text}");
        }
        assert_eq!(first_version("no version. here"), None);
        let pg = crate::plan::TargetKind::Postgres.product();
        let maria = crate::plan::TargetKind::Mariadb.product();
        assert_eq!(major(pg, "15.18 (Debian)").as_deref(), Some("15"));
        assert_eq!(major(maria, "10.11.19-MariaDB").as_deref(), Some("10.11"));
    }
}
