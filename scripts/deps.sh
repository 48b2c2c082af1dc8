#!/usr/bin/env bash
# Installs, from Debian's packages, whatever kvlab's tests, benchmarks and demo
# need and this machine lacks. Idempotent: does nothing when all is present.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# binary -> package (bookworm main)
declare -A MAIN_PKGS=(
  [redis-server]=redis-server
  [redis-cli]=redis-tools
  [redis-benchmark]=redis-tools
  [memcached]=memcached
  [pgbench]=postgresql-contrib
  [mariadbd]=mariadb-server
  [mariadb]=mariadb-client
  [mariadb-install-db]=mariadb-server
  [sysbench]=sysbench
  [tarantool]=tarantool
  [pgbouncer]=pgbouncer
  [prometheus]=prometheus
)
# binary -> package (bookworm-backports)
declare -A BPO_PKGS=(
  [valkey-server]=valkey-server
  [valkey-cli]=valkey-tools
)

missing_main=()
missing_bpo=()
for bin in "${!MAIN_PKGS[@]}"; do
  # /usr/sbin (pgbouncer) is off a plain user's PATH.
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || missing_main+=("${MAIN_PKGS[$bin]}")
done
for bin in "${!BPO_PKGS[@]}"; do
  command -v "$bin" >/dev/null 2>&1 || missing_bpo+=("${BPO_PKGS[$bin]}")
done

# PostgreSQL's server binaries live in a versioned directory off PATH.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  missing_main+=(postgresql)
fi

if [ ${#missing_main[@]} -eq 0 ] && [ ${#missing_bpo[@]} -eq 0 ]; then
  echo "deps: everything is installed"
  exit 0
fi

if [ ${#missing_bpo[@]} -gt 0 ]; then
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deps: adding bookworm-backports to apt sources (for valkey)"
    echo "deb http://deb.debian.org/debian bookworm-backports main" |
      $SUDO tee /etc/apt/sources.list.d/kvlab-bookworm-backports.list >/dev/null
  fi
fi

echo "deps: installing ${missing_main[*]:-} ${missing_bpo[*]:-}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ ${#missing_main[@]} -gt 0 ]; then
  # shellcheck disable=SC2046
  $SUDO apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${missing_main[@]}" | sort -u)
fi
if [ ${#missing_bpo[@]} -gt 0 ]; then
  # shellcheck disable=SC2046
  $SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports $(printf '%s\n' "${missing_bpo[@]}" | sort -u)
fi
# Debian's packages start system-wide services; kvlab starts its own servers.
for svc in redis-server memcached valkey-server postgresql mariadb tarantool pgbouncer prometheus; do
  $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
done
echo "deps: done"
