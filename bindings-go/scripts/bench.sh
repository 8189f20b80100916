#!/usr/bin/env bash
# make bench-go: the hold cycle through Go (go test -bench HoldCycle) next to
# the same cycle in Rust (ffi/examples/hold_cycle.rs), on the embedded store
# and on a server store, in interleaved rounds; prints each round, the
# medians and the Go/Rust ratio. Expects the release builds (see mk/go.mk).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/../target}
rounds=${BENCH_ROUNDS:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq "$rounds"); do
  "$target/release/examples/hold_cycle" "$target/release/leasehold" 100000 | sed "s/^/round $round /" | tee -a "$out"
  LEASEHOLD_BIN="$target/release/leasehold" go test -run '^$' -bench HoldCycle -benchtime 2s -count=1 ./locks/ |
    awk -v r="$round" '/^BenchmarkHoldCycle\// { split($1, n, "[/-]"); print "round " r " go " n[2] " " $3 " ns/op" }' | tee -a "$out"
done
awk '
  { v[$3 " " $4][++c[$3 " " $4]] = $5 }
  function median(k,   n, i, j, t) {
    n = c[k]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[k][j] < v[k][i]) { t = v[k][i]; v[k][i] = v[k][j]; v[k][j] = t }
    return v[k][int((n + 1) / 2)]
  }
  END {
    for (s = 1; s <= 2; s++) {
      store = s == 1 ? "embedded" : "server"
      g = median("go " store); r = median("rust " store)
      printf "median %-8s go %7d ns/op  rust %7d ns/op  go/rust %.2fx\n", store, g, r, g / r
    }
  }' "$out"
