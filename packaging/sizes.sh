#!/usr/bin/env bash
# Prints each artifact under dist/ with its size, then each shipped native
# binary inside them with its size and the newest glibc symbol version it
# needs (packaging/platforms.sh; every one is at or below the floor, or the
# packaging script that made it failed).
set -euo pipefail
dist=${1:?usage: sizes.sh DIST}
cd "$(dirname "$0")/.."
. packaging/platforms.sh
echo "artifacts in $dist:"
find "$dist" -type f \( -name '*.whl' -o -name '*.tar.gz' -o -name '*.tgz' -o -name '*.deb' -o -name '*.zip' -o -name '*.jar' \) -printf '%P\n' |
  sort | while read -r f; do
    printf '  %-64s %8s\n' "$f" "$(du -h "$dist/$f" | cut -f1)"
  done

# The native binaries, unpacked from each artifact that carries one.
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
find "$dist" -type f \( -name '*.whl' -o -name '*.zip' -o -name '*.jar' \) -print0 |
  while IFS= read -r -d '' f; do unzip -q -o "$f" -d "$unpacked/$(basename "$f")" 2>/dev/null || true; done
find "$dist" -type f \( -name '*.tar.gz' -o -name '*.tgz' \) -print0 |
  while IFS= read -r -d '' f; do mkdir -p "$unpacked/$(basename "$f")" && tar -xzf "$f" -C "$unpacked/$(basename "$f")"; done
echo "native binaries (size, newest glibc symbol):"
find "$unpacked" -type f \( -name '*.so' -o -name '*.node' -o -name 'leasehold' -o -name '*.a' \) -printf '%P\n' |
  sort | while read -r f; do
    case $f in
      *.a) glibc="(static: links at the floor, checked by go.sh)" ;;
      *) glibc="GLIBC_$(glibc_needed "$unpacked/$f")" ;;
    esac
    printf '  %-72s %8s  %s\n' "$f" "$(du -h "$unpacked/$f" | cut -f1)" "$glibc"
  done
