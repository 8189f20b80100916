#!/usr/bin/env bash
# Prints the one version of everything `make dist` builds: the workspace's
# (Cargo.toml, [workspace.package] version), after checking that every
# crate of the workspace, the Node package and the JVM pom state the same one.
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
# The workspace's members, as cargo sees them (fuzz/ is a workspace of its own, never shipped).
while read -r name own; do
  check "crate $name" "$own"
done < <("${CARGO:-cargo}" metadata --no-deps --format-version 1 --offline |
  python3 -c 'import json, sys; [print(p["name"], p["version"]) for p in json.load(sys.stdin)["packages"]]')
# The JVM artifact's pom (dev.leasehold:leasehold): its project version, the first <version>.
check bindings-jvm/pom.xml "$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' bindings-jvm/pom.xml | head -n 1)"
if grep -q '^version' bindings-python/pyproject.toml; then
  check bindings-python/pyproject.toml "$(sed -n 's/^version = "\(.*\)"/\1/p' bindings-python/pyproject.toml)"
fi
[ "$bad" = 0 ] || exit 1
echo "$version"
