'use strict'
// A held key as the JS layer uses it: the addon's holding, an External
// (cheaper for every hold to make and to read from than an instance of a
// native class, src/holding.rs), behind the getters and methods the rest of
// lib/ reads: a Lease's fence, key and lock name, the loss a LossSignal
// watches, the end lib/run.js awaits.

const addon = require('./native')

/** @typedef {import('./addon').NativeHolding} NativeHolding */

/** A held key (the addon's holding) until it ends. */
class Holding {
  /** @type {NativeHolding} */
  #native

  /** @param {NativeHolding} native */
  constructor(native) {
    this.#native = native
  }

  /**
   * The Holding of what the addon's `begin` answered: at once, or a promise.
   * @param {NativeHolding | Promise<NativeHolding>} got
   * @returns {Holding | Promise<Holding>}
   */
  static of(got) {
    return got instanceof Promise ? got.then((native) => new Holding(native)) : new Holding(got)
  }

  /** The fence (LOCK-02). */
  get fence() {
    return addon.holdingFence(this.#native)
  }

  /** The key held. */
  get key() {
    return addon.holdingKey(this.#native)
  }

  /** The name of the key's lock. */
  get lockName() {
    return addon.holdingLockName(this.#native)
  }

  /** Whether the lease was lost (LOCK-09). */
  get lost() {
    return addon.holdingLost(this.#native)
  }

  /** Why the lease was lost, once it was. */
  get lossReason() {
    return addon.holdingLossReason(this.#native)
  }

  /** Milliseconds left before the holder's deadline; `null` without one. */
  get remaining() {
    return addon.holdingRemaining(this.#native)
  }

  /**
   * Calls `onLost(reason)` once if the lease is lost before the holding ends.
   * @param {(reason: string) => void} onLost
   */
  watch(onLost) {
    addon.holdingWatch(this.#native, onLost)
  }

  /** Releases the key: rejects LOST if the lease was lost while held (LOCK-10). */
  end() {
    return addon.holdingEnd(this.#native)
  }

  /**
   * Releases every key of `holdings` at once (LOCK-22).
   * @param {Holding[]} holdings
   */
  static endAll(holdings) {
    return addon.holdingEndAll(holdings.map((holding) => holding.#native))
  }
}

module.exports = { Holding }
