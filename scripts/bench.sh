#!/usr/bin/env bash
# `make bench`: client efficiency of kvlab beside redis-benchmark (and
# memtier_benchmark when one is on PATH or named by MEMTIER=…) against the same
# kvlab-managed server, interleaved A B A B A B so machine drift hits all tools
# alike. Prints requests/s and client CPU µs per request (user+sys of the whole
# client process / requests), medians of ROUNDS runs.
#
# Databases (BENCH_SQL=0 skips them): kvlab beside pgbench -S -M prepared and
# sysbench oltp_point_select on managed PostgreSQL and MariaDB, 50 connections.
# Tarantool and Cassandra (BENCH_CQL=0 skips it; NCQL requests per run): kvlab
# alone, no peer tool for them being packaged here.
# Redis Cluster (BENCH_CLUSTER=0 skips it): kvlab's slot routing beside
# redis-benchmark --cluster on a kvlab-managed cluster of 3 primaries.
# TLS (BENCH_TLS=0 skips it): kvlab (rustls) beside redis-benchmark --tls
# (OpenSSL) on a kvlab-managed redis speaking TLS only, both verifying its CA.
# Single caches (BENCH_CACHES=0 skips them): redis, memcached, tarantool.
# Batch reads (BENCH_BATCH=0 skips them): MGET of 10 keys on redis.
# Trace replay (BENCH_REPLAY=0 skips it): kvlab replay beside kvlab run of the
# same mix at the same rate, on redis.
# Live metrics (BENCH_METRICS=0 skips them): kvlab with and without --metrics.
# Open loop (BENCH_RATE=0 skips it): kvlab at 50% and 80% of its closed-loop
# throughput beside that closed loop, on redis (pipeline 1 and 16) and on
# PostgreSQL beside pgbench -R at the same rates.
#
# A near cache (BENCH_NEAR=0 skips it): kvlab's client CPU per request with a
# near cache answering every read beside the remote cache's hit path.
# Arrivals and round trips (BENCH_TIMING=0 skips it): on redis at RATE (20k)
# req/s, p99 latency and p99 send error of poisson and uniform arrivals (and of
# KVLAB_BASE at the same rate, e.g. a kvlab that batched its sends); then
# client CPU per request at that rate with and without --rtt 1 (200
# connections, so the round trip's requests in flight fit).
#
# The engine's I/O interfaces (BENCH_IO=0 skips them): --io epoll beside
# --io uring (and valkey-lab at pipeline 1), closed loop, fixed rates, --rtt 1
# and 10,000 connections, on redis.
#
# Workload: 50 connections, 1M keys x 256 B, GET only, pipeline 1 and 16; every
# client on one thread (redis-benchmark and memtier -t 1 are single-threaded).
#
# KVLAB_BASE=/path/to/an/older/kvlab adds that binary's runs right after each
# kvlab run (rows "base…"), to show a change of kvlab's own figures, interleaved.
set -euo pipefail
cd "$(dirname "$0")/.."
KVLAB=${KVLAB:-target/release/kvlab}
KVLAB_BASE=${KVLAB_BASE:-}
ROUNDS=${ROUNDS:-3}
KEYS=${KEYS:-1000000}
N1=${N1:-400000}      # requests per run at pipeline 1
N16=${N16:-3000000}   # requests per run at pipeline 16
MEMTIER=${MEMTIER:-$(command -v memtier_benchmark || true)}
WORK=$(mktemp -d)
# `serve` runs in a command substitution (a subshell): the pids of the
# `kvlab serve` processes go to a file, which the exit trap reads.
cleanup() {
  if [ -f "$WORK/pids" ]; then
    while read -r p; do kill -TERM "$p" 2>/dev/null || true; done < "$WORK/pids"
    # Each stops its server before it exits; give them up to 5 s.
    for _ in $(seq 50); do
      alive=0
      while read -r p; do [ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && alive=1; done < "$WORK/pids"
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

serve() { # kind [opts...] -> URL on stdout; the server is kvlab-managed and stopped at exit
  "$KVLAB" serve --target "$@" > "$WORK/$1.url" 2> "$WORK/$1.log" &
  echo $! >> "$WORK/pids"
  for _ in $(seq 900); do [ -s "$WORK/$1.url" ] && break; sleep 0.1; done
  cat "$WORK/$1.url"
}

# cpu_of CMD...: runs CMD, prints "user+sys elapsed" seconds of it and its children.
cpu_of() {
  local TIMEFORMAT='%U %S %R' t
  t=$( { time "$@" > "$WORK/last.out" 2>&1; } 2>&1 )
  awk '{printf "%.3f %.3f\n", $1 + $2, $3}' <<< "$t"
}

record() { # tool pipeline requests "cpu wall"
  read -r cpu wall <<< "$4"
  awk -v t="$1" -v p="$2" -v n="$3" -v c="$cpu" -v w="$wall" \
    'BEGIN { printf "%s P%s %.0f %.3f\n", t, p, n / w, c * 1e6 / n }' >> "$WORK/rows"
}

kvlab_run() { # url pipeline requests [extra...]
  local url=$1 p=$2 n=$3; shift 3
  "${BIN:-$KVLAB}" run --target "$url" --no-load --warmup 0 --requests "$n" --connections "${CONNS:-50}" --threads 1 --pipeline "$p" "$@"
}

# kvlab_rec name pipeline requests url [extra...]: records kvlab's run, then the
# baseline binary's (KVLAB_BASE) right after it.
kvlab_rec() {
  local name=$1 p=$2 n=$3; shift 3
  record "$name" "$p" "$n" "$(cpu_of kvlab_run "$1" "$p" "$n" "${@:2}")"
  if [ -n "$KVLAB_BASE" ]; then
    record "base${name#kvlab}" "$p" "$n" "$(BIN=$KVLAB_BASE cpu_of kvlab_run "$1" "$p" "$n" "${@:2}")"
  fi
}

# Room for the 10,000 connections of the I/O rows (BENCH_IO).
REDIS=$(serve redis --server-opt maxclients=$((${IO_CONNS:-10000} + 1000)))
PORT=${REDIS##*:}

# BENCH_CACHES=0 skips the single caches (loading, GET rounds, mixed load), e.g.
# to run the open loop alone: BENCH_CACHES=0 BENCH_CLUSTER=0 BENCH_TLS=0 BENCH_CQL=0.
if [ "${BENCH_CACHES:-1}" = 1 ]; then
# Loading: kvlab's pipelined load vs redis-cli --pipe, each into an empty server.
echo "bench: generating $KEYS SET commands for redis-cli --pipe"
VAL=$(head -c 256 /dev/zero | tr '\0' 'v')
awk -v n="$KEYS" -v v="$VAL" 'BEGIN { for (i = 0; i < n; i++) { k = "key:" i; printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$256\r\n%s\r\n", length(k), k, v } }' > "$WORK/pipe.resp"
for round in $(seq "$ROUNDS"); do
  echo "bench: round $round, loading $KEYS keys"
  redis-cli -p "$PORT" flushall > /dev/null
  read -r _ wall <<< "$(cpu_of "$KVLAB" run --target "$REDIS" --keys "$KEYS" --requests 1 --warmup 0)"
  echo "load-kvlab - $(awk -v n="$KEYS" -v w="$wall" 'BEGIN { printf "%.0f", n / w }') -" >> "$WORK/rows"
  redis-cli -p "$PORT" flushall > /dev/null
  read -r _ wall <<< "$(cpu_of sh -c "redis-cli -p $PORT --pipe < $WORK/pipe.resp")"
  echo "load-redis-cli-pipe - $(awk -v n="$KEYS" -v w="$wall" 'BEGIN { printf "%.0f", n / w }') -" >> "$WORK/rows"
done
rm -f "$WORK/pipe.resp"
# memtier_fill port protocol: writes every key memtier will read.
memtier_fill() {
  [ -n "$MEMTIER" ] || return 0
  "$MEMTIER" -p "$1" --protocol="$2" --ratio=1:0 --key-pattern=P:P --key-maximum="$KEYS" \
    -n allkeys -d 256 -c 10 -t 1 --pipeline=64 --hide-histogram > /dev/null 2>&1 || true
}

# rounds name url protocol: the interleaved GET rounds against one server.
rounds() {
  local name=$1 url=$2 proto=$3 port=${2##*:} suffix P N per
  suffix=$([ "$name" = redis ] || echo "-$name")
  for round in $(seq "$ROUNDS"); do
    for P in 1 16; do
      N=$([ "$P" = 1 ] && echo "$N1" || echo "$N16")
      echo "bench: round $round, $name, pipeline $P"
      if [ "$name" = redis ]; then
        record redis-benchmark "$P" "$N" "$(cpu_of redis-benchmark -p "$port" -t get -n "$N" -r "$KEYS" -d 256 -c 50 -P "$P" -q)"
      fi
      kvlab_rec "kvlab$suffix" "$P" "$N" "$url" --keys "$KEYS"
      if [ -n "$MEMTIER" ]; then
        per=$((N / 50))
        record "memtier$suffix" "$P" $((per * 50)) "$(cpu_of "$MEMTIER" -p "$port" --protocol="$proto" --ratio=0:1 \
          --key-pattern=R:R --distinct-client-seed --key-maximum="$KEYS" -d 256 -c 50 -t 1 --pipeline="$P" -n "$per" --hide-histogram)"
      fi
    done
  done
}

echo "bench: managed redis at $REDIS; loading $KEYS keys for kvlab, redis-benchmark and memtier"
redis-cli -p "$PORT" flushall > /dev/null
"$KVLAB" run --target "$REDIS" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
redis-benchmark -p "$PORT" -t set -n $((KEYS * 5)) -r "$KEYS" -d 256 -P 64 -q > /dev/null
memtier_fill "$PORT" redis
rounds redis "$REDIS" redis

# Mixed load: SET:GET 1:4 at pipeline 1. kvlab tracks every written version
# (stale-read detection); memtier writes fixed data and checks nothing.
for round in $(seq "$ROUNDS"); do
  echo "bench: round $round, redis SET:GET 1:4"
  kvlab_rec "kvlab-1:4" 1 "$N1" "$REDIS" --keys "$KEYS" --ratio 1:4
  if [ -n "$MEMTIER" ]; then
    per=$((N1 / 50))
    record "memtier-1:4" 1 $((per * 50)) "$(cpu_of "$MEMTIER" -p "$PORT" --protocol=redis --ratio=1:4 \
      --key-pattern=R:R --distinct-client-seed --key-maximum="$KEYS" -d 256 -c 50 -t 1 --pipeline=1 -n "$per" --hide-histogram)"
  fi
done
else
  "$KVLAB" run --target "$REDIS" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
fi

# Batch reads (BENCH_BATCH=0 skips them): MGET of 10 random keys, kvlab
# (--batch 10, every value verified) beside redis-benchmark running the
# command MGET of 10 key:__rand_int__ (each drawn on its own) and memtier
# (--command "mget" of 10 __key__), requests of 10 keys each.
if [ "${BENCH_BATCH:-1}" = 1 ]; then
  redis-benchmark -p "$PORT" -t set -n $((KEYS * 5)) -r "$KEYS" -d 256 -P 64 -q > /dev/null
  MG="mget$(printf ' __key__%.0s' $(seq 10))"
  for round in $(seq "$ROUNDS"); do
    for P in 1 16; do
      N=$(( $([ "$P" = 1 ] && echo "$N1" || echo "$N16") / 10 ))
      echo "bench: round $round, redis MGET of 10 keys, pipeline $P"
      # shellcheck disable=SC2046
      record redis-benchmark-mget "$P" "$N" "$(cpu_of redis-benchmark -p "$PORT" -n "$N" -r "$KEYS" -c 50 -P "$P" -q MGET $(printf 'key:__rand_int__ %.0s' $(seq 10)))"
      kvlab_rec kvlab-mget "$P" "$N" "$REDIS" --keys "$KEYS" --batch 10
      if [ -n "$MEMTIER" ]; then
        per=$((N / 50))
        record memtier-mget "$P" $((per * 50)) "$(cpu_of "$MEMTIER" -p "$PORT" --protocol=redis --command="$MG" \
          --command-key-pattern=R --distinct-client-seed --key-prefix=kvlab: --key-maximum="$KEYS" -c 50 -t 1 --pipeline="$P" -n "$per" --hide-histogram)"
      fi
    done
  done
fi

# Redis Cluster, 3 primaries (kvlab-managed). redis-benchmark --cluster gives
# each client one node and tags its keys with that node's slot; kvlab's 50
# clients each reach every node and route each key by its slot. Both read keys
# they loaded: kvlab its own, redis-benchmark 15 x KEYS random SETs over its
# 3 x KEYS tagged keys (~99% present).
if [ "${BENCH_CLUSTER:-1}" = 1 ]; then
  CL=$(serve redis-cluster)
  CLPORT=${CL##*:}
  echo "bench: managed redis-cluster at $CL; loading $KEYS keys for kvlab and redis-benchmark"
  "$KVLAB" run --target "$CL" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
  redis-benchmark --cluster -p "$CLPORT" -t set -n $((KEYS * 15)) -r "$KEYS" -d 256 -P 64 -q > /dev/null
  for round in $(seq "$ROUNDS"); do
    for P in 1 16; do
      N=$([ "$P" = 1 ] && echo "$N1" || echo "$N16")
      echo "bench: round $round, redis-cluster, pipeline $P"
      record redis-benchmark-cluster "$P" "$N" "$(cpu_of redis-benchmark --cluster -p "$CLPORT" -t get -n "$N" -r "$KEYS" -d 256 -c 50 -P "$P" -q)"
      kvlab_rec kvlab-cluster "$P" "$N" "$CL" --keys "$KEYS"
    done
  done
fi

# TLS: a second managed redis, TLS only (--server-opt tls=on, throwaway CA).
if [ "${BENCH_TLS:-1}" = 1 ]; then
  "$KVLAB" serve --target redis --server-opt tls=on > "$WORK/tls.url" 2> "$WORK/tls.log" &
  echo $! >> "$WORK/pids"
  for _ in $(seq 900); do [ -s "$WORK/tls.url" ] && break; sleep 0.1; done
  TLSURL=$(cat "$WORK/tls.url")
  TLSPORT=${TLSURL##*:}
  CA=$(sed -n 's/.*--tls-ca \([^ ]*\).*/\1/p' "$WORK/tls.log")
  echo "bench: managed redis with TLS at $TLSURL (CA $CA); loading $KEYS keys"
  "$KVLAB" run --target "$TLSURL" --tls-ca "$CA" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
  redis-benchmark --tls --cacert "$CA" -p "$TLSPORT" -t set -n $((KEYS * 5)) -r "$KEYS" -d 256 -P 64 -q > /dev/null
  for round in $(seq "$ROUNDS"); do
    for P in 1 16; do
      N=$([ "$P" = 1 ] && echo "$N1" || echo "$N16")
      echo "bench: round $round, redis TLS, pipeline $P"
      record redis-benchmark-tls "$P" "$N" "$(cpu_of redis-benchmark --tls --cacert "$CA" -p "$TLSPORT" -t get -n "$N" -r "$KEYS" -d 256 -c 50 -P "$P" -q)"
      kvlab_rec kvlab-tls "$P" "$N" "$TLSURL" --keys "$KEYS" --tls-ca "$CA"
    done
  done
fi

if [ "${BENCH_CACHES:-1}" = 1 ]; then
  MC=$(serve memcached)
  echo "bench: managed memcached at $MC; loading $KEYS keys"
  "$KVLAB" run --target "$MC" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
  memtier_fill "${MC##*:}" memcache_text
  rounds memcached "$MC" memcache_text
fi

# Tarantool (memtx, IPROTO): no peer tool speaks it here, so kvlab alone, in the
# same rounds as the caches' figures above (redis is the yardstick).
if [ "${BENCH_CACHES:-1}" = 1 ] && command -v tarantool > /dev/null; then
  TT=$(serve tarantool)
  echo "bench: managed tarantool at $TT; loading $KEYS keys"
  "$KVLAB" run --target "$TT" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
  for round in $(seq "$ROUNDS"); do
    for P in 1 16; do
      N=$([ "$P" = 1 ] && echo "$N1" || echo "$N16")
      echo "bench: round $round, tarantool, pipeline $P"
      record kvlab-tarantool "$P" "$N" "$(cpu_of kvlab_run "$TT" "$P" "$N" --keys "$KEYS")"
    done
  done
fi

# Cassandra (CQL v4, a managed node from the jars `make deps` fetched): no peer
# tool is packaged here (cassandra-stress ships only in Cassandra's tarball), so
# kvlab alone, 50 connections, read-only, pipeline 1 and 16.
if [ "${BENCH_CQL:-1}" = 1 ]; then
  NCQL=${NCQL:-60000}
  CQ=$(serve cassandra)
  echo "bench: managed cassandra at $CQ; loading $KEYS keys"
  "$KVLAB" run --target "$CQ" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
  for round in $(seq "$ROUNDS"); do
    for P in 1 16; do
      echo "bench: round $round, cassandra, pipeline $P"
      record kvlab-cassandra "$P" "$NCQL" "$(cpu_of kvlab_run "$CQ" "$P" "$NCQL" --keys "$KEYS")"
    done
  done
fi

# Databases: kvlab beside pgbench -S -M prepared and sysbench oltp_point_select,
# against the same kvlab-managed servers, 50 connections, 1M rows, point reads.
if [ "${BENCH_SQL:-1}" = 1 ]; then
  NSQL=${NSQL:-200000}
  PG=$(serve postgres)
  PGPORT=${PG##*:}; PGPORT=${PGPORT%%/*}
  echo "bench: managed postgres at $PG; loading kvlab_kv, pgbench_accounts and sbtest1 ($KEYS rows each)"
  "$KVLAB" run --target "$PG" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
  pgbench -h 127.0.0.1 -p "$PGPORT" -U postgres -i -q -s $((KEYS / 100000)) postgres > /dev/null 2>&1
  SB_PG=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$PGPORT" --pgsql-user=postgres --pgsql-db=postgres --tables=1 --table-size="$KEYS")
  sysbench oltp_point_select "${SB_PG[@]}" prepare > /dev/null 2>&1
  for round in $(seq "$ROUNDS"); do
    echo "bench: round $round, postgres"
    record pgbench-postgres 1 "$NSQL" "$(cpu_of pgbench -h 127.0.0.1 -p "$PGPORT" -U postgres -S -M prepared -c 50 -j 1 -t $((NSQL / 50)) postgres)"
    kvlab_rec kvlab-postgres 1 "$NSQL" "$PG" --keys "$KEYS"
    record sysbench-postgres 1 "$NSQL" "$(cpu_of sysbench oltp_point_select "${SB_PG[@]}" --threads=50 --events="$NSQL" --time=0 --point-selects=1 run)"
  done

  MY=$(serve mariadb)
  MYPORT=${MY##*:}; MYPORT=${MYPORT%%/*}
  echo "bench: managed mariadb at ${MY/:kvlab@/:***@}; loading kvlab_kv and sbtest1 ($KEYS rows each)"
  "$KVLAB" run --target "$MY" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null
  SB_MY=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$MYPORT" --mysql-user=kvlab --mysql-password=kvlab --mysql-db=kvlab --tables=1 --table-size="$KEYS")
  sysbench oltp_point_select "${SB_MY[@]}" prepare > /dev/null 2>&1
  for round in $(seq "$ROUNDS"); do
    echo "bench: round $round, mariadb"
    kvlab_rec kvlab-mariadb 1 "$NSQL" "$MY" --keys "$KEYS"
    record sysbench-mariadb 1 "$NSQL" "$(cpu_of sysbench oltp_point_select "${SB_MY[@]}" --threads=50 --events="$NSQL" --time=0 --point-selects=1 run)"
  done
fi

# Trace replay (BENCH_REPLAY=0 skips it): kvlab replay of a generated trace
# (REPLAY_RPS lines a second for REPLAY_S seconds, SET:GET 1:4 over KEYS keys,
# 256-byte values) beside kvlab run of the same mix at the same fixed rate, on
# redis, interleaved. The replay's CPU includes its read of the whole trace
# before the run and the reader thread that streams it.
if [ "${BENCH_REPLAY:-1}" = 1 ]; then
  REDIS=${REDIS:-$(serve redis)}
  RR=${REPLAY_RPS:-20000}; RS=${REPLAY_S:-10}
  awk -v n=$((RR * RS)) -v r="$RR" -v k="$KEYS" 'BEGIN { srand(7); for (i = 0; i < n; i++)
    printf "%.6f,key%d,10,256,%d,%s,0\n", i / r, int(rand() * k), i % 50, (rand() < 0.2 ? "set" : "get") }' > "$WORK/trace.csv"
  for round in $(seq "$ROUNDS"); do
    echo "bench: round $round, redis replay of a 1:4 trace at $RR req/s beside a run at that rate"
    record kvlab-replay 1 $((RR * RS)) "$(cpu_of "$KVLAB" replay "$WORK/trace.csv" --target "$REDIS" --no-load --keys "$KEYS" --connections 50 --threads 1)"
    record kvlab-rate-1:4 1 $((RR * RS)) "$(cpu_of kvlab_run "$REDIS" 1 $((RR * RS)) --keys "$KEYS" --ratio 1:4 --rate "$RR")"
  done
fi

# Live metrics (BENCH_METRICS=0 skips them): kvlab on redis with and without
# --metrics, the endpoint scraped every second (a Prometheus stand-in),
# interleaved; client CPU per request is the figure.
if [ "${BENCH_METRICS:-1}" = 1 ]; then
  REDIS=${REDIS:-$(serve redis)}
  MP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  ( while :; do curl -s "127.0.0.1:$MP/metrics" > /dev/null || true; sleep 1; done ) &
  SCRAPER=$!
  "$KVLAB" run --target "$REDIS" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null 2>&1
  memtier_fill "$PORT" redis
  for round in $(seq "$ROUNDS"); do
    echo "bench: round $round, redis with and without --metrics (scraped every second)"
    kvlab_rec kvlab-metrics-off 1 "$N1" "$REDIS" --keys "$KEYS"
    # Not with KVLAB_BASE: an older kvlab may not know --metrics.
    record kvlab-metrics-on 1 "$N1" "$(cpu_of kvlab_run "$REDIS" 1 "$N1" --keys "$KEYS" --metrics "127.0.0.1:$MP")"
  done
  kill "$SCRAPER" 2>/dev/null || true
fi

# Open loop at a fixed rate beside the closed loop (BENCH_RATE=0 skips it):
# each round measures kvlab's closed loop, then kvlab at 50% and 80% of the
# throughput it just reached, interleaved; client CPU per request is the figure.
# On PostgreSQL pgbench -R paces the same rates beside it.
# rate_rounds name url pipeline requests [peer]: the rows kvlab-NAME-closed,
# kvlab-NAME-closed2 and kvlab-NAME-rate-same (a closed loop on 2 connections and
# the open loop at its throughput), kvlab-NAME-rate50, kvlab-NAME-rate80 (and
# pgbench-rate50/80 with peer=pgbench).
rate_rounds() {
  local name=$1 url=$2 p=$3 n=$4 peer=${5:-} round rps pct rate out
  for round in $(seq "$ROUNDS"); do
    echo "bench: round $round, open loop vs closed loop, $name, pipeline $p"
    out=$(cpu_of kvlab_run "$url" "$p" "$n" --keys "$KEYS")
    record "kvlab-$name-closed" "$p" "$n" "$out"
    rps=$(awk '/throughput/ { gsub(",", "", $2); print $2; exit }' "$WORK/last.out")
    # The same throughput both ways: a closed loop slowed by having only 2
    # connections (SAME_CONNS), then the open loop (50) at the rate it reached.
    out=$(CONNS=${SAME_CONNS:-2} cpu_of kvlab_run "$url" "$p" $((n / 4)) --keys "$KEYS")
    record "kvlab-$name-closed2" "$p" $((n / 4)) "$out"
    rate=$(awk '/throughput/ { gsub(",", "", $2); print int($2); exit }' "$WORK/last.out")
    record "kvlab-$name-rate-same" "$p" $((n / 4)) "$(cpu_of kvlab_run "$url" "$p" $((n / 4)) --keys "$KEYS" --rate "$rate")"
    for pct in 20 50 80; do
      rate=$((rps * pct / 100))
      record "kvlab-$name-rate$pct" "$p" "$n" "$(cpu_of kvlab_run "$url" "$p" "$n" --keys "$KEYS" --rate "$rate")"
      if [ "$peer" = pgbench ]; then
        out=$(cpu_of pgbench -h 127.0.0.1 -p "$PGPORT" -U postgres -S -M prepared -c 50 -j 1 -R "$rate" -T $(( (n + rate - 1) / rate )) postgres)
        record "pgbench-$name-rate$pct" "$p" "$(awk '/actually processed/ { print $NF }' "$WORK/last.out")" "$out"
      fi
    done
  done
}

if [ "${BENCH_RATE:-1}" = 1 ]; then
  REDIS=${REDIS:-$(serve redis)}
  rate_rounds redis "$REDIS" 1 "$N1"
  rate_rounds redis "$REDIS" 16 "$N16"
  if [ "${BENCH_SQL:-1}" = 1 ]; then
    # One connection: 50 PostgreSQL backends on 2 cores carry less than 2 do,
    # so the paced 50 would not reach a 2-connection closed loop's rate.
    SAME_CONNS=1 rate_rounds postgres "$PG" 1 "$NSQL" pgbench
  fi
fi

# lat name: the p99 latency and p99 send error of the last kvlab run.
lat() {
  awk -v t="$1" '
    /latency µs/ { for (i = 1; i <= NF; i++) if ($i == "p99") { l = $(i + 1); gsub(",", "", l) } }
    /send error/ { if (match($0, /send error p50 [0-9.,]+ µs, p99 [0-9.,]+/)) { e = substr($0, RSTART, RLENGTH); sub(/.*p99 /, "", e); gsub(",", "", e) } }
    END { printf "%s %s %s\n", t, (l == "" ? "-" : l), (e == "" ? "-" : e) }' "$WORK/last.out" >> "$WORK/lat"
}

if [ "${BENCH_TIMING:-1}" = 1 ]; then
  REDIS=${REDIS:-$(serve redis)}
  RATE=${RATE:-20000}
  NT=$((RATE * ${TIMING_SECS:-10}))
  for round in $(seq "$ROUNDS"); do
    echo "bench: round $round, arrivals and round trips at $RATE req/s, redis"
    for a in poisson uniform; do
      record "kvlab-$a" 1 "$NT" "$(cpu_of kvlab_run "$REDIS" 1 "$NT" --keys "$KEYS" --rate "$RATE" --arrivals "$a")"
      lat "kvlab-$a"
    done
    if [ -n "$KVLAB_BASE" ]; then
      record "base-rate" 1 "$NT" "$(BIN=$KVLAB_BASE cpu_of kvlab_run "$REDIS" 1 "$NT" --keys "$KEYS" --rate "$RATE")"
      lat "base-rate"
    fi
    for rtt in 0 1; do
      extra=()
      [ "$rtt" = 0 ] || extra=(--rtt "$rtt")
      record "kvlab-rtt$rtt" 1 "$NT" "$(CONNS=200 cpu_of kvlab_run "$REDIS" 1 "$NT" --keys "$KEYS" --rate "$RATE" "${extra[@]}")"
      lat "kvlab-rtt$rtt"
    done
  done
fi

# A near cache's hit path beside the remote cache's (BENCH_NEAR=0 skips it):
# kvlab on redis, read-only over NEAR_KEYS keys, one thread, closed loop,
# DURATION_NEAR seconds, with and without --near-cache holding every key,
# interleaved; the client CPU per request of the measured window (kvlab's own
# figure: process start, connections and the near cache's first misses are
# outside it) is the figure.
own() { # name: records kvlab's own throughput and client CPU per request of the last run
  awk -v t="$1" '
    /^  throughput/ { r = $2; gsub(",", "", r) }
    /^  client CPU/ { for (i = 1; i <= NF; i++) if ($i ~ /µs\/request/) { c = $(i - 1); gsub(",", "", c) } }
    END { if (r != "" && c != "") printf "%s P1 %s %s\n", t, r, c }' "$WORK/last.out" >> "$WORK/rows"
  # What waiting cost: wake-ups and context switches per request, the send
  # slack and the p99 send error (a fixed rate's).
  awk -v t="$1" '
    /^  client waits/ { w = $3; x = $6 }
    /sends at most/ { if (match($0, /at most [0-9.,]+ µs early/)) { s = substr($0, RSTART + 8, RLENGTH - 8); sub(/ .*/, "", s); gsub(",", "", s) } }
    /send error/ { if (match($0, /send error p50 [0-9.,]+ µs, p99 [0-9.,]+/)) { e = substr($0, RSTART, RLENGTH); sub(/.*p99 /, "", e); gsub(",", "", e) } }
    END { if (w != "") printf "%s %s %s %s %s\n", t, w, x, (s == "" ? "-" : s), (e == "" ? "-" : e) }' "$WORK/last.out" >> "$WORK/waits"
}
if [ "${BENCH_NEAR:-1}" = 1 ]; then
  REDIS=${REDIS:-$(serve redis)}
  NK=${NEAR_KEYS:-10000}
  "$KVLAB" run --target "$REDIS" --keys "$NK" --requests 1 --warmup 0 > /dev/null 2>&1
  for round in $(seq "$ROUNDS"); do
    echo "bench: round $round, redis read-only over $NK keys with and without a near cache"
    for near in off on; do
      extra=()
      [ "$near" = off ] || extra=(--near-cache $((NK * 2)))
      cpu_of "$KVLAB" run --target "$REDIS" --no-load --keys "$NK" --ratio 0:1 --connections "${CONNS:-50}" \
        --threads 1 --duration "${DURATION_NEAR:-5}" --warmup 1 "${extra[@]}" > /dev/null
      own "kvlab-near-$near"
    done
  done
fi

# The engine's two I/O interfaces (BENCH_IO=0 skips them): kvlab --io epoll
# and --io uring on redis, interleaved, one thread, read-only. Closed loop at
# pipeline 1 and 16 over N1/N16 requests, client CPU of the whole process per
# request (as every peer's), with valkey-lab (io_uring; VALKEY_LAB=path, or on
# PATH; built outside the repository) beside them at pipeline 1. Then kvlab's
# own figures of the measured window (IO_SECS s each): the closed loop at 50
# connections, at a fixed rate of half of what that closed loop reached, at
# RATE (20k) req/s with and without --rtt 1 (200 connections), and a closed
# loop on IO_CONNS (10,000) connections; the half rate also with
# --send-slack 0 (each request within 20 µs of its time). Each of these also
# gives its wake-ups and context switches per request, its send slack and its
# p99 send error (the table "what waiting cost"). With memtier_benchmark, the
# half rate again as whole-process CPU per request beside memtier's closed
# loop and memtier --rate-limiting at the same rate (rows io-kvlab-rate-half,
# io-memtier-closed, io-memtier-rate-half).
if [ "${BENCH_IO:-1}" = 1 ]; then
  REDIS=${REDIS:-$(serve redis)}
  RATE=${RATE:-20000}
  VLAB=${VALKEY_LAB:-$(command -v valkey-lab || true)}
  IO_CONNS=${IO_CONNS:-10000}
  ulimit -n $((IO_CONNS + 65536)) 2>/dev/null || true
  "$KVLAB" run --target "$REDIS" --keys "$KEYS" --requests 1 --warmup 0 > /dev/null 2>&1
  # valkey-lab names its own keys (hex ids): its --prefill SETs each of them
  # once, so that its GET rounds hit as kvlab's do.
  vlab() { # pipeline: one valkey-lab GET-only run of IO_SECS s, its process CPU per response
    local out n
    out=$(cpu_of "$VLAB" -h 127.0.0.1 -p "$PORT" -d "${IO_SECS:-5}s" --warmup 0 -c 50 -P "$1" -t 1 \
      -r 100:0 -n "$KEYS" -s 256 -o json)
    n=$(grep -o '"type":"result".*"responses":[0-9]*' "$WORK/last.out" | grep -o '[0-9]*$' || true)
    if [ -z "$n" ]; then
      echo "bench: valkey-lab gave no result:"; tail -3 "$WORK/last.out"
      return 0
    fi
    echo "bench: valkey-lab $(grep -o '"hit_pct":[0-9.]*' "$WORK/last.out" | tail -1)"
    record valkey-lab "$1" "$n" "$out"
  }
  if [ -n "$VLAB" ]; then
    echo "bench: valkey-lab --prefill of its own $KEYS keys"
    "$VLAB" -h 127.0.0.1 -p "$PORT" -d 1s --warmup 0 --prefill -c 50 -P 16 -t 1 -r 100:0 \
      -n "$KEYS" -s 256 -o quiet > /dev/null 2>&1 || true
  fi
  win() { # name [extra...]: kvlab's own window figures of one run
    local name=$1; shift
    if ! cpu_of "$KVLAB" run --target "$REDIS" --no-load --keys "$KEYS" --ratio 0:1 --connections "${CONNS:-50}" \
      --threads 1 --duration "${IO_SECS:-5}" --warmup 1 "$@" > /dev/null; then
      echo "bench: $name was not a valid measurement:"; grep -E "^Error|WARNING" "$WORK/last.out" | head -3
    fi
    own "$name"
  }
  for round in $(seq "$ROUNDS"); do
    for io in epoll uring; do
      echo "bench: round $round, redis over $io"
      for P in 1 16; do
        N=$([ "$P" = 1 ] && echo "$N1" || echo "$N16")
        record "io-$io-closed" "$P" "$N" "$(cpu_of kvlab_run "$REDIS" "$P" "$N" --keys "$KEYS" --io "$io")"
      done
      if [ -n "$VLAB" ] && [ "$io" = uring ]; then
        vlab 1
      fi
      win "io-$io-win-closed" --io "$io"
      half=$(awk '/^  throughput/ { r = $2; gsub(",", "", r); print int(r / 2); exit }' "$WORK/last.out")
      win "io-$io-win-rate-half" --io "$io" --rate "$half"
      win "io-$io-win-rate-half-exact" --io "$io" --rate "$half" --send-slack 0
      if [ -n "$MEMTIER" ] && [ "$io" = uring ]; then
        # The same half rate, whole-process CPU per request, beside
        # memtier_benchmark's closed loop and its --rate-limiting at that rate
        # (each connection paced evenly; kvlab's arrivals are Poisson).
        per=$((half * ${IO_SECS:-5} / 50))
        record io-kvlab-rate-half 1 $((per * 50)) "$(cpu_of kvlab_run "$REDIS" 1 $((per * 50)) --keys "$KEYS" --rate "$half")"
        mt=("$MEMTIER" -p "$PORT" --protocol=redis --ratio=0:1 --key-pattern=R:R --distinct-client-seed
          --key-maximum="$KEYS" -d 256 -c 50 -t 1 -n "$per" --hide-histogram)
        record io-memtier-closed 1 $((per * 50)) "$(cpu_of "${mt[@]}")"
        record io-memtier-rate-half 1 $((per * 50)) "$(cpu_of "${mt[@]}" --rate-limiting=$((half / 50)))"
      fi
      win "io-$io-win-rate20k" --io "$io" --rate "$RATE"
      CONNS=200 win "io-$io-win-rate20k-c200" --io "$io" --rate "$RATE"
      CONNS=200 win "io-$io-win-rate20k-rtt1" --io "$io" --rate "$RATE" --rtt 1
      CONNS=$IO_CONNS win "io-$io-win-closed-c$IO_CONNS" --io "$io"
    done
  done
fi

if [ -s "$WORK/lat" ]; then
  echo
  echo "p99 latency and p99 send error (µs), medians of $ROUNDS interleaved runs at $RATE req/s"
  printf '%-20s %12s %16s\n' tool "p99 µs" "send p99 µs"
  awk '
    function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; return a[int((n + 1) / 2)] }
    { p[$1] = p[$1] " " $2; e[$1] = e[$1] " " $3; if (!($1 in seen)) { seen[$1] = 1; order[++m] = $1 } }
    END { for (i = 1; i <= m; i++) printf "%-20s %12s %16s\n", order[i], median(p[order[i]]), median(e[order[i]]) }' "$WORK/lat"
fi

if [ -s "$WORK/waits" ]; then
  echo
  echo "what waiting cost, kvlab's own window figures, medians of $ROUNDS interleaved runs"
  printf '%-28s %10s %10s %10s %12s\n' run "wakes/req" "cs/req" "slack µs" "send p99 µs"
  awk '
    function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; return a[int((n + 1) / 2)] }
    { w[$1] = w[$1] " " $2; x[$1] = x[$1] " " $3; s[$1] = s[$1] " " $4; e[$1] = e[$1] " " $5; if (!($1 in seen)) { seen[$1] = 1; order[++m] = $1 } }
    END { for (i = 1; i <= m; i++) { k = order[i]; printf "%-28s %10s %10s %10s %12s\n", k, median(w[k]), median(x[k]), median(s[k]), median(e[k]) } }' "$WORK/waits"
fi

echo
echo "medians of $ROUNDS interleaved runs ($(nproc) cores shared by client and server; $(date -u +%F))"
printf '%-20s %-9s %12s %16s\n' tool pipeline "req/s" "client µs/req"
sort -k1,1 -k2,2 "$WORK/rows" | awk '
  function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; return a[int((n + 1) / 2)] }
  { k = $1 " " $2; rps[k] = rps[k] " " $3; cpu[k] = cpu[k] " " $4; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
  END { for (i = 1; i <= m; i++) { split(order[i], f, " "); c = median(cpu[order[i]]); printf "%-20s %-9s %12.0f %16s\n", f[1], f[2], median(rps[order[i]]), (c == "-" ? "-" : sprintf("%.2f", c)) } }'
