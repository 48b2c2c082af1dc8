#!/usr/bin/env bash
# Fails with a clear message when no recent enough Rust toolchain is on PATH.
set -euo pipefail
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1; then
  echo "kvlab needs Rust 1.85 or newer (edition 2024): install it with rustup (https://rustup.rs), then rerun make" >&2
  exit 1
fi
ver=$(rustc --version | awk '{print $2}')
major=${ver%%.*}; rest=${ver#*.}; minor=${rest%%.*}
if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -lt 85 ]; }; then
  echo "kvlab needs Rust 1.85 or newer, found rustc $ver: run 'rustup update stable'" >&2
  exit 1
fi
