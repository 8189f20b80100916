'use strict'
// A held lease as the held function sees it (LOCK-09): its fence, whether
// it was lost, and `signal`, an AbortSignal aborted with a LostError when it
// is (lib/loss.js).

const { LossSignal } = require('./loss')

/** @typedef {import('../index').LossReason} LossReason */
/** @typedef {import('./addon').NativeHolding} NativeHolding */

/** @typedef {import('../index').Lease} PublicLease */

/** @implements {PublicLease} */
class Lease {
  /** @type {NativeHolding} */
  #native
  /** @type {LossSignal} */
  #loss

  /**
   * Made by `hold` and `tryHold`; not for callers.
   * @param {NativeHolding} native
   * @param {LossSignal} loss
   */
  constructor(native, loss) {
    this.#native = native
    this.#loss = loss
    /** The fence (LOCK-02): hand it to the system you write to. */
    this.fence = native.fence
    /** The key held. */
    this.key = native.key
    /** The name of the key's lock. */
    this.lockName = native.lockName
  }

  /** Whether the lease was lost. Once true, it stays true. */
  get lost() {
    return this.#native.lost
  }

  /** Why the lease was lost, once it was. */
  get lossReason() {
    return /** @type {LossReason | null} */ (this.#native.lossReason)
  }

  /** Milliseconds left before the holder's deadline (0 once lost); `null` without one. */
  get remaining() {
    return this.#native.remaining
  }

  /** Aborted with a LostError when the lease is lost (LOCK-09). */
  get signal() {
    return this.#loss.signal
  }
}

module.exports = { Lease }
