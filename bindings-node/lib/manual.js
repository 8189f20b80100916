'use strict'
// Manual leases: the caller extends and releases them; no
// background renewal.

const args = require('./args')
const { cancellable } = require('./run')

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
   * released lease, INVALID_TTL outside 1 s to 1 h. `options.signal` gives
   * up waiting for the store's answer (CANCELLED; the store may have
   * extended the lease).
   * @param {import('../index').Duration} d
   * @param {import('../index').SignalOptions} [options]
   * @returns {Promise<void>}
   */
  async extend(d, options) {
    const by = args.requiredDuration('the extension', d)
    const signal = args.signal(args.options('extend options', options, ['signal']).signal)
    await cancellable(
      (canceller) => this.#native.extend(by, canceller),
      signal,
      'gave up extending the lease',
    )
  }

  /**
   * Releases the lease if it still owns its name (MANUAL-04): the first
   * release of a lost lease fails LOST; after that, and after a confirmed
   * release, it does nothing. `options.signal` gives up waiting for the
   * store's answer (CANCELLED; the release goes on, and repeating it says
   * how it ended).
   * @param {import('../index').SignalOptions} [options]
   * @returns {Promise<void>}
   */
  async release(options) {
    const signal = args.signal(args.options('release options', options, ['signal']).signal)
    await cancellable(
      (canceller) => this.#native.release(canceller),
      signal,
      'gave up releasing the lease',
    )
  }
}

module.exports = { ManualLease }
