'use strict'
// Leasehold for Node.js: leases and fenced locks over one Rust core.
// The API is described in index.d.ts and docs/node.md.

const { Store, memory, connect } = require('./lib/store')
const { Lock } = require('./lib/lock')
const { Lease } = require('./lib/lease')
const { ManualLease } = require('./lib/manual')
const { Owner, Slots, SlotLease, HeldSlot } = require('./lib/slots')
const { IdGenerator, IdLayout } = require('./lib/ids')
const { codes, LeaseholdError, LostError, isTimeout } = require('./lib/errors')

module.exports = {
  memory,
  connect,
  Store,
  Lock,
  Lease,
  ManualLease,
  Owner,
  Slots,
  SlotLease,
  HeldSlot,
  IdGenerator,
  IdLayout,
  LeaseholdError,
  LostError,
  isTimeout,
  codes,
}
