#!/usr/bin/env bash
# `make dist-test`, Node (packaging/consumer/run.sh): in the fresh folder
# $WORK_DIR, installs the tarball of `leasehold` from $DIST/node as a user
# of the platform ARCH gets it from the registry: its optionalDependencies
# name every platform package, which the project's `overrides` point at
# their tarballs in $DIST/node, as the registry would serve them; npm must
# install ARCH's and skip the others by their os, cpu and libc fields, with
# nothing built and no request to any registry (npm's http log must show
# none). The package's install script is allowed to run, as npm 10 (Node
# 20's) runs it unasked, and must do nothing. Then runs the README's JS
# example against the server at $LEASEHOLD_URL, printing one `fence N` line
# per hold: on aarch64 with the Node of the arm64 root folder, under qemu.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${WORK_DIR:?}" "${LEASEHOLD_URL:?}"
ARCH=${ARCH:-x86_64}
. "$(dirname "$0")/../platforms.sh"
platform=$(npm_platform "$ARCH")
case $ARCH in
  x86_64) node=node cpu=x64 ;;
  aarch64) node=$ARM64_ROOT/usr/local/bin/node cpu=arm64 ;;
esac
cd "$WORK_DIR"
unset LEASEHOLD_BUILD_FROM_SOURCE npm_config_build_from_source
export npm_config_cache=$WORK_DIR/npm-cache
# A registry that answers nothing: any request to it fails the install.
export npm_config_registry=http://127.0.0.1:9/ npm_config_fetch_retries=0
log=$WORK_DIR/npm-install.log

npm init -y >/dev/null
npm pkg set allowScripts.leasehold=true --json
for arch in "${PLATFORMS[@]}"; do
  other=$(npm_platform "$arch")
  npm pkg set "overrides.@leasehold/$other=file:$DIST/node/leasehold-$other-$VERSION.tgz"
done
if ! npm install --no-audit --no-fund --loglevel=http --foreground-scripts --os=linux --cpu=$cpu --libc=glibc \
  "$DIST/node/leasehold-$VERSION.tgz" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
if grep -i 'http fetch' "$log" >&2; then
  echo "consumer/node.sh: npm asked a registry for something (above)" >&2
  exit 1
fi
grep -q '^> leasehold@.* install$' "$log" ||
  { echo "consumer/node.sh: the package's install script did not run" >&2; exit 1; }
npm ls --all >/dev/null
installed=$(ls node_modules/@leasehold)
[ "$installed" = "$platform" ] ||
  { echo "consumer/node.sh: installed the platform packages '$installed', not $platform alone" >&2; exit 1; }
[ ! -e node_modules/leasehold/leasehold.node ] ||
  { echo "consumer/node.sh: the install built an addon" >&2; exit 1; }

cat >example.mjs <<'EOF'
import { connect } from 'leasehold'

console.log(`platform ${process.arch}`)
const store = await connect(process.env.LEASEHOLD_URL)
const summaries = store.lock('summaries', { ttl: '30s' })
for (let i = 0; i < 2; i++) {
  await summaries.hold('chat-1', async (lease) => {
    console.log(`fence ${lease.fence}`) // saveSummary('chat-1', text, lease.fence)
  })
}
const ran = await summaries.tryHold('chat-2', async () => 'done') // null when the key is held
if (ran !== 'done') throw new Error(`tryHold on a free key answered ${ran}`)
console.log(`tryHold chat-2: ${ran}`)
await store.close()
EOF
run_on "$ARCH" "$node" example.mjs
