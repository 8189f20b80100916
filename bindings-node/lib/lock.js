'use strict'
// Locks: holding a key, or many keys at once, while a function runs. The
// core waits in line, renews, keeps the deadline and releases; lib/run.js
// runs the JS function between `begin` and `end` and turns the outcome into
// a promise.

const addon = require('./native')
const args = require('./args')
const { Holding } = require('./holding')
const { Holdings } = require('./holdings')
const { Lease } = require('./lease')
const { LossSignal } = require('./loss')
const { begin, cancellable } = require('./run')

/** The options `hold` knows. */
const HOLD_OPTIONS = ['signal', 'wait']

/** @typedef {import('./addon').NativeLock} NativeLock */

/** @typedef {import('../index').Lock} PublicLock */

/** @implements {PublicLock} */
class Lock {
  /** @type {NativeLock} */
  #native
  /** @type {import('./run').Running} */
  #running
  /** The lock's name, once read. @type {string | null} */
  #name = null

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
    return (this.#name ??= addon.lockName(this.#native))
  }

  /** The ttl of its leases, in milliseconds. */
  get ttl() {
    return addon.lockTtl(this.#native)
  }

  /** Its maxHold in milliseconds, or `null`. */
  get maxHold() {
    return addon.lockMaxHold(this.#native)
  }

  /** Its bound on waiting in line in milliseconds, or `null`. */
  get wait() {
    return addon.lockWait(this.#native)
  }

  /** The holder's margin before the store's expiry, in milliseconds (LOCK-04). */
  get margin() {
    return addon.lockMargin(this.#native)
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
  hold(key, fn, options) {
    try {
      args.string('key', key)
      args.func(fn)
      const given = args.options('hold options', options, HOLD_OPTIONS)
      const signal = args.signal(given.signal)
      const wait = args.duration('wait', given.wait)
      // Without a signal, a holding the addon had at the call comes as it
      // is, and only `fn` and the end are awaited (lib/run.js).
      const got = begin(
        (canceller) =>
          Holding.of(addon.lockBegin(this.#native, key, wait, canceller), key, this.name),
        signal,
        'gave up waiting for the key',
      )
      return got instanceof Promise
        ? got.then((holding) => this.#holdKey(/** @type {Holding} */ (holding), fn, signal))
        : this.#holdKey(/** @type {Holding} */ (got), fn, signal)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Waits in line for every key of `keys` at once (LOCK-22), runs
   * `fn(leases)` holding them all, and releases them all when `fn` settles.
   * Each lease is a lease of its own (its fence, deadline and loss), given
   * in the order of `keys`. All or none: when one key cannot be had (the
   * wait runs out, `options.signal` aborts), every lease taken is released
   * and every line left; a key named twice rejects INVALID_ARGUMENT. The
   * leases share one `signal`, aborted when any of them is lost; `holdMany`
   * then rejects with a LostError, even if `fn` resolved (LOCK-10).
   * Otherwise as `hold`.
   * @template T
   * @param {readonly string[]} keys
   * @param {(leases: Lease[]) => T | PromiseLike<T>} fn
   * @param {import('../index').HoldOptions} [options]
   * @returns {Promise<T>}
   */
  async holdMany(keys, fn, options) {
    const asked = args.strings('keys', keys)
    args.func(fn)
    const given = args.options('holdMany options', options, ['signal', 'wait'])
    const signal = args.signal(given.signal)
    const wait = args.duration('wait', given.wait)
    const holdings = /** @type {Holdings} */ (
      await begin(
        async (canceller) =>
          new Holdings(
            (await addon.lockBeginMany(this.#native, asked, wait, canceller)).map(
              (h, i) => new Holding(h, asked[i], this.name),
            ),
          ),
        signal,
        'gave up waiting for the keys',
      )
    )
    const loss = new LossSignal(holdings, 'one of the leases')
    const leases = holdings.natives.map((holding) => new Lease(holding, loss))
    return this.#running.run(holdings, leases, loss, fn, signal)
  }

  /**
   * Who holds `key` now, from a linearizable read of the store (WHO-02):
   * its holder's identity, fence, times and how many wait, or `null` when
   * nobody does. `options.signal` gives up waiting for the store's answer
   * (CANCELLED).
   * @param {string} key
   * @param {import('../index').SignalOptions} [options]
   * @returns {Promise<import('../index').HolderInfo | null>}
   */
  async holder(key, options) {
    args.string('key', key)
    const signal = args.signal(args.options('holder options', options, ['signal']).signal)
    return cancellable(
      (canceller) => addon.lockHolder(this.#native, key, canceller),
      signal,
      'gave up asking who holds the key',
    )
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
      async (canceller) => {
        const got = await addon.lockTryBegin(this.#native, key, canceller)
        return got === null ? null : new Holding(got, key, this.name)
      },
      signal,
      'gave up trying for the key',
    )
    return holding === null ? null : this.#holdKey(holding, fn, signal)
  }

  /**
   * Runs `fn` while `holding` holds its key (lib/run.js), told of the key's
   * loss when its store closes meanwhile.
   * @template T
   * @param {Holding} holding
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
