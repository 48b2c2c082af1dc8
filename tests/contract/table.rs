//! The contract's one table: what each product in the registry declares for
//! the checks (how its server is started, how to corrupt a value, how it
//! counts), and where it cannot do a check, why. An exhaustive `match` with
//! no wildcard: a product added to `TargetKind` without an entry here does
//! not compile, so the suite fails.

use std::ops::RangeInclusive;
use std::time::Duration;

use kvlab::driver::Connector;
use kvlab::plan::{Endpoint, RunPlan, TargetKind};
use kvlab::products::{cql, mysql, postgres, resp, tarantool};

use crate::common::raw;
use crate::served::Served;

/// What one product declares for the contract.
pub struct Entry {
    /// `--server-opt`s of the one server every check of it runs against
    /// (beside those of [`Password::Asks`]).
    pub opts: &'static [(&'static str, &'static str)],
    /// Set-up on the fresh server before the checks (e.g. an extension).
    pub prepare: fn(&Endpoint),
    /// Plan changes every run of it takes (e.g. a consistency level).
    pub tune: fn(&mut RunPlan),
    /// Whether and how a client must log in.
    pub password: Password,
    /// How its own counters count the load (before the run's window).
    pub load: LoadCount,
    /// What its counters read before kvlab sent anything.
    pub fresh: Fresh,
    /// Whether it counts GET hits and misses itself (not only GETs).
    pub counts_misses: bool,
    /// Writes a wrong 100-byte value under key 3 (`kvlab:3` for a cache).
    pub corrupt: fn(&Endpoint),
    /// A product of another protocol, for the wrong-protocol check.
    pub other: TargetKind,
    /// Its own checks that need the contract's server (a JVM started once).
    pub also: fn(&Served),
}

/// Whether a managed server of the product can ask for a password.
pub enum Password {
    /// Started with `opts` it asks; `set`: the password those options give,
    /// which no result or summary may show (`None`: kvlab's own login);
    /// `without`: what a client with no user and password is told (`{scheme}`:
    /// the product's URL scheme).
    Asks {
        opts: &'static [(&'static str, &'static str)],
        set: Option<&'static str>,
        without: &'static [&'static str],
    },
    /// It cannot, for this reason: the check does not apply.
    Never(&'static str),
}

/// What a fresh server's counters read.
#[derive(Clone, Copy)]
pub enum Fresh {
    /// Zero GETs and SETs.
    Zero,
    /// Some, for this reason.
    Counted(&'static str),
}

/// How the server's own counters count kvlab's load of the keys.
pub enum LoadCount {
    /// One SET per key.
    OneSetPerKey,
    /// As this many write statements (multi-row INSERTs), and this many
    /// reads (kvlab's look-up of its table).
    Statements(RangeInclusive<u64>, u64),
    /// Not in the counters compared, for this reason (reads are).
    Apart(&'static str),
    /// Neither the load nor kvlab's set-up reads are known around the run,
    /// for this reason: only the run's window is compared.
    WindowOnly(&'static str),
}

fn nothing(_: &Endpoint) {}
fn as_is(_: &mut RunPlan) {}
fn no_more(_: &Served) {}

/// The contract's entry of `kind`.
pub fn entry(kind: TargetKind) -> Entry {
    let cache = Entry {
        opts: &[],
        prepare: nothing,
        tune: as_is,
        password: Password::Asks {
            opts: &[("requirepass", "s3cret-pw")],
            set: Some("s3cret-pw"),
            without: &["needs a password", "{scheme}://:PASSWORD@127.0.0.1:"],
        },
        load: LoadCount::OneSetPerKey,
        fresh: Fresh::Zero,
        counts_misses: true,
        corrupt: resp_set,
        other: TargetKind::Memcached,
        also: no_more,
    };
    let database = Entry {
        password: Password::Asks {
            opts: &[],
            set: None,
            without: &[],
        },
        load: LoadCount::Apart("loaded by its own loader before the window"),
        counts_misses: false,
        other: TargetKind::Redis,
        ..cache
    };
    match kind {
        TargetKind::Redis | TargetKind::Valkey => cache,
        TargetKind::RedisCluster | TargetKind::ValkeyCluster => Entry {
            corrupt: cluster_set,
            ..cache
        },
        TargetKind::Memcached => Entry {
            password: Password::Never(
                "a managed memcached has no SASL, and memcached URLs refuse a login",
            ),
            corrupt: memcached_set,
            other: TargetKind::Redis,
            ..cache
        },
        TargetKind::Postgres => Entry {
            opts: &[("shared_preload_libraries", "pg_stat_statements")],
            prepare: |e| {
                pg(e, "CREATE EXTENSION pg_stat_statements");
            },
            password: Password::Never(
                "a managed PostgreSQL trusts loopback logins (initdb --auth=trust)",
            ),
            corrupt: |e| {
                pg(
                    e,
                    "UPDATE kvlab_kv SET v = convert_to(repeat('x', 100), 'UTF8') WHERE k = 3",
                );
            },
            ..database
        },
        TargetKind::Mariadb => Entry {
            fresh: Fresh::Counted("SHOW GLOBAL STATUS counts the server's own set-up statements"),
            load: LoadCount::Statements(2..=8, 1),
            corrupt: |e| {
                let c = Connector::new(TargetKind::Mariadb, e).unwrap();
                mysql::open(&c, Duration::from_secs(5))
                    .unwrap()
                    .query("UPDATE kvlab_kv SET v = REPEAT('x', 100) WHERE k = 3")
                    .unwrap();
            },
            ..database
        },
        TargetKind::Tarantool => Entry {
            fresh: Fresh::Counted("box.stat() counts the start-up script's requests"),
            load: LoadCount::WindowOnly(
                "box.stat() also counts kvlab's set-up reads of its space, per connection",
            ),
            password: Password::Asks {
                opts: &[("password", "s3cret-tt")],
                set: Some("s3cret-tt"),
                without: &[],
            },
            corrupt: |e| {
                let c = Connector::new(TargetKind::Tarantool, e).unwrap();
                tarantool::open(&c, Duration::from_secs(5))
                    .unwrap()
                    .eval(
                        "box.space.kvlab_kv:replace{3, string.rep('x', 100)}",
                        vec![],
                    )
                    .unwrap();
            },
            ..database
        },
        TargetKind::Cassandra => Entry {
            // The checks run over TLS: kvlab's throwaway CA; the node's
            // `optional` native port serves plain clients too.
            opts: &[("tls", "on")],
            tune: |p| {
                p.target.consistency = Some(
                    kvlab::plan::consistency_of(p.target.kind, "QUORUM", "--consistency").unwrap(),
                )
            },
            password: Password::Asks {
                opts: &[("authenticator", "PasswordAuthenticator")],
                set: None,
                without: &["needs a user and password"],
            },
            corrupt: |e| {
                let bad = "78".repeat(100);
                let c = Connector::new(TargetKind::Cassandra, e).unwrap();
                cql::open(&c, Duration::from_secs(10))
                    .unwrap()
                    .query(&format!(
                        "INSERT INTO kvlab.kvlab_kv (k, v) VALUES (3, 0x{bad})"
                    ))
                    .unwrap();
            },
            also: crate::cassandra::checks,
            ..database
        },
    }
}

fn pg(e: &Endpoint, q: &str) -> Vec<Vec<Option<String>>> {
    let c = Connector::new(TargetKind::Postgres, e).unwrap();
    postgres::open(&c, Duration::from_secs(5))
        .unwrap()
        .query(q)
        .unwrap()
}

/// `AUTH` (when `e` has a password) and `SET kvlab:3 xxx…` in one request
/// to `addr`; the reply of the SET.
fn resp_set_at(e: &Endpoint, port: u16) -> Vec<u8> {
    let mut req = Vec::new();
    if let Some(pw) = &e.password {
        resp::encode_command(&[b"AUTH", pw.expose().as_bytes()], &mut req);
    }
    resp::encode_command(&[b"SET", b"kvlab:3", &[b'x'; 100]], &mut req);
    let auth = e.password.is_some();
    let reply = raw(port, &req, |b| {
        let first = if auth {
            resp::frame_len(b).ok().flatten()
        } else {
            Some(0)
        };
        first.is_some_and(|n| resp::frame_len(&b[n..]).ok().flatten().is_some())
    });
    let n = if auth {
        resp::frame_len(&reply).unwrap().unwrap()
    } else {
        0
    };
    reply[n..].to_vec()
}

fn resp_set(e: &Endpoint) {
    assert_eq!(resp_set_at(e, e.port), b"+OK\r\n");
}

/// Every primary is asked; the one serving the key's slot stores it.
fn cluster_set(e: &Endpoint) {
    let kind = TargetKind::RedisCluster;
    let t = Connector::new(kind, e)
        .unwrap()
        .topology()
        .unwrap()
        .unwrap();
    let stored = t
        .nodes
        .iter()
        .filter(|n| resp_set_at(e, n.port()) == b"+OK\r\n")
        .count();
    assert_eq!(stored, 1, "one node serves kvlab:3");
}

fn memcached_set(e: &Endpoint) {
    let mut req = b"set kvlab:3 0 0 100\r\n".to_vec();
    req.extend_from_slice(&[b'x'; 100]);
    req.extend_from_slice(b"\r\n");
    let reply = raw(e.port, &req, |b| b.ends_with(b"\r\n"));
    assert_eq!(reply, b"STORED\r\n");
}
