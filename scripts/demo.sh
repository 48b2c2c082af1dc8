#!/usr/bin/env bash
# `make demo`: kvlab's built-in quick study (about 2 minutes): read-only point
# reads against managed redis, valkey, memcached, postgres and mariadb at a few
# connection counts; prints the verdict and the path of report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${KVLAB:-target/release/kvlab}" demo --out "${OUT:-results/demo}"
