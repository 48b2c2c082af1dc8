//! `--target` as text: a product name (a server kvlab starts) or a URL of a
//! running server, `SCHEME://[user:pass@]host[:port][/db][?options]`, by the
//! registry's rules. A TLS scheme (`rediss://`) turns TLS on; `SCHEME+unix://`
//! names a unix socket by its path; products read their own URL options
//! (`?sslmode=`, `?host=/dir`, `?socket=`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

use super::{TargetKind, TargetSpec};
use crate::driver::{Endpoint, SchemaOptions, Secret};
use crate::error::UsageError;
use crate::products;
use crate::transport::TlsOptions;

impl TargetSpec {
    /// A target kvlab starts.
    pub fn managed(kind: TargetKind) -> TargetSpec {
        TargetSpec {
            kind,
            external: None,
            server_opts: BTreeMap::new(),
            schema: SchemaOptions::default(),
            consistency: None,
            query_mode: None,
            pooler: None,
            pooler_opts: BTreeMap::new(),
            read_replicas: Vec::new(),
            read_from: None,
        }
    }
}

fn bad(problem: impl Into<String>, fix: impl Into<String>) -> UsageError {
    UsageError::bad("--target", problem, fix)
}

/// `%`-decodes one URL part.
fn decode(p: &str) -> String {
    url::form_urlencoded::parse(format!("x={p}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

impl FromStr for TargetSpec {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<Self, UsageError> {
        if let Some(kind) = TargetKind::named(s) {
            return Ok(TargetSpec::managed(kind));
        }
        let fix = products::target_fix();
        let Some((scheme, rest)) = s.split_once("://") else {
            return Err(bad(format!("unknown target '{s}'"), fix));
        };
        let form = Form::of(scheme)?;
        // libpq and redis+unix allow an empty host (`user@/db`): read it as localhost.
        let text = match rest.split_once('@') {
            Some((auth, tail)) if tail.starts_with('/') || tail.starts_with('?') => {
                format!("{scheme}://{auth}@localhost{tail}")
            }
            _ => s.to_string(),
        };
        let url = url::Url::parse(&text)
            .map_err(|e| bad(format!("cannot parse URL: {e}"), fix.clone()))?;
        let mut ep = form.endpoint(&url, &fix)?;
        form.options(&url, &mut ep)?;
        let mut t = TargetSpec::managed(form.kind);
        t.external = Some(ep);
        Ok(t)
    }
}

/// What a URL's scheme says: the product, TLS (`rediss://`), a unix socket
/// (`SCHEME+unix://`).
struct Form<'s> {
    scheme: &'s str,
    kind: TargetKind,
    tls: bool,
    unix: bool,
}

impl<'s> Form<'s> {
    /// The form of `scheme` (without `://`), by the registry's schemes.
    fn of(scheme: &'s str) -> Result<Self, UsageError> {
        let (base, unix) = match scheme.strip_suffix("+unix") {
            Some(b) => (b, true),
            None => (scheme, false),
        };
        let (kind, tls) = match TargetKind::of_scheme(base) {
            Ok(Some(k)) => k,
            Ok(None) => {
                return Err(bad(
                    format!("unsupported scheme '{scheme}://'"),
                    products::target_fix(),
                ));
            }
            Err((problem, refused_fix)) => return Err(bad(problem, refused_fix)),
        };
        let facts = kind.product().facts();
        if unix && (!facts.unix_sockets || facts.url_database || tls) {
            return Err(bad(
                format!("{scheme}:// is not a URL form kvlab knows"),
                format!(
                    "name a unix socket as {}",
                    products::or_list(&products::unix_url_examples())
                ),
            ));
        }
        Ok(Form {
            scheme,
            kind,
            tls,
            unix,
        })
    }

    /// Where `url` points: host, port, login, socket and database, by the
    /// product's rules.
    fn endpoint(&self, url: &url::Url, fix: &str) -> Result<Endpoint, UsageError> {
        let facts = self.kind.product().facts();
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .or(self.unix.then_some("localhost"))
            .ok_or_else(|| bad("the URL has no host", fix))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let user = Some(url.username()).filter(|u| !u.is_empty()).map(decode);
        let password = match url.password().map(decode) {
            Some(p) if p == "***" => {
                return Err(bad(
                    "the URL's password is '***', the mask kvlab prints in place of a password (it never shows one)",
                    match facts.password_env {
                        Some(var) => format!(
                            "give the real password in the URL, or leave it out and set {var}"
                        ),
                        None => "give the real password in the URL".into(),
                    },
                ));
            }
            Some(p) => Some(Secret(p)),
            // A URL without one: the variable the product's own client reads.
            None if facts.refuses_login.is_none() => facts
                .password_env
                .and_then(|var| std::env::var(var).ok())
                .filter(|p| !p.is_empty())
                .map(Secret),
            None => None,
        };
        if let Some(why) = facts.refuses_login
            && (user.is_some() || password.is_some())
        {
            return Err(bad(
                format!(
                    "{}:// URLs take no user or password ({why})",
                    self.kind.scheme()
                ),
                "remove the user:pass@ part",
            ));
        }
        let path = url.path();
        let (socket, path) = match self.unix {
            true if path.len() > 1 => (Some(PathBuf::from(decode(path))), ""),
            true => {
                return Err(bad(
                    "the URL names no socket",
                    format!("write {}:///path/to/the.sock", self.scheme),
                ));
            }
            false => (None, path.trim_start_matches('/')),
        };
        let database = database(self.kind, path)?;
        if facts.url_database && user.is_none() {
            return Err(bad(
                "the URL names no user",
                "write scheme://USER:PASS@host:port/db",
            ));
        }
        Ok(Endpoint {
            host,
            port: url.port().unwrap_or(facts.default_port),
            user,
            password,
            database,
            socket,
            tls: self.tls.then(TlsOptions::default),
        })
    }

    /// Applies `url`'s options (`?key=value`) the product reads to `ep`.
    fn options(&self, url: &url::Url, ep: &mut Endpoint) -> Result<(), UsageError> {
        let product = self.kind.product();
        for (key, value) in url.query_pairs() {
            if !product.url_option(&key, &value, ep)? {
                return Err(bad(
                    format!("unknown URL option '{key}'"),
                    match product.facts().url_options {
                        [] => "remove the ?… part".to_string(),
                        known => format!("use {}", products::or_list(known)),
                    },
                ));
            }
        }
        Ok(())
    }
}

/// The database (or namespace) a URL's path names, by the product's rules.
fn database(kind: TargetKind, path: &str) -> Result<Option<String>, UsageError> {
    let product = kind.product();
    if product.facts().url_database {
        if path.is_empty() || path.contains('/') {
            return Err(bad(
                "the URL names no database",
                format!(
                    "end it with /DBNAME, e.g. {}://user:pass@host:{}/mydb",
                    kind.scheme(),
                    product.facts().default_port
                ),
            ));
        }
        return Ok(Some(decode(path)));
    }
    match product.facts().url_namespace {
        Some(what) if !path.is_empty() => {
            if path.contains('/') {
                return Err(bad(
                    format!("unexpected path '/{path}' in the URL"),
                    format!("end it with at most one /{}", what.to_ascii_uppercase()),
                ));
            }
            Ok(Some(decode(path)))
        }
        _ if !path.is_empty() => Err(bad(
            format!("unexpected path '/{path}' in the URL"),
            "give only scheme://[user:pass@]host:port",
        )),
        _ => Ok(None),
    }
}
