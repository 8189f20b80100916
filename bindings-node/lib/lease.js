'use strict'
// A held lease as the held function sees it (LOCK-09): its fence, whether
// it was lost, and `signal`, an AbortSignal aborted with a LostError when it
// is (lib/loss.js).

const { LossView } = require('./loss')

/** @typedef {import('./holding').Holding} Holding */
/** @typedef {import('./loss').LossSignal} LossSignal */

/** @typedef {import('../index').Lease} PublicLease */

/**
 * Its loss (`lost`, `lossReason`, `signal`, LOCK-09) is a LossView's.
 * @implements {PublicLease}
 */
class Lease extends LossView {
  /** @type {Holding} */
  #native

  /**
   * Made by `hold` and `tryHold`; not for callers.
   * @param {Holding} native
   * @param {LossSignal} loss
   */
  constructor(native, loss) {
    super(native, loss)
    this.#native = native
  }

  /**
   * The fence (LOCK-02): hand it to the system you write to. Asked of the
   * addon once, when first read or else just before the end (lib/holding.js).
   */
  get fence() {
    return this.#native.fence
  }

  /** The key held. */
  get key() {
    return this.#native.key
  }

  /** The name of the key's lock. */
  get lockName() {
    return this.#native.lockName
  }

  /**
   * Milliseconds left before the holder's deadline (0 once lost, and once
   * its hold ended); `null` without one.
   */
  get remaining() {
    return this.#native.remaining
  }
}

module.exports = { Lease }
