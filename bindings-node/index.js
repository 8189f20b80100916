'use strict'
// Leasehold for Node.js: leases and fenced locks over one Rust core.
// The API is described in index.d.ts and docs/node.md.

const { Store, memory, connect } = require('./lib/store')
const { Lock } = require('./lib/lock')
const { Lease } = require('./lib/lease')
const { ManualLease } = require('./lib/manual')
const { codes, LeaseholdError, LostError } = require('./lib/errors')

module.exports = {
  memory,
  connect,
  Store,
  Lock,
  Lease,
  ManualLease,
  LeaseholdError,
  LostError,
  codes,
}
