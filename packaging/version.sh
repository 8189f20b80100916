#!/usr/bin/env bash
# Prints the one version of everything `make dist` builds: the workspace's
# (Cargo.toml, [workspace.package] version), after checking that every
# package that states a version of its own states the same one.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$version" ] || { echo "version.sh: no [workspace.package] version in Cargo.toml" >&2; exit 1; }
bad=0
check() { # what, version found
  if [ "$2" != "$version" ]; then
    echo "version.sh: $1 says $2, the workspace says $version" >&2
    bad=1
  fi
}
check bindings-node/package.json "$(node -p 'require("./bindings-node/package.json").version')"
for manifest in */Cargo.toml; do
  own=$(sed -n '/^\[package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$manifest")
  [ -z "$own" ] || check "$manifest" "$own"
done
if grep -q '^version' bindings-python/pyproject.toml; then
  check bindings-python/pyproject.toml "$(sed -n 's/^version = "\(.*\)"/\1/p' bindings-python/pyproject.toml)"
fi
[ "$bad" = 0 ] || exit 1
echo "$version"
