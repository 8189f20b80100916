'use strict'
// The loss of what a function holds while it runs (a key's lease, a slot),
// as the function sees it: an AbortSignal aborted with a LostError when it
// is lost. The signal is made when first read; a weak threadsafe function
// of the addon tells it of a loss, so it never keeps Node alive by itself.
// Whether and why it was lost is the core's.

const { LostError } = require('./errors')

/** @typedef {import('../index').LossReason} LossReason */

/**
 * What the addon tells of a held thing's loss (a Holding of lib/holding.js, a NativeSlotHolding).
 * @typedef {object} Watched
 * @property {boolean} lost
 * @property {string | null} lossReason
 * @property {(onLost: (reason: string) => void) => void} watch
 */

/**
 * The LostError a signal aborts with.
 * @param {string} what what was lost: 'the lease', 'the slot'
 * @param {string | null} reason
 * @returns {LostError}
 */
function lostError(what, reason) {
  return new LostError(`${what} was lost (${reason ?? 'unknown'})`, {
    lossReason: /** @type {LossReason | null} */ (reason),
  })
}

/** The AbortSignal of a held thing, aborted when it is lost. */
class LossSignal {
  /** @type {Watched} */
  #native
  /** @type {string} */
  #what
  /** @type {AbortController | null} */
  #controller = null
  /** Why the signal is to abort, when that was decided before it was first read. */
  #abortWith = /** @type {{ reason: unknown } | null} */ (null)
  /**
   * The signals a store tells of its close (lib/run.js), which this one
   * joins once it is read, while its function runs: one never read has
   * nobody to tell, and reads the loss when it is (below).
   * @type {Set<LossSignal> | null}
   */
  #running = null

  /**
   * @param {Watched} native
   * @param {string} what what is held, for the LostError's message: 'the lease', 'the slot'
   */
  constructor(native, what) {
    this.#native = native
    this.#what = what
  }

  /** Aborted with a LostError when the held thing is lost, or with the reason given to `abort`. */
  get signal() {
    if (this.#controller === null) {
      const controller = new AbortController()
      this.#controller = controller
      this.#running?.add(this)
      if (this.#abortWith !== null) {
        controller.abort(this.#abortWith.reason)
      } else if (this.#native.lost) {
        controller.abort(lostError(this.#what, this.#native.lossReason))
      } else {
        this.#native.watch((reason) => controller.abort(lostError(this.#what, reason)))
      }
    }
    return this.#controller.signal
  }

  /**
   * A LostError if the held thing is lost now (its holder deadline counts
   * even before its keeper ran), else null.
   * @returns {Error | null}
   */
  lostNow() {
    return this.#native.lost ? lostError(this.#what, this.#native.lossReason) : null
  }

  /**
   * Aborts the signal with `reason` (or will, when it is first read), unless it aborted already.
   * @param {unknown} reason
   */
  abort(reason) {
    if (this.#controller !== null) this.#controller.abort(reason)
    else if (this.#abortWith === null) this.#abortWith = { reason }
  }

  /**
   * While its function runs: joins `running`, the set a store's close
   * goes through, when (or if) the signal is read.
   * @param {Set<LossSignal>} running
   */
  runIn(running) {
    this.#running = running
  }

  /** Its function settled: leaves the set of `runIn`. */
  ran() {
    if (this.#controller !== null) this.#running?.delete(this)
    this.#running = null
  }

  /** Aborts the signal with the loss the addon knows of, if it knows of one. */
  abortIfLost() {
    if (this.#native.lost) this.abort(lostError(this.#what, this.#native.lossReason))
  }
}

/**
 * What a held function sees of its holding's loss (the base of a Lease and
 * of a HeldSlot): whether and why it was lost, and the signal.
 */
class LossView {
  /** @type {Watched} */
  #native
  /** @type {LossSignal} */
  #loss

  /**
   * @param {Watched} native
   * @param {LossSignal} loss
   */
  constructor(native, loss) {
    this.#native = native
    this.#loss = loss
  }

  /** Whether it was lost. Once true, it stays true. */
  get lost() {
    return this.#native.lost
  }

  /** Why it was lost, once it was. */
  get lossReason() {
    return /** @type {LossReason | null} */ (this.#native.lossReason)
  }

  /** Aborted with a LostError when it is lost. */
  get signal() {
    return this.#loss.signal
  }
}

module.exports = { LossSignal, LossView, lostError }
