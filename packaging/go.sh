#!/usr/bin/env bash
# `make dist-go`: the Go module of bindings-go/ as a module proxy in
# $DIST/go (GOPROXY=file://$DIST/go), version v$VERSION, its zip carrying the
# static library of each platform (packaging/platforms.sh) where
# link_static.go's #cgo flags look (lib/linux_amd64/, lib/linux_arm64/). The
# libraries are built with the dist profile by `make dist-native`, and their
# debug info stripped, and each checked to link against glibc 2.17; the zip is
# made from a staging copy under $CARGO_TARGET_DIR by golang.org/x/mod/zip
# (packaging/gomodule).
# Env: DIST, VERSION, CARGO_TARGET_DIR and GO (default go).
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}"
GO=${GO:-go}
cd "$(dirname "$0")/.."
. packaging/platforms.sh

# The module's files as the checkout has them (not what .gitignore ignores,
# so not the debug library of lib/), less the repository's own tools (the
# demo's holder, the benchmark script) and the .gitignore that keeps lib/
# out of git; with the C header, which the build writes beside the package.
stage="$CARGO_TARGET_DIR/go-dist/leasehold-go"
rm -rf "$stage"
mkdir -p "$stage"
(cd bindings-go && git ls-files -z --cached --others --exclude-standard) |
  tar -C bindings-go --null -T - -cf - | tar -C "$stage" -xf -
rm -rf "$stage/cmd" "$stage/scripts" "$stage/.gitignore"
cp ffi/include/leasehold.h "$stage/locks/leasehold.h"
for arch in "${PLATFORMS[@]}"; do
  lib="$(native_dir "$arch")/libleasehold_ffi.a"
  into="$stage/lib/linux_$(go_arch "$arch")"
  mkdir -p "$into"
  "$(strip_tool "$arch")" --strip-debug -o "$into/libleasehold_ffi.a" "$lib"
  # A static library's glibc symbols bind where a program links it. Every
  # object of it, linked by zig against glibc GLIBC_FLOOR's symbols into a
  # scratch shared library, must resolve there, at or below the floor.
  linked="$CARGO_TARGET_DIR/go-dist/glibc-check-$arch.so"
  "${PACKAGING_TOOLS:?}/bin/python" -m ziglang cc -target "$arch-linux-gnu.$GLIBC_FLOOR" -shared \
    -o "$linked" -Wl,--whole-archive "$into/libleasehold_ffi.a" -Wl,--no-whole-archive \
    -lgcc_s -lutil -lrt -lpthread -lm -ldl
  echo "go.sh: $arch library $(du -h "$lib" | cut -f1) built, $(du -h "$into/libleasehold_ffi.a" | cut -f1) without debug info, links at GLIBC_$(check_glibc "$linked")"
  rm "$linked"
done

rm -rf "$DIST/go"
mkdir -p "$DIST/go"
(cd packaging/gomodule && "$GO" run . -dir "$stage" -version "v$VERSION" \
  -time "$(git log -1 --format=%cI)" -out "$DIST/go")
