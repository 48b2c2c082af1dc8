//! URLs of every product: TLS schemes, unix sockets, each product's options
//! (unit tests of `plan::url` by the registry's rules).

use std::path::PathBuf;

use crate::plan::{Endpoint, TargetSpec};
use crate::transport::Verify;

fn ep(s: &str) -> Endpoint {
    s.parse::<TargetSpec>()
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .external
        .unwrap()
}

#[test]
fn tls_schemes_turn_tls_on_and_verify_fully() {
    let e = ep("rediss://:pw@cache.example:6380");
    assert_eq!(e.tls.as_ref().unwrap().verify, Verify::Full);
    assert_eq!((e.host.as_str(), e.port), ("cache.example", 6380));
    assert!(ep("valkeys://h").tls.is_some());
    assert!(ep("redis://h").tls.is_none());
    assert!(e.display_url("rediss").contains(":***@"));
}

#[test]
fn unix_urls_name_the_socket_by_its_path() {
    let e = ep("redis+unix:///run/redis/redis.sock");
    assert_eq!(e.socket.unwrap(), PathBuf::from("/run/redis/redis.sock"));
    let e = ep("redis+unix://:secret@/tmp/r.sock");
    assert_eq!(e.password.unwrap().expose(), "secret");
    assert!(ep("memcached+unix:///tmp/m.sock").socket.is_some());
    assert!(ep("tarantool+unix:///tmp/t.sock").socket.is_some());
    for bad in [
        "cql+unix:///tmp/x",
        "postgres+unix:///tmp/x",
        "rediss+unix:///x",
        "redis+unix://",
    ] {
        assert!(bad.parse::<TargetSpec>().is_err(), "{bad}");
    }
}

#[test]
fn libpq_options_as_libpq_reads_them() {
    let e = ep("postgres://u@/db?host=/var/run/postgresql&port=5433");
    assert_eq!(
        e.socket.unwrap(),
        PathBuf::from("/var/run/postgresql/.s.PGSQL.5433")
    );
    let v = |q: &str| ep(&format!("postgres://u@h/db?{q}")).tls.map(|t| t.verify);
    assert_eq!(v("sslmode=require"), Some(Verify::None));
    assert_eq!(v("sslmode=require&sslrootcert=/ca"), Some(Verify::Chain));
    assert_eq!(v("sslrootcert=/ca&sslmode=require"), Some(Verify::Chain));
    assert_eq!(v("sslmode=verify-ca"), Some(Verify::Chain));
    assert_eq!(v("sslmode=verify-full"), Some(Verify::Full));
    assert_eq!(v("sslmode=disable"), None);
    for bad in [
        "sslmode=prefer",
        "sslmode=nope",
        "port=x",
        "application_name=x",
    ] {
        assert!(
            format!("postgres://u@h/db?{bad}")
                .parse::<TargetSpec>()
                .is_err(),
            "{bad}"
        );
    }
}

#[test]
fn mysql_options_as_its_clients_read_them() {
    let e = ep("mysql://u:p@localhost/db?socket=/run/mysqld/mysqld.sock");
    assert_eq!(e.socket.unwrap(), PathBuf::from("/run/mysqld/mysqld.sock"));
    let v = |q: &str| ep(&format!("mysql://u@h/db?{q}")).tls.map(|t| t.verify);
    assert_eq!(v("ssl-mode=REQUIRED"), Some(Verify::None));
    assert_eq!(v("ssl-mode=verify_ca"), Some(Verify::Chain));
    assert_eq!(v("ssl-mode=VERIFY_IDENTITY&ssl-ca=/ca"), Some(Verify::Full));
    assert_eq!(v("ssl-mode=DISABLED"), None);
    assert!(
        "mysql://u@h/db?ssl-mode=PREFERRED"
            .parse::<TargetSpec>()
            .is_err()
    );
    assert!(
        "redis://h?x=1".parse::<TargetSpec>().is_err(),
        "no options on redis"
    );
}
