'use strict'
// The holdings of one `holdMany` (LOCK-22), in the order of its keys,
// watched and ended together: the loss of any one of them is the loss the
// held function is told of (lib/loss.js), and the end is the core's
// `Holding::end_all` (the addon's `holdingEndAll`).

const { Holding } = require('./holding')

/**
 * What lib/run.js ends (an Ending) and lib/loss.js watches (a Watched),
 * over the holdings of many keys.
 */
class Holdings {
  /** @type {Holding[]} */
  #natives

  /** @param {Holding[]} natives in the order of the keys */
  constructor(natives) {
    this.#natives = natives
  }

  /** The holdings, in the order of the keys. */
  get natives() {
    return this.#natives
  }

  /** Whether any of the leases was lost. */
  get lost() {
    return this.#natives.some((h) => h.lost)
  }

  /** Why the first lost lease (in the order of the keys) was lost, once one was. */
  get lossReason() {
    return this.#natives.find((h) => h.lost)?.lossReason ?? null
  }

  /**
   * Calls `onLost(reason)` once, at the first loss of any of the leases.
   * @param {(reason: string) => void} onLost
   */
  watch(onLost) {
    let told = false
    const tell = (/** @type {string} */ reason) => {
      if (told) return
      told = true
      onLost(reason)
    }
    for (const holding of this.#natives) holding.watch(tell)
  }

  /** Releases every key at once; rejects LOST if any lease was lost while held. */
  end() {
    return Holding.endAll(this.#natives)
  }
}

module.exports = { Holdings }
