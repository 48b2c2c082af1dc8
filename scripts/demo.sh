#!/usr/bin/env bash
# `make demo`: the same read-only workload against managed redis, valkey and
# memcached, one after the other, then a side-by-side table.
set -euo pipefail
cd "$(dirname "$0")/.."
KVLAB=${KVLAB:-target/release/kvlab}
OUT=${OUT:-results/demo}
mkdir -p "$OUT"
ARGS=(--keys 200000 --value-size 256 --connections 50 --duration 5 --warmup 1)
for t in redis valkey memcached; do
  echo "== $t"
  "$KVLAB" run --target "$t" "${ARGS[@]}" --json "$OUT/$t.json"
  echo
done
echo "== side by side (${ARGS[*]})"
printf '%-10s %14s %10s %10s %16s %16s\n' target "req/s" "p50 µs" "p99 µs" "server µs/req" "client µs/req"
for t in redis valkey memcached; do
  # Flat fields of kvlab's JSON, read without extra tools.
  get() { grep -m1 "\"$1\"" "$OUT/$t.json" | sed -E 's/.*: *([0-9.]+|null).*/\1/'; }
  p50=$(grep -A3 '"latency_us"' "$OUT/$t.json" | grep -m1 '"p50"' | sed -E 's/.*: *([0-9.]+).*/\1/')
  p99=$(grep -A5 '"latency_us"' "$OUT/$t.json" | grep -m1 '"p99"' | sed -E 's/.*: *([0-9.]+).*/\1/')
  printf '%-10s %14.0f %10.0f %10.0f %16.2f %16.2f\n' "$t" "$(get throughput_rps)" "$p50" "$p99" \
    "$(get server_cpu_us_per_request)" "$(get client_cpu_us_per_request)"
done
echo "(client and server share this machine's $(nproc) cores; results in $OUT/)"
