#!/usr/bin/env bash
# `make dist-node`: the npm packages as they would be published, as `npm pack`
# tarballs in $DIST/node/ (docs/node.md, "Install"):
#   leasehold-$VERSION.tgz                  the package `leasehold`, no Rust
#                                           sources and no addon, naming the
#                                           platform package in its
#                                           optionalDependencies at $VERSION
#   leasehold-linux-x64-gnu-$VERSION.tgz    @leasehold/linux-x64-gnu, the addon
#                                           built with the `dist` profile
# Both are staged under $CARGO_TARGET_DIR/npm-dist, never in the source tree.
# Env (mk/dist.mk): DIST, VERSION, CARGO, CARGO_TARGET_DIR.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}"
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
platform=linux-x64-gnu
template=bindings-node/npm/$platform
out=$DIST/node
stage=$CARGO_TARGET_DIR/npm-dist

field() { # package.json, expression on `p`
  node -p "const p = require('./$1'); $2"
}
pkg=$(field "$template/package.json" 'p.name')
for manifest in bindings-node/package.json "$template/package.json"; do
  own=$(field "$manifest" 'p.version')
  [ "$own" = "$VERSION" ] || { echo "node.sh: $manifest says $own, not $VERSION" >&2; exit 1; }
done
listed=$(node -p "require('./bindings-node/lib/platforms.js')['$platform'] || ''")
[ "$listed" = "$pkg" ] ||
  { echo "node.sh: bindings-node/lib/platforms.js names '$listed' for $platform, the template $pkg" >&2; exit 1; }

"$cargo" build --quiet --locked --profile dist -p leasehold-node
rm -rf "$out" "$stage"
mkdir -p "$out" "$stage/$platform" "$stage/leasehold"

# The platform package: the template and the addon under the name its `main` gives.
cp "$template/package.json" "$template/README.md" "$stage/$platform/"
cp "$CARGO_TARGET_DIR/dist/libleasehold_node.so" "$stage/$platform/$(field "$template/package.json" 'p.main')"
(cd "$stage/$platform" && npm pack --silent --pack-destination "$out" >/dev/null)

# The main package: packed from its folder (its "files"), then given its
# optionalDependencies, which only a published package has (a checkout
# builds from source, and has no platform package to lock), and rid of what
# serves only the checkout: the dev tools and every script but `install`.
(cd bindings-node && npm pack --silent --pack-destination "$stage" >/dev/null)
tar -xzf "$stage/leasehold-$VERSION.tgz" -C "$stage/leasehold" --strip-components=1
(cd "$stage/leasehold" &&
  node -e "
    const fs = require('node:fs')
    const p = JSON.parse(fs.readFileSync('package.json', 'utf8'))
    p.optionalDependencies = { '$pkg': '$VERSION' }
    p.scripts = { install: p.scripts.install }
    delete p.devDependencies
    fs.writeFileSync('package.json', JSON.stringify(p, null, 2) + '\n')
  " &&
  npm pack --silent --pack-destination "$out" >/dev/null)

main=$out/leasehold-$VERSION.tgz
addon=$out/leasehold-$platform-$VERSION.tgz
if tar -tzf "$main" | grep -E '\.(rs|node)$|Cargo\.toml$' >&2; then
  echo "node.sh: $main carries Rust sources or an addon" >&2
  exit 1
fi
addon_files=$(tar -tzf "$addon")
grep -qx "package/$(field "$template/package.json" 'p.main')" <<<"$addon_files" ||
  { echo "node.sh: $addon has no addon" >&2; exit 1; }
