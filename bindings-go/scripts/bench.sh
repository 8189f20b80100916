#!/usr/bin/env bash
# make bench-go: the hold cycle through Go (go test -bench HoldCycle) next to
# the same cycle in Rust (ffi/examples/ffi_hold_cycle.rs), on the embedded store
# and on a server store, in interleaved rounds; prints each round, the
# medians and the Go/Rust ratio. Then the ID generator's non-waiting calls
# through Go (go test -bench IDs: Next, and NextInto per ID, on the embedded
# store in the default layout 41/10/12 ms), their medians over the rounds.
# The medians also go to $CARGO_TARGET_DIR/bench-go.md as Markdown tables
# (which `make bench-go` draws beside it: bench/plots.py).
# Expects the release builds (see mk/go.mk).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/../target}
rounds=${BENCH_ROUNDS:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq "$rounds"); do
  "$target/release/examples/ffi_hold_cycle" "$target/release/leasehold" 100000 | sed "s/^/round $round /" | tee -a "$out"
  LEASEHOLD_BIN="$target/release/leasehold" go test -run '^$' -bench HoldCycle -benchtime 2s -count=1 ./locks/ |
    awk -v r="$round" '/^BenchmarkHoldCycle\// { split($1, n, "[/-]"); print "round " r " go " n[2] " " $3 " ns/op" }' | tee -a "$out"
  go test -run '^$' -bench 'IDs' -benchtime 2s -count=1 ./locks/ |
    awk -v r="$round" '/^BenchmarkIDsNext-/ { print "round " r " go ids-next " $3 " ns/op" }
      /^BenchmarkIDsNextInto-/ { print "round " r " go ids-next-into " $5 " ns/id" }' | tee -a "$out"
done
# median of one side's rounds: median SIDE STORE
median() { awk -v s="$1" -v k="$2" '$3 == s && $4 == k { print $5 }' "$out" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
table=$target/bench-go.md
{
  echo "## Hold cycle through Go, median of $rounds rounds"
  echo
  echo 'One key, uncontended. Go: `lock.Hold(ctx, key, fn)` with an empty `fn` (`go test -bench HoldCycle`); Rust: the blocking `Lock::hold` as the binding runs it, begin and end each blocking from a thread outside the runtime (ffi/examples/ffi_hold_cycle.rs). The ratio is the medians'"'"' (Go over Rust).'
  echo
  echo '| store | Rust ns | Go ns | Go / Rust |'
  echo '|---|---:|---:|---|'
} > "$table"
for store in embedded server; do
  g=$(median go "$store")
  r=$(median rust "$store")
  awk -v s="$store" -v g="$g" -v r="$r" 'BEGIN { printf "median %-8s go %7d ns/op  rust %7d ns/op  go/rust %.2fx\n", s, g, r, g / r }'
  awk -v s="$store" -v g="$g" -v r="$r" 'BEGIN { printf "| %s | %d | %d | %.2fx |\n", s, r, g, g / r }' >> "$table"
done
{
  echo
  echo '## IDs through Go, layout 41/10/12 ms, embedded store'
  echo
  echo '| call | Go ns |'
  echo '|---|---:|'
} >> "$table"
for bench in ids-next ids-next-into; do
  awk -v b="$bench" -v v="$(median go "$bench")" 'BEGIN { printf "median %-13s go %9s %s  (layout 41/10/12 ms, embedded store)\n", b, v, b == "ids-next" ? "ns/op" : "ns/id" }'
  awk -v b="$bench" -v v="$(median go "$bench")" 'BEGIN { printf "| %s | %s |\n", b == "ids-next" ? "`ids.Next()` per call" : "`ids.NextInto(buf)` per ID", v }' >> "$table"
done
