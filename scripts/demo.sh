#!/usr/bin/env bash
# `make demo`: kvlab's answer for a stated load (about 2.5 minutes here): should
# PostgreSQL keep Redis in front of it for 20k req/s, p99 under 5 ms, 1M keys
# of 1 KB, zipf reads, 95:5 reads:writes? `kvlab decide --quick` measures the
# database alone, the cache alone, the miss-ratio curve, cache-aside at the
# smallest cache that serves the load and a cache loss, against managed
# PostgreSQL and Redis, and prints the decision; results/demo/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${KVLAB:-target/release/kvlab}" decide --quick --target postgres --cache redis \
  --rps 20000 --p99-ms 5 --keys 1000000 --value-size 1024 --ratio 1:19 \
  --key-distribution zipf --out "${OUT:-results/demo}"
