'use strict'
// A held lease as the held function sees it (LOCK-09): its fence, whether
// it was lost, and `signal`, an AbortSignal aborted with a LostError when it
// is. The signal is made when first read; a weak threadsafe function of the
// addon tells it of a loss, so a held lease never keeps Node alive by itself.

const { LostError } = require('./errors')

/** @typedef {import('../index').LossReason} LossReason */
/** @typedef {import('./addon').NativeHolding} NativeHolding */

/**
 * @param {string | null} reason
 * @returns {LostError}
 */
function lostError(reason) {
  return new LostError(`the lease was lost (${reason ?? 'unknown'})`, {
    lossReason: /** @type {LossReason | null} */ (reason),
  })
}

/** @type {(lease: Lease, reason: unknown) => void} */
let abortLease

/** @typedef {import('../index').Lease} PublicLease */

/** @implements {PublicLease} */
class Lease {
  /** @type {NativeHolding} */
  #native
  /** @type {AbortController | null} */
  #controller = null
  /** Why the signal is to abort, when that was decided before it was first read. */
  #abortWith = /** @type {{ reason: unknown } | null} */ (null)

  /**
   * Made by `hold` and `tryHold`; not for callers.
   * @param {NativeHolding} native
   */
  constructor(native) {
    this.#native = native
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
    if (this.#controller === null) {
      const controller = new AbortController()
      this.#controller = controller
      if (this.#abortWith !== null) {
        controller.abort(this.#abortWith.reason)
      } else if (this.#native.lost) {
        controller.abort(lostError(this.#native.lossReason))
      } else {
        this.#native.watch((reason) => controller.abort(lostError(reason)))
      }
    }
    return this.#controller.signal
  }

  static {
    abortLease = (lease, reason) => {
      if (lease.#controller !== null) lease.#controller.abort(reason)
      else if (lease.#abortWith === null) lease.#abortWith = { reason }
    }
  }
}

/**
 * Once the store ended `lease` (its store was closed), aborts its signal
 * with the loss, without waiting for the weak watcher: a caller that awaits
 * `store.close()` finds every lease of the store lost and told.
 * @param {Lease} lease
 * @param {NativeHolding} native
 * @returns {Promise<void>}
 */
async function deliverLoss(lease, native) {
  const until = Date.now() + 1_000
  while (!native.lost && Date.now() < until) {
    await new Promise((resolve) => setImmediate(resolve))
  }
  if (native.lost) abortLease(lease, lostError(native.lossReason))
}

module.exports = { Lease, abortLease, deliverLoss, lostError }
