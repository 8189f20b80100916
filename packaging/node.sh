#!/usr/bin/env bash
# `make dist-node`: the npm packages as they would be published, as `npm pack`
# tarballs in $DIST/node/ (docs/node.md, "Install"):
#   leasehold-$VERSION.tgz                    the package `leasehold`, no Rust
#                                             sources and no addon, naming the
#                                             platform packages in its
#                                             optionalDependencies at $VERSION
#   leasehold-linux-x64-gnu-$VERSION.tgz      @leasehold/linux-x64-gnu and
#   leasehold-linux-arm64-gnu-$VERSION.tgz    @leasehold/linux-arm64-gnu, the
#                                             addons `make dist-native` built
#                                             with the `dist` profile
# All are staged under $CARGO_TARGET_DIR/npm-dist, never in the source tree.
# Env (mk/dist.mk): DIST, VERSION, CARGO_TARGET_DIR.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}"
cd "$(dirname "$0")/.."
. packaging/platforms.sh
out=$DIST/node
stage=$CARGO_TARGET_DIR/npm-dist

field() { # package.json, expression on `p`
  node -p "const p = require('./$1'); $2"
}
rm -rf "$out" "$stage"
mkdir -p "$out" "$stage/leasehold"
dependencies=()
for arch in "${PLATFORMS[@]}"; do
  platform=$(npm_platform "$arch")
  template=bindings-node/npm/$platform
  pkg=$(field "$template/package.json" 'p.name')
  own=$(field "$template/package.json" 'p.version')
  [ "$own" = "$VERSION" ] || { echo "node.sh: $template/package.json says $own, not $VERSION" >&2; exit 1; }
  listed=$(node -p "require('./bindings-node/lib/platforms.js')['$platform'] || ''")
  [ "$listed" = "$pkg" ] ||
    { echo "node.sh: bindings-node/lib/platforms.js names '$listed' for $platform, the template $pkg" >&2; exit 1; }
  addon="$(native_dir "$arch")/libleasehold_node.so"
  echo "node.sh: $platform addon needs GLIBC_$(check_glibc "$addon")"
  # The platform package: the template and the addon under the name its `main` gives.
  mkdir -p "$stage/$platform"
  cp "$template/package.json" "$template/README.md" "$stage/$platform/"
  cp "$addon" "$stage/$platform/$(field "$template/package.json" 'p.main')"
  (cd "$stage/$platform" && npm pack --silent --pack-destination "$out" >/dev/null)
  tarball=$out/leasehold-$platform-$VERSION.tgz
  # The listing is read whole before it is searched (grep -q would end the
  # pipe early, and pipefail fail it).
  listing=$(tar -tzf "$tarball")
  grep -qx "package/$(field "$template/package.json" 'p.main')" <<<"$listing" ||
    { echo "node.sh: $tarball has no addon" >&2; exit 1; }
  dependencies+=("'$pkg': '$VERSION'")
done
own=$(field bindings-node/package.json 'p.version')
[ "$own" = "$VERSION" ] || { echo "node.sh: bindings-node/package.json says $own, not $VERSION" >&2; exit 1; }

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
    p.optionalDependencies = { $(IFS=,; echo "${dependencies[*]}") }
    p.scripts = { install: p.scripts.install }
    delete p.devDependencies
    fs.writeFileSync('package.json', JSON.stringify(p, null, 2) + '\n')
  " &&
  npm pack --silent --pack-destination "$out" >/dev/null)

main=$out/leasehold-$VERSION.tgz
if tar -tzf "$main" | grep -E '\.(rs|node)$|Cargo\.toml$' >&2; then
  echo "node.sh: $main carries Rust sources or an addon" >&2
  exit 1
fi
