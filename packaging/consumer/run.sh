#!/usr/bin/env bash
# `make dist-test`: installs what `make dist` built the way a user would, in
# a fresh folder with no Rust toolchain on PATH (cargo, rustc, rustup and
# protoc are shims that record any call and fail), starts the packaged
# `leasehold serve`, and runs the README's example in Python, Node, Go and Java
# against it (packaging/consumer/<lang>.sh). Each must print at least one
# `fence N` line, the fences must grow from one language to the next, and
# no step may have reached for the toolchain.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}"
here=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-consumer.XXXXXX")
server_pid=
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# No Rust toolchain: its folder leaves PATH, and shims stand in for its tools.
reached="$WORK/reached-for-rust"
shims="$WORK/no-rust"
mkdir -p "$shims"
# pip asks `rustc --version` for its User-Agent on every install: that one
# question fails without being recorded (a build would need cargo anyway).
for tool in cargo rustc rustup protoc; do
  cat >"$shims/$tool" <<SHIM
#!/bin/sh
[ "$tool \$*" = "rustc --version" ] && exit 127
echo "dist-test: $tool \$* was run: an install reached for a Rust toolchain" >&2
echo "$tool \$* (called by: \$(ps -o args= -p \$PPID))" >>"$reached"
exit 127
SHIM
  chmod +x "$shims/$tool"
done
PATH="$shims:$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '/\.cargo/bin' -e '/\.rustup' | paste -sd:)"
export PATH
unset CARGO CARGO_HOME CARGO_TARGET_DIR RUSTUP_HOME RUSTUP_TOOLCHAIN RUSTC RUSTFLAGS
for tool in cargo rustc protoc; do
  [ "$(command -v "$tool")" = "$shims/$tool" ] || { echo "dist-test: $tool is still reachable on PATH" >&2; exit 1; }
done

# The Debian package: its files and unit, then the tarball's server, started.
bash "$here/deb.sh" "$DIST/server/leasehold_${VERSION}_amd64.deb" "$WORK/deb"
mkdir -p "$WORK/server"
tar -xzf "$DIST/server/leasehold-$VERSION-x86_64-linux-gnu.tar.gz" -C "$WORK/server"
leasehold="$WORK/server/leasehold-$VERSION-x86_64-linux-gnu/bin/leasehold"
"$leasehold" --version
mkdir -p "$WORK/server/data"
"$leasehold" serve --listen 127.0.0.1:0 --data-dir "$WORK/server/data" >"$WORK/server/out" 2>"$WORK/server/err" &
server_pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$WORK/server/out" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$WORK/server/err" >&2; exit 1; }
  sleep 0.1
done
addr=$(sed -n 's/^listening on //p' "$WORK/server/out")
[ -n "$addr" ] || { echo "dist-test: the packaged server did not start" >&2; cat "$WORK/server/err" >&2; exit 1; }
export LEASEHOLD_URL="leasehold://$addr"
echo "dist-test: the packaged server listens on $addr"

last=0
for lang in python node go jvm; do
  mkdir -p "$WORK/$lang"
  echo "dist-test: $lang, installing and running the README's example"
  WORK_DIR="$WORK/$lang" bash "$here/$lang.sh" | tee "$WORK/$lang.out"
  fences=$(sed -n 's/^fence \([0-9][0-9]*\)$/\1/p' "$WORK/$lang.out")
  [ -n "$fences" ] || { echo "dist-test: $lang printed no fence" >&2; exit 1; }
  for f in $fences; do
    python3 -c "import sys; sys.exit(not $f > $last)" ||
      { echo "dist-test: $lang's fence $f is not above the previous $last" >&2; exit 1; }
    last=$f
  done
done

if [ -e "$reached" ]; then
  echo "dist-test: FAILED, a step reached for a Rust toolchain:" >&2
  cat "$reached" >&2
  exit 1
fi
echo "dist-test: every artifact installed without Rust, and the fences grew (last $last)"
