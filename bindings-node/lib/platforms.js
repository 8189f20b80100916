'use strict'
// The platforms a prebuilt addon is published for, each with the npm package
// that holds it (bindings-node/npm/<platform>/package.json is its template).
// lib/native.js loads from these; packaging/node.sh names the ones it packs
// in the published package's `optionalDependencies`.

/** @type {Readonly<Record<string, string>>} */
const platforms = Object.freeze({
  'linux-x64-gnu': '@leasehold/linux-x64-gnu',
  'linux-arm64-gnu': '@leasehold/linux-arm64-gnu',
})

module.exports = platforms
