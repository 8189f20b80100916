'use strict'
// Locks: holding a key while a function runs. The core waits in
// line, renews, keeps the deadline and releases; lib/run.js runs the JS
// function between `begin` and `end` and turns the outcome into a promise.

const args = require('./args')
const { Lease } = require('./lease')
const { LossSignal } = require('./loss')
const { begin } = require('./run')

/** @typedef {import('./addon').NativeLock} NativeLock */
/** @typedef {import('./addon').NativeHolding} NativeHolding */

/** @typedef {import('../index').Lock} PublicLock */

/** @implements {PublicLock} */
class Lock {
  /** @type {NativeLock} */
  #native
  /** @type {import('./run').Running} */
  #running

  /**
   * Made by `store.lock`; not for callers.
   * @param {NativeLock} native
   * @param {import('./run').Running} running the functions the store runs while they hold
   */
  constructor(native, running) {
    this.#native = native
    this.#running = running
  }

  /** The lock's name. */
  get name() {
    return this.#native.name
  }

  /** The ttl of its leases, in milliseconds. */
  get ttl() {
    return this.#native.ttl
  }

  /** Its maxHold in milliseconds, or `null`. */
  get maxHold() {
    return this.#native.maxHold
  }

  /** Its bound on waiting in line in milliseconds, or `null`. */
  get wait() {
    return this.#native.wait
  }

  /** The holder's margin before the store's expiry, in milliseconds (LOCK-04). */
  get margin() {
    return this.#native.margin
  }

  /**
   * Waits in line for `key` (LOCK-01), runs `fn(lease)` holding it, and
   * releases it when `fn` settles (LOCK-11). Resolves with `fn`'s value;
   * rejects with `fn`'s error; rejects with a LostError if the lease was
   * lost while `fn` ran, even if it resolved (LOCK-10). `options.signal`
   * gives up waiting (CANCELLED, LOCK-18); aborted while `fn` runs, it
   * aborts `lease.signal` and `hold` rejects CANCELLED once `fn` settles.
   * @template T
   * @param {string} key
   * @param {(lease: Lease) => T | PromiseLike<T>} fn
   * @param {import('../index').HoldOptions} [options]
   * @returns {Promise<T>}
   */
  async hold(key, fn, options) {
    args.string('key', key)
    args.func(fn)
    const given = args.options('hold options', options, ['signal', 'wait'])
    const signal = args.signal(given.signal)
    const wait = args.duration('wait', given.wait)
    const holding = await begin(
      (canceller) => this.#native.begin(key, wait, canceller),
      signal,
      'gave up waiting for the key',
    )
    return this.#holdKey(/** @type {NativeHolding} */ (holding), fn, signal)
  }

  /**
   * Runs `fn(lease)` holding `key` if it is free now; resolves `null` and
   * runs nothing when it is held (LOCK-17). `options.signal` gives up
   * waiting for the store's answer (CANCELLED; a grant that answers later
   * is released at once, LOCK-18). Otherwise as `hold`.
   * @template T
   * @param {string} key
   * @param {(lease: Lease) => T | PromiseLike<T>} fn
   * @param {import('../index').TryHoldOptions} [options]
   * @returns {Promise<T | null>}
   */
  async tryHold(key, fn, options) {
    args.string('key', key)
    args.func(fn)
    const given = args.options('tryHold options', options, ['signal'])
    const signal = args.signal(given.signal)
    const holding = await begin(
      (canceller) => this.#native.tryBegin(key, canceller),
      signal,
      'gave up trying for the key',
    )
    return holding === null ? null : this.#holdKey(holding, fn, signal)
  }

  /**
   * Runs `fn` while `holding` holds its key (lib/run.js), told of the key's
   * loss when its store closes meanwhile.
   * @template T
   * @param {NativeHolding} holding
   * @param {(lease: Lease) => T | PromiseLike<T>} fn
   * @param {AbortSignal | null} signal
   * @returns {Promise<T>}
   */
  #holdKey(holding, fn, signal) {
    const loss = new LossSignal(holding, 'the lease')
    return this.#running.run(holding, new Lease(holding, loss), loss, fn, signal)
  }
}

module.exports = { Lock }
