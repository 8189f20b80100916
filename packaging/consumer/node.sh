#!/usr/bin/env bash
# `make dist-test`, Node (packaging/consumer/run.sh): in the fresh folder
# $WORK_DIR, installs the two tarballs of $DIST/node as a user gets them from
# the registry (`leasehold`, whose optionalDependencies name the platform
# package, and that platform package), with nothing built and no request to
# any registry (npm's http log must show none: the platform tarball
# satisfies the optional dependency). The package's install script is
# allowed to run, as npm 10 (Node 20's) runs it unasked, and must do nothing.
# Then runs the README's JS example against the server at $LEASEHOLD_URL,
# printing one `fence N` line per hold.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${WORK_DIR:?}" "${LEASEHOLD_URL:?}"
cd "$WORK_DIR"
unset LEASEHOLD_BUILD_FROM_SOURCE npm_config_build_from_source
export npm_config_cache=$WORK_DIR/npm-cache
# A registry that answers nothing: any request to it fails the install.
export npm_config_registry=http://127.0.0.1:9/ npm_config_fetch_retries=0
log=$WORK_DIR/npm-install.log

npm init -y >/dev/null
npm pkg set allowScripts.leasehold=true --json
if ! npm install --no-audit --no-fund --loglevel=http --foreground-scripts \
  "$DIST/node/leasehold-$VERSION.tgz" "$DIST/node/leasehold-linux-x64-gnu-$VERSION.tgz" >"$log" 2>&1; then
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
[ -f node_modules/@leasehold/linux-x64-gnu/package.json ] ||
  { echo "consumer/node.sh: the platform package was not installed" >&2; exit 1; }
[ ! -e node_modules/leasehold/leasehold.node ] ||
  { echo "consumer/node.sh: the install built an addon" >&2; exit 1; }

cat >example.mjs <<'EOF'
import { connect } from 'leasehold'

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
node example.mjs
