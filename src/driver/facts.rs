//! What a product only declares: its names, URL schemes and rules, protocol
//! limits and capabilities, the binary and package of its managed server, and
//! its table options. Plain data, one `static` per product in its folder
//! (`products/<family>/`), read through [`Product::facts`](crate::driver::Product::facts);
//! the traits in `product` keep only behaviour.

use std::time::Duration;

use crate::driver::counters::UsageReport;
use crate::driver::endpoint::SchemaOptions;
use crate::error::UsageError;
use crate::transport::TlsStart;

/// Everything a product declares and never computes. Start from
/// [`Facts::DEFAULTS`] and name what differs; the registry's tests check that
/// every product gives a name, a scheme, a port and an example URL.
#[derive(Clone, Copy, Debug)]
pub struct Facts {
    /// The name on the command line and in results (`--target NAME`).
    pub name: &'static str,
    /// How the product is called in messages (e.g. "PostgreSQL").
    pub title: &'static str,
    /// Other names accepted for a managed target.
    pub aliases: &'static [&'static str],
    /// URL schemes naming a server of this product; the first is shown in URLs.
    pub schemes: &'static [&'static str],
    /// URL schemes naming a server of this product over TLS (`rediss`).
    pub tls_schemes: &'static [&'static str],
    /// The URL options (`?key=value`) it reads, for messages.
    pub url_options: &'static [&'static str],
    /// Schemes refused with a reason: (scheme, problem, fix).
    pub refused_schemes: &'static [(&'static str, &'static str, &'static str)],
    /// The port a URL without one means.
    pub default_port: u16,
    /// `Some(why)` when URLs may not carry a user or password.
    pub refuses_login: Option<&'static str>,
    /// The environment variable its own client reads a password from
    /// (`PGPASSWORD`), which kvlab reads too for a URL without one.
    pub password_env: Option<&'static str>,
    /// A URL of a running server, for help texts.
    pub example_url: &'static str,
    /// Whether a URL must name a database (`/DBNAME`) and a user.
    pub url_database: bool,
    /// What a URL's optional path names (e.g. a keyspace), for products whose
    /// URLs may have one without naming a database.
    pub url_namespace: Option<&'static str>,
    /// Whether more than one request may be in flight on a connection.
    pub pipelines: bool,
    /// The most requests the protocol lets be in flight on a connection.
    pub max_pipeline: usize,
    /// The consistency levels requests may ask for (`--consistency`), in
    /// lower case; empty when the product has none to choose.
    pub consistency_levels: &'static [&'static str],
    /// The query modes requests may use (`--query-mode`), the default first;
    /// empty when the product has one way to send a request.
    pub query_modes: &'static [&'static str],
    /// Its batch read (`--batch`), in words: the request and what the server
    /// counts of it (`None`: kvlab reads one key per request).
    pub batch_reads: Option<&'static str>,
    /// When its connections turn to TLS (by default from the first byte).
    pub tls_start: TlsStart,
    /// Whether a managed server of it can listen on a unix socket
    /// (`--server-opt socket=on`) and URLs may name one.
    pub unix_sockets: bool,
    /// How a URL names a server of it on a unix socket (`None`: none does).
    pub unix_url_example: Option<&'static str>,
    /// Whether its connections can hear of changed keys (RESP3 `CLIENT
    /// TRACKING`), for a near cache's `--near-invalidation tracking|bcast`.
    pub client_tracking: bool,
    /// Whether keys are spread over nodes by slot
    /// ([`Product::topology`](crate::driver::Product::topology)).
    pub sharded: bool,
    /// Where the server reports its own CPU and memory (`None`: it does not).
    pub usage_report: Option<UsageReport>,
    /// What kvlab needs to run it as a managed server.
    pub server: ServerFacts,
    /// The options kvlab's table takes on it (databases only).
    pub table: TableFacts,
}

impl Facts {
    /// The facts of a product that declares nothing special: no name yet, no
    /// aliases or TLS schemes, pipelining without limit, TLS from the first
    /// byte, unix sockets allowed, one server.
    pub const DEFAULTS: Facts = Facts {
        name: "",
        title: "",
        aliases: &[],
        schemes: &[],
        tls_schemes: &[],
        url_options: &[],
        refused_schemes: &[],
        default_port: 0,
        refuses_login: None,
        password_env: None,
        example_url: "",
        url_database: false,
        url_namespace: None,
        pipelines: true,
        max_pipeline: usize::MAX,
        consistency_levels: &[],
        query_modes: &[],
        batch_reads: None,
        tls_start: TlsStart::Immediate,
        unix_sockets: true,
        unix_url_example: None,
        client_tracking: false,
        sharded: false,
        usage_report: None,
        server: ServerFacts::DEFAULTS,
        table: TableFacts::DEFAULTS,
    };
}

/// What a product declares about its managed server.
#[derive(Clone, Copy, Debug)]
pub struct ServerFacts {
    /// The binary kvlab starts.
    pub binary: &'static str,
    /// The Debian package that installs it.
    pub package: &'static str,
    /// What is missing and how to install it, where the default message
    /// (binary and package) does not say it.
    pub missing: Option<&'static str>,
    /// How long it may take from start to answering its protocol.
    pub start_timeout: Duration,
    /// The system user the server runs as when kvlab runs as root (`None`:
    /// kvlab's own user; such servers refuse `--server-opt os-user`).
    pub system_user: Option<&'static str>,
    /// Its settings that set how many threads serve requests (e.g.
    /// `io-threads`), for warnings about sweeps beyond the machine's cores.
    pub thread_settings: &'static [&'static str],
    /// Whether it keeps its data on disk (a database) rather than in memory
    /// (a cache), for the check that a managed server's data fits.
    pub on_disk: bool,
    /// How many leading numbers of its version name a major version
    /// (`16` of PostgreSQL 16.4, `10.11` of MariaDB 10.11.9).
    pub major_parts: usize,
    /// The settings a decision measured beside a server of this product
    /// copies from it (read-only): those that shape the answer.
    pub copied_beside: &'static [&'static str],
}

impl ServerFacts {
    /// No binary yet; 30 s to start; kvlab's own user; no thread settings;
    /// data in memory.
    pub const DEFAULTS: ServerFacts = ServerFacts {
        binary: "",
        package: "",
        missing: None,
        start_timeout: Duration::from_secs(30),
        system_user: None,
        thread_settings: &[],
        on_disk: false,
        major_parts: 1,
        copied_beside: &[],
    };

    /// What is missing, and how to install it, when the binary is not found.
    pub fn missing(&self) -> String {
        match self.missing {
            Some(m) => m.to_string(),
            None => format!(
                "'{}' is not installed; run `make deps` (or apt-get install {})",
                self.binary, self.package
            ),
        }
    }
}

/// What a database declares about kvlab's table on it.
#[derive(Clone, Copy, Debug)]
pub struct TableFacts {
    /// Which `SchemaOptions` fields apply (by field name, e.g. `unlogged`).
    pub options: &'static [&'static str],
    /// The storage engines kvlab's table may use (`--table-engine`), the
    /// default first; empty when the database has no choice.
    pub engines: &'static [&'static str],
}

impl TableFacts {
    /// No table options.
    pub const DEFAULTS: TableFacts = TableFacts {
        options: &[],
        engines: &[],
    };

    /// Checks the table options against what this database supports.
    pub fn check(&self, schema: &SchemaOptions) -> Result<(), UsageError> {
        match schema.table_engine.as_deref() {
            Some(e) if !self.engines.contains(&e) => Err(UsageError::bad(
                "--table-engine",
                format!("unknown engine '{e}'"),
                format!("use {}", self.engines.join(" or ")),
            )),
            _ => Ok(()),
        }
    }
}
