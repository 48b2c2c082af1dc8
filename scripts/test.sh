#!/usr/bin/env bash
# make test: builds every test binary once (the `suite` profile), then runs
# them in two lanes side by side, the longest first, each binary's output to
# target/test-logs/NAME.log; then, alone, the binaries whose assertions hold
# latency or the host's own load (an emulated round trip's p50, a capacity
# search's bracket, a CPU hog's note), so that nothing beside them moves what
# they measure. Like `cargo test --no-fail-fast`: every binary runs; a
# failure's log is printed and the exit status is 1. Arguments go to every
# test binary (a filter, --nocapture, ...).
set -uo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
LOGS=target/test-logs
ARGS=("$@")
rm -rf "$LOGS" && mkdir -p "$LOGS"

# Seconds each binary took on 2 cores (its lane's order and balance); a
# binary not named counts 20.
declare -A SECS=([decide]=345 [contract]=225 [workloads]=180 [servers]=140
  [quiet]=110 [cli]=25 [lib]=10 [bin]=1)
# Run alone, after the lanes.
QUIET=" quiet "

if ! $CARGO test --profile suite --no-run --message-format=json >"$LOGS/build.json" 2>"$LOGS/build.err"; then
  cat "$LOGS/build.err" >&2
  exit 1
fi
# NAME PATH for every test executable: integration tests by their file, the
# library's and the binary's unit tests as lib and bin.
mapfile -t BINS < <(grep '"reason":"compiler-artifact"' "$LOGS/build.json" |
  grep '"executable":"/' | grep -E '"profile":\{[^}]*"test":true' |
  sed -E 's/.*"target":\{"kind":\["([a-z-]+)"\][^}]*"name":"([^"]+)".*"executable":"([^"]+)".*/\1 \2 \3/' |
  awk '{ n = ($1 == "test") ? $2 : $1; print n, $3 }')
if [ "${#BINS[@]}" -eq 0 ]; then
  echo "make test: no test binary found in cargo's build output ($LOGS/build.json)" >&2
  exit 1
fi

# One binary: its log, its seconds and its outcome in target/test-logs.
run_one() {
  local name=$1 path=$2 t0 rc
  shift 2
  t0=$(date +%s)
  "$path" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  echo "$name $(($(date +%s) - t0)) $rc" >>"$LOGS/outcomes"
  if [ "$rc" -eq 0 ]; then
    echo "ok      $name ($(($(date +%s) - t0)) s)"
  else
    echo "FAILED  $name ($(($(date +%s) - t0)) s): $LOGS/$name.log"
  fi
}

# The lanes: longest first, each to the lane with the fewer seconds so far.
lane=("" "")
sum=(0 0)
quiet=()
while read -r _ name path; do
  if [[ $QUIET == *" $name "* ]]; then
    quiet+=("$name $path")
    continue
  fi
  i=0
  [ "${sum[1]}" -lt "${sum[0]}" ] && i=1
  lane[i]+="$name $path"$'\n'
  sum[i]=$((sum[i] + ${SECS[$name]:-20}))
done < <(for b in "${BINS[@]}"; do
  set -- $b
  echo "${SECS[$1]:-20} $1 $2"
done | sort -rn)

echo "make test: ${#BINS[@]} test binaries, two lanes (about ${sum[0]} and ${sum[1]} s), then ${#quiet[@]} alone"
for i in 0 1; do
  (while read -r name path; do
    [ -n "$name" ] && run_one "$name" "$path" "${ARGS[@]}"
  done <<<"${lane[i]}") &
done
wait
for q in "${quiet[@]}"; do
  read -r name path <<<"$q"
  run_one "$name" "$path" "${ARGS[@]}"
done

failed=$(awk '$3 != 0 { print $1 }' "$LOGS/outcomes")
for f in $failed; do
  echo "---- $f ($LOGS/$f.log)"
  grep -vE '^test .* \.\.\. ok$' "$LOGS/$f.log" | tail -200
done
passed=$(grep -hE '^test result:' "$LOGS"/*.log | awk '{ p += $4; f += $6 } END { print p + 0, f + 0 }')
echo "make test: $(wc -l <"$LOGS/outcomes") binaries, tests passed and failed: $passed"
[ -z "$failed" ]
