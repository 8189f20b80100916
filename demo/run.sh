#!/usr/bin/env bash
# make demo: a server store on loopback, and holders in every language
# contending for the keys of one lock, each writing its fence to a fenced
# resource (one file per key) that refuses a fence not larger than the last.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$PWD/target}"
export CARGO_TARGET_DIR
langs=${DEMO_HOLDERS:-}
seconds=${DEMO_SECONDS:-4}

cargo build --release -q -p leasehold-server -p leasehold-demo
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$CARGO_TARGET_DIR/release/leasehold" serve --listen 127.0.0.1:0 --data-dir "$work/data" \
  >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/server.out" 2>/dev/null && break
  sleep 0.05
done
addr=$(sed -n 's/^listening on //p' "$work/server.out")
[ -n "$addr" ] || { echo "the server did not start:"; cat "$work/server.log"; exit 1; }
export LEASEHOLD_STORE="leasehold://$addr" DEMO_DIR="$work/resource"
mkdir -p "$DEMO_DIR"
echo "server store on $LEASEHOLD_STORE; holders: rust ${langs}"

# Build every language's holder first (a run of 0 seconds), so that all start together.
for lang in $langs; do
  DEMO_SECONDS=0 DEMO_NAME=warmup make -s "demo-holder-$lang" >/dev/null
done
rm -f "$DEMO_DIR"/*

pids=()
for n in 1 2; do
  DEMO_SECONDS=$seconds DEMO_NAME=$n "$CARGO_TARGET_DIR/release/leasehold-demo" | tee -a "$work/holds" &
  pids+=($!)
done
for lang in $langs; do
  DEMO_SECONDS=$seconds DEMO_NAME=1 make -s "demo-holder-$lang" | tee -a "$work/holds" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done

echo
echo "holds per holder:"
sed -n 's/^\[\([^]]*\)\] holds .*/\1/p' "$work/holds" | sort | uniq -c
echo "last fence written to each key's resource:"
for f in "$DEMO_DIR"/*; do echo "  $(basename "$f") $(cat "$f")"; done
if grep -q REJECTED "$work/holds" || [ "$failed" -ne 0 ]; then
  echo "FAILED: a holder failed or a stale fence reached the resource"
  exit 1
fi
echo "every fence the resource saw was larger than the one before: no two holders overlapped"
