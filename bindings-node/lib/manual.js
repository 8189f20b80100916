'use strict'
// Manual leases (seed 003): the caller extends and releases them; no
// background renewal.

const args = require('./args')
const { fromNative } = require('./errors')

/** @typedef {import('./addon').NativeManualLease} NativeManualLease */

/** @typedef {import('../index').ManualLease} PublicManualLease */

/** @implements {PublicManualLease} */
class ManualLease {
  /** @type {NativeManualLease} */
  #native

  /**
   * Made by `tryAcquire` and `acquire`; not for callers.
   * @param {NativeManualLease} native
   */
  constructor(native) {
    this.#native = native
    /** The lease's name. */
    this.name = native.name
    /** The fence (MANUAL-07). */
    this.fence = native.fence
  }

  /**
   * Sets the expiry to now + `d` (MANUAL-03); fails LOST on a lost or
   * released lease, INVALID_TTL outside 1 s to 1 h.
   * @param {import('../index').Duration} d
   * @returns {Promise<void>}
   */
  async extend(d) {
    const by = args.requiredDuration('the extension', d)
    try {
      await this.#native.extend(by)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /**
   * Releases the lease if it still owns its name (MANUAL-04): the first
   * release of a lost lease fails LOST; after that, and after a confirmed
   * release, it does nothing.
   * @returns {Promise<void>}
   */
  async release() {
    try {
      await this.#native.release()
    } catch (error) {
      throw fromNative(error)
    }
  }
}

module.exports = { ManualLease }
