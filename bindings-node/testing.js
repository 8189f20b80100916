'use strict'
// Test hooks (`require('leasehold/testing')`): embedded stores on a virtual
// clock that only `advance` moves, for the shared scenarios (they run on a
// single-threaded runtime of their own, so that every run is the same run); duration
// parsing as every call reads it; and panics on purpose, to show that a
// Rust panic becomes an INTERNAL error instead of a crash.

const native = require('./lib/native')
const args = require('./lib/args')
const { LeaseholdError, fromNative } = require('./lib/errors')
const { Store } = require('./lib/store')

/** @typedef {import('./testing').VirtualClock} PublicVirtualClock */

/** @implements {PublicVirtualClock} */
class VirtualClock {
  /** The native clock, for `memory({ clock })`. */
  #native = new native.NativeVirtualClock()

  /** Milliseconds since the clock's origin. */
  get now() {
    return this.#native.now
  }

  /**
   * Moves the clock by `by`, firing each timer due meanwhile in order and
   * letting the store's work run after each (on the test stores' own
   * runtime, off the event loop).
   * @param {import('./index').Duration} by
   * @returns {Promise<void>}
   */
  async advance(by) {
    try {
      await this.#native.advance(args.requiredDuration('by', by))
    } catch (error) {
      throw fromNative(error)
    }
  }

  /**
   * @param {VirtualClock} clock
   * @returns {import('./lib/addon').NativeVirtualClock}
   */
  static native(clock) {
    return clock.#native
  }
}

/**
 * An embedded store on `clock` (the real clock when not given); `renewal`:
 * its leases run out unless renewed, as on the server store; `push: false`:
 * waiting polls instead of being pushed grants.
 * @param {import('./testing').TestStoreOptions} [options]
 * @returns {Store}
 */
function memory(options) {
  const given = args.options('test store options', options, ['clock', 'renewal', 'push'])
  let clock = null
  if (given.clock !== undefined) {
    if (!(given.clock instanceof VirtualClock)) {
      throw new LeaseholdError('INVALID_ARGUMENT', 'clock must be a VirtualClock')
    }
    clock = VirtualClock.native(given.clock)
  }
  return new Store(native.memoryWith(clock, given.renewal === true, given.push !== false))
}

/**
 * A duration string in milliseconds, as every call reads it.
 * @param {string} text
 * @returns {number}
 */
function parseDuration(text) {
  try {
    return native.parseDuration(args.string('duration', text))
  } catch (error) {
    throw fromNative(error)
  }
}

/**
 * Panics in Rust, at once: throws INTERNAL.
 * @param {string} message
 * @returns {never}
 */
function panicNow(message) {
  try {
    native.panicNow(message)
  } catch (error) {
    throw fromNative(error)
  }
  throw new Error('unreachable: the panic did not throw')
}

/**
 * Panics in Rust, on the runtime: rejects INTERNAL.
 * @param {string} message
 * @returns {Promise<void>}
 */
async function panicLater(message) {
  try {
    await native.panicLater(message)
  } catch (error) {
    throw fromNative(error)
  }
}

module.exports = { VirtualClock, memory, parseDuration, panicNow, panicLater }
