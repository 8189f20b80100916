'use strict'
// A held lease as the held function sees it (LOCK-09): its fence, whether
// it was lost, and `signal`, an AbortSignal aborted with a LostError when it
// is (lib/loss.js).

const { LossView } = require('./loss')

/** @typedef {import('./addon').NativeHolding} NativeHolding */
/** @typedef {import('./loss').LossSignal} LossSignal */

/** @typedef {import('../index').Lease} PublicLease */

/**
 * Its loss (`lost`, `lossReason`, `signal`, LOCK-09) is a LossView's.
 * @implements {PublicLease}
 */
class Lease extends LossView {
  /** @type {NativeHolding} */
  #native

  /**
   * Made by `hold` and `tryHold`; not for callers.
   * @param {NativeHolding} native
   * @param {LossSignal} loss
   */
  constructor(native, loss) {
    super(native, loss)
    this.#native = native
    /** The fence (LOCK-02): hand it to the system you write to. */
    this.fence = native.fence
    /** The key held. */
    this.key = native.key
    /** The name of the key's lock. */
    this.lockName = native.lockName
  }

  /** Milliseconds left before the holder's deadline (0 once lost); `null` without one. */
  get remaining() {
    return this.#native.remaining
  }
}

module.exports = { Lease }
