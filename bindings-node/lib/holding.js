'use strict'
// A held key as the JS layer uses it: the addon's holding, a number (its id
// in the addon's table of this thread's holdings, src/holding.rs), behind
// the getters and methods the rest of lib/ reads: a Lease's fence, key and
// lock name, the loss a LossSignal watches, the end lib/run.js awaits. The
// end takes the holding out of the addon's table, so what a lease answers
// after its hold is kept here, as the core's lease says it once ended: its
// key and lock name (given), its fence (read before the end if it was not
// yet), whether and why it was lost (from the end's answer), no time left.
// Every holding lib/ makes is ended on every path (lib/run.js, and
// lib/run.js's `begin` for one whose call was given up); one never ended
// would stay in the table, renewed, until its thread exits.

const addon = require('./native')

/** @typedef {import('./addon').NativeHolding} NativeHolding */

/** A held key (the addon's holding) until it ends, and what its lease answers after. */
class Holding {
  /** @type {NativeHolding} */
  #native
  /** @type {string} */
  #key
  /** @type {string} */
  #lockName
  /** The fence, once read. @type {bigint | null} */
  #fence = null
  /** Whether its end was called: from then on, the addon has no holding to ask. */
  #ended = false
  /** Whether it was lost, as its end told (once ended). */
  #lostAtEnd = false
  /** Why, as its end told (once ended). @type {string | null} */
  #lossReasonAtEnd = null

  /**
   * @param {NativeHolding} native
   * @param {string} key
   * @param {string} lockName
   */
  constructor(native, key, lockName) {
    this.#native = native
    this.#key = key
    this.#lockName = lockName
  }

  /**
   * The Holding of what the addon's `begin` answered: at once, or a promise.
   * @param {NativeHolding | Promise<NativeHolding>} got
   * @param {string} key
   * @param {string} lockName
   * @returns {Holding | Promise<Holding>}
   */
  static of(got, key, lockName) {
    return got instanceof Promise
      ? got.then((native) => new Holding(native, key, lockName))
      : new Holding(got, key, lockName)
  }

  /** The fence (LOCK-02). */
  get fence() {
    return (this.#fence ??= addon.holdingFence(this.#native))
  }

  /** The key held. */
  get key() {
    return this.#key
  }

  /** The name of the key's lock. */
  get lockName() {
    return this.#lockName
  }

  /** Whether the lease was lost (LOCK-09). */
  get lost() {
    return this.#ended ? this.#lostAtEnd : addon.holdingLost(this.#native)
  }

  /** Why the lease was lost, once it was. */
  get lossReason() {
    return this.#ended ? this.#lossReasonAtEnd : addon.holdingLossReason(this.#native)
  }

  /** Milliseconds left before the holder's deadline; `null` without one; 0 once ended. */
  get remaining() {
    return this.#ended ? 0 : addon.holdingRemaining(this.#native)
  }

  /**
   * Calls `onLost(reason)` once if the lease is lost before the holding
   * ends; once it ended, never.
   * @param {(reason: string) => void} onLost
   */
  watch(onLost) {
    if (!this.#ended) addon.holdingWatch(this.#native, onLost)
  }

  /**
   * Releases the key: rejects LOST if the lease was lost while held
   * (LOCK-10), CLOSED if it ended already.
   * @returns {void | Promise<void>}
   */
  end() {
    this.#closing()
    let answer
    try {
      answer = addon.holdingEnd(this.#native)
    } catch (error) {
      this.#lostBy(error)
      throw error
    }
    return answer instanceof Promise
      ? answer.catch((/** @type {unknown} */ error) => {
          this.#lostBy(error)
          throw error
        })
      : answer
  }

  /**
   * Releases every key of `holdings` at once (LOCK-22). Which lease a LOST
   * answer is about is not told: each one's loss is read before.
   * @param {Holding[]} holdings
   * @returns {void | Promise<void>}
   */
  static endAll(holdings) {
    for (const holding of holdings) {
      if (holding.#ended) continue
      holding.#lostAtEnd = holding.lost
      holding.#lossReasonAtEnd = holding.lossReason
      holding.#closing()
    }
    return addon.holdingEndAll(holdings.map((holding) => holding.#native))
  }

  /** Before its end: keeps the fence, for the lease to answer after. */
  #closing() {
    if (this.#ended) return
    this.#fence ??= addon.holdingFence(this.#native)
    this.#ended = true
  }

  /**
   * Keeps the loss a failed end told of.
   * @param {unknown} error
   */
  #lostBy(error) {
    const { code, lossReason } = /** @type {{ code?: unknown, lossReason?: unknown }} */ (
      typeof error === 'object' && error !== null ? error : {}
    )
    if (code !== 'LOST') return
    this.#lostAtEnd = true
    this.#lossReasonAtEnd = typeof lossReason === 'string' ? lossReason : null
  }
}

module.exports = { Holding }
