#!/usr/bin/env bash
# Prints each artifact under dist/ with its size.
set -euo pipefail
dist=${1:?usage: sizes.sh DIST}
echo "artifacts in $dist:"
find "$dist" -type f \( -name '*.whl' -o -name '*.tar.gz' -o -name '*.tgz' -o -name '*.deb' -o -name '*.zip' -o -name '*.jar' \) -printf '%P\n' |
  sort | while read -r f; do
    printf '  %-60s %8s\n' "$f" "$(du -h "$dist/$f" | cut -f1)"
  done
