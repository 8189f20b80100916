'use strict'
// The native addon, built from this package's Rust crate by its install
// script (scripts/build.js) into ../leasehold.node.

const path = require('node:path')

const file = path.join(__dirname, '..', 'leasehold.node')

/** @type {import('./addon').Native} */
let native
try {
  native = require(file)
} catch (error) {
  const reason = error instanceof Error ? error.message : String(error)
  throw new Error(
    `leasehold: cannot load the native addon ${file} (${reason}); ` +
      'build it with `npm install` in the package folder (it needs Rust and cargo)',
    { cause: error },
  )
}

module.exports = native
