#!/usr/bin/env node
// The package's install script. It builds the native addon from source only
// when asked: LEASEHOLD_BUILD_FROM_SOURCE=1, or npm's --build-from-source
// (npm_config_build_from_source). Otherwise it does nothing, and lib/native.js
// loads the prebuilt addon of the platform package (docs/node.md, "Install").
// The build runs cargo on the Rust crate in this folder, a member of the
// Leasehold workspace, so it needs a checkout of the repository (the
// published package carries no Rust sources), and copies the library to
// ./leasehold.node with the workspace's `dist` profile, the one the
// published addons are built with. Uses CARGO_TARGET_DIR when set, so the
// build shares the workspace's target folder. LEASEHOLD_NODE_PROFILE=debug
// builds without optimisations.
'use strict'

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const here = path.resolve(__dirname, '..')
const asked =
  process.env.LEASEHOLD_BUILD_FROM_SOURCE === '1' ||
  process.env.npm_config_build_from_source === 'true'
if (!asked) process.exit(0)
if (!fs.existsSync(path.join(here, 'Cargo.toml'))) {
  console.error(
    'leasehold: building from source needs a checkout of the Leasehold repository ' +
      '(the published package has no Rust sources): ' +
      'LEASEHOLD_BUILD_FROM_SOURCE=1 npm install <checkout>/bindings-node',
  )
  process.exit(1)
}
const profile = process.env.LEASEHOLD_NODE_PROFILE === 'debug' ? [] : ['--profile', 'dist']
const cargo = process.env.CARGO || 'cargo'
const args = [
  'build',
  ...profile,
  '--manifest-path',
  path.join(here, 'Cargo.toml'),
  '--message-format=json-render-diagnostics',
]

const run = spawnSync(cargo, args, {
  cwd: here,
  stdio: ['ignore', 'pipe', 'inherit'],
  encoding: 'utf8',
  maxBuffer: 256 * 1024 * 1024,
})
if (run.error) {
  console.error(
    `leasehold: cannot run ${cargo} (${run.error.message}); install Rust (rustup) first`,
  )
  process.exit(1)
}
if (run.status !== 0) {
  console.error(`leasehold: cargo build failed (exit ${run.status})`)
  process.exit(run.status || 1)
}

let library = null
for (const line of run.stdout.split('\n')) {
  if (!line.startsWith('{')) continue
  const message = JSON.parse(line)
  if (
    message.reason === 'compiler-artifact' &&
    message.target.name === 'leasehold_node' &&
    message.target.kind.includes('cdylib')
  ) {
    library =
      message.filenames.find((/** @type {string} */ f) => /\.(so|dylib|dll)$/.test(f)) || library
  }
}
if (!library) {
  console.error('leasehold: cargo built no leasehold_node library')
  process.exit(1)
}
const target = path.join(here, 'leasehold.node')
// Copied through a temporary name and renamed, so that a process that has
// the old addon loaded keeps its mapping intact.
const temporary = `${target}.${process.pid}.tmp`
fs.copyFileSync(library, temporary)
fs.renameSync(temporary, target)
console.error(`leasehold: built ${path.relative(process.cwd(), target) || target} from ${library}`)
