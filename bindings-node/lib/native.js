'use strict'
// The native addon, chosen at load time: ../leasehold.node when it exists
// (built from source by scripts/build.js; a checkout has no other), else
// the prebuilt addon of the platform package (lib/platforms.js) that npm
// installed from the published package's `optionalDependencies` for this
// platform (docs/node.md, "Install").

const fs = require('node:fs')
const path = require('node:path')
const platforms = require('./platforms')

const fromSource =
  'install with LEASEHOLD_BUILD_FROM_SOURCE=1 (needs Rust and a checkout of the repository): ' +
  'LEASEHOLD_BUILD_FROM_SOURCE=1 npm install <checkout>/bindings-node'

/** `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`, … as napi-rs names platforms. */
function platform() {
  const name = `${process.platform}-${process.arch}`
  if (process.platform === 'linux') return `${name}-${glibc() ? 'gnu' : 'musl'}`
  if (process.platform === 'win32') return `${name}-msvc`
  return name
}

/** Whether this Node runs on glibc (its report names the glibc it runs on). */
function glibc() {
  const report = /** @type {{ header?: { glibcVersionRuntime?: string } }} */ (
    process.report.getReport()
  )
  return Boolean(report.header && report.header.glibcVersionRuntime)
}

/**
 * @param {string} what
 * @returns {import('./addon').Native}
 */
function load(what) {
  try {
    return require(what)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw new Error(`leasehold: cannot load the native addon ${what} (${reason})`, { cause: error })
  }
}

/** @returns {import('./addon').Native} */
function choose() {
  const folder = path.join(__dirname, '..')
  const local = path.join(folder, 'leasehold.node')
  if (fs.existsSync(local)) return load(local)
  if (fs.existsSync(path.join(folder, 'Cargo.toml')))
    throw new Error(
      `leasehold: ${folder} is a checkout of the repository, whose addon is not built; ` +
        `build it with LEASEHOLD_BUILD_FROM_SOURCE=1 npm install ${folder} (needs Rust)`,
    )
  const name = platform()
  const pkg = platforms[name]
  if (pkg === undefined)
    throw new Error(`leasehold: no prebuilt leasehold addon for ${name}; ${fromSource}`)
  try {
    require.resolve(pkg)
  } catch {
    throw new Error(
      `leasehold: the prebuilt addon for ${name} is the package ${pkg}, which is not installed ` +
        `(an install with --omit=optional or --no-optional?); reinstall leasehold, or ${fromSource}`,
    )
  }
  return load(pkg)
}

/** @type {import('./addon').Native} */
const native = choose()

module.exports = native
