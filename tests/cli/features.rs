//! One-line errors of the feature flags, tried through the binary as a user
//! would: poolers and query modes, clusters, TLS and unix sockets, sharded
//! runs. (The general flags are in `cli.rs`.)

use crate::common;

use common::each_fails_in_one_line;

#[test]
fn pooler_and_query_mode_errors_are_one_line() {
    each_fails_in_one_line(&[
        (
            "run --target postgres://u:p@127.0.0.1:1/db --pooler pgbouncer",
            "--pooler: kvlab starts a pooler only in front of a server it starts",
        ),
        (
            "run --target postgres --pooler pgbouncer --pooler-opt pool_mode=txn",
            "--pooler-opt: unknown pool_mode 'txn'",
        ),
        (
            "run --target postgres --pooler pgbouncer --pooler-opt poolsize=3",
            "--pooler-opt: unknown pgbouncer setting 'poolsize'",
        ),
        (
            "run --target postgres --pooler-opt pool_mode=session",
            "--pooler-opt: applies only to a pooler kvlab starts",
        ),
        (
            "run --target postgres --pooler odyssey",
            "--pooler: unknown pooler 'odyssey'",
        ),
        (
            "run --target redis --pooler pgbouncer",
            "--pooler: pgbouncer does not stand in front of Redis",
        ),
        (
            "run --target postgres --pooler pgbouncer --pooler-opt pool_mode=transaction --query-mode prepared",
            "--query-mode: named prepared statements do not survive pgbouncer 1.18's pool_mode=transaction",
        ),
        (
            "run --target redis --query-mode simple",
            "--query-mode: applies to memcached or PostgreSQL targets only",
        ),
        (
            "run --target postgres --query-mode fast",
            "--query-mode: unknown mode 'fast'; use prepared|extended|simple",
        ),
    ]);
}

#[test]
fn cluster_errors_are_one_line() {
    each_fails_in_one_line(&[
        (
            "run --target redis-cluster --server-opt shards=0",
            "--server-opt shards=0: use a number of primaries from 1 to 64",
        ),
        (
            "run --target valkey-cluster --server-opt replicas=2",
            "--server-opt replicas=2: use 0 or 1",
        ),
        (
            "run --target redis-cluster --server-opt cluster-enabled=no",
            "cluster-enabled",
        ),
        (
            "run --target postgres --cache redis-cluster",
            "a cache-aside run needs a single cache server",
        ),
    ]);
}

#[test]
fn tls_and_socket_errors_are_one_line() {
    each_fails_in_one_line(&[
        (
            "run --target redis --tls-ca /tmp/ca.pem",
            "a server kvlab starts gets a throwaway CA",
        ),
        (
            "run --target redis://127.0.0.1:1 --tls-cert /x",
            "--tls-key",
        ),
        (
            "run --target rediss://127.0.0.1:1 --tls-ca /nonexistent/ca.pem",
            "--tls-ca /nonexistent/ca.pem: cannot read PEM certificates",
        ),
        ("run --target tarantool --server-opt tls=on", "Enterprise"),
        ("run --target tarantool://127.0.0.1:1 --tls", "Enterprise"),
        (
            "run --target redis --server-opt tls=yes",
            "--server-opt tls=yes: give tls=on or tls=off",
        ),
        (
            "run --target cassandra --server-opt socket=on",
            "listens on TCP only",
        ),
        (
            "run --target postgres://u@h/db?sslmode=prefer",
            "sslmode=prefer falls back to plain",
        ),
        (
            "run --target postgres://u@h/db?ssl=true",
            "unknown URL option 'ssl'",
        ),
        (
            "run --target mysql://u@h/db?ssl-mode=PREFERRED",
            "ssl-mode=PREFERRED falls back to plain",
        ),
        (
            "run --target redis+unix:///nonexistent/kvlab.sock",
            "no unix socket there",
        ),
        (
            "run --target redis+unix:///tmp/x.sock --tls",
            "servers speak plain on a unix socket",
        ),
        (
            "run --target postgres+unix:///tmp/x",
            "postgres://user@/db?host=/dir",
        ),
    ]);
}

#[test]
fn bad_shard_and_start_name_the_flag_and_the_fix() {
    each_fails_in_one_line(&[
        ("run --target redis://127.0.0.1:1 --shard 2/2", "--shard"),
        ("run --target redis://127.0.0.1:1 --shard 0/0", "--shard"),
        ("run --target redis://127.0.0.1:1 --shard x", "--shard"),
        ("run --target redis --shard 0/2", "--shard"),
        (
            "run --target redis://127.0.0.1:1 --shard 0/8 --connections 4",
            "--connections",
        ),
        (
            "run --target redis://127.0.0.1:1 --shard 0/4 --requests 3",
            "--requests",
        ),
        (
            "run --target postgres://a:b@127.0.0.1:1/db --shard 0/2",
            "--no-load",
        ),
        (
            "run --target redis://127.0.0.1:1 --start-at 2020-01-01T00:00:00Z",
            "--start-at",
        ),
        (
            "run --target redis://127.0.0.1:1 --start-at soon",
            "--start-at",
        ),
        (
            "run --target redis://127.0.0.1:1 --start-at 1767225600",
            "--start-at",
        ),
    ]);
}

#[test]
fn rate_shape_errors_are_one_line() {
    each_fails_in_one_line(&[
        (
            "run --target redis --rate-shape sine",
            "--rate-shape: a shape moves a fixed rate; give --rate",
        ),
        (
            "run --target redis --rate 100 --rate-shape wave",
            "--rate-shape: unknown shape 'wave'",
        ),
        (
            "run --target redis --rate 100 --rate-shape sine --requests 100",
            "--rate-shape: sine needs its period=",
        ),
        (
            "run --target redis --rate 100 --rate-shape step:ratio=0.5",
            "--rate-shape: ratio '0.5'",
        ),
        (
            "capacity --target redis --p99-ms 5 --rate-shape sine",
            "--rate/--rate-shape: kvlab capacity chooses the rates itself",
        ),
        (
            "decide --rps 100 --p99-ms 5 --rate-shape wave",
            "--rate-shape: unknown shape 'wave'",
        ),
        (
            "replay /nonexistent --target redis --rate-shape sine",
            "--rate-shape: kvlab replay does not take it",
        ),
    ]);
}
