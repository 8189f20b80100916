'use strict'
// Locks: holding a key while a function runs (seed 000). The core waits in
// line, renews, keeps the deadline and releases; this file runs the JS
// function between `begin` and `end` and turns the outcome into a promise.

const native = require('./native')
const args = require('./args')
const { LeaseholdError, LostError, fromNative } = require('./errors')
const { Lease, abortLease, deliverLoss } = require('./lease')

/** @typedef {import('./addon').NativeLock} NativeLock */
/** @typedef {import('./addon').NativeHolding} NativeHolding */

/** @typedef {import('../index').Lock} PublicLock */

/**
 * The keys a store's locks hold while their functions run, so that closing
 * the store can tell each function of its loss before `close()` resolves.
 */
class Held {
  /** @type {Map<Lease, NativeHolding>} */
  #leases = new Map()

  /**
   * @param {Lease} lease
   * @param {NativeHolding} holding
   */
  add(lease, holding) {
    this.#leases.set(lease, holding)
  }

  /** @param {Lease} lease */
  delete(lease) {
    this.#leases.delete(lease)
  }

  /** Tells every function still running that its lease ended with the store. */
  async closed() {
    await Promise.all([...this.#leases].map(([lease, holding]) => deliverLoss(lease, holding)))
  }
}

/** @implements {PublicLock} */
class Lock {
  /** @type {NativeLock} */
  #native
  /** @type {Held} */
  #held

  /**
   * Made by `store.lock`; not for callers.
   * @param {NativeLock} native
   * @param {Held} held the store's held keys
   */
  constructor(native, held) {
    this.#native = native
    this.#held = held
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
    // An aborted signal asks nothing of the store (as AbortSignal users expect).
    if (signal?.aborted) throw cancelled(signal)
    const canceller = signal === null ? null : new native.Canceller()
    const giveUp = () => canceller?.cancel()
    signal?.addEventListener('abort', giveUp, { once: true })
    let holding
    try {
      holding = await this.#native.begin(key, wait, canceller)
    } catch (error) {
      throw fromNative(error, signal?.aborted ? { cause: signal.reason } : undefined)
    } finally {
      signal?.removeEventListener('abort', giveUp)
    }
    if (signal?.aborted) {
      // The grant raced the give-up: let it go at once, run nothing (LOCK-18).
      try {
        await holding.end()
      } catch {
        // Whatever became of the lease, the call was given up.
      }
      throw cancelled(signal)
    }
    return run(holding, fn, signal, this.#held)
  }

  /**
   * Runs `fn(lease)` holding `key` if it is free now; resolves `null` and
   * runs nothing when it is held (LOCK-17). Otherwise as `hold`.
   * @template T
   * @param {string} key
   * @param {(lease: Lease) => T | PromiseLike<T>} fn
   * @returns {Promise<T | null>}
   */
  async tryHold(key, fn) {
    args.string('key', key)
    args.func(fn)
    let holding
    try {
      holding = await this.#native.tryBegin(key)
    } catch (error) {
      throw fromNative(error)
    }
    return holding === null ? null : run(holding, fn, null, this.#held)
  }
}

/**
 * The error of a call given up by its signal: CANCELLED, with the signal's reason as cause.
 * @param {AbortSignal} signal
 * @returns {LeaseholdError}
 */
function cancelled(signal) {
  return new LeaseholdError('CANCELLED', 'gave up waiting for the key', { cause: signal.reason })
}

/**
 * Runs `fn` while `holding` holds its key, then ends the holding and
 * combines the two outcomes (LOCK-10, LOCK-11).
 * @template T
 * @param {NativeHolding} holding
 * @param {(lease: Lease) => T | PromiseLike<T>} fn
 * @param {AbortSignal | null} signal
 * @param {Held} held
 * @returns {Promise<T>}
 */
async function run(holding, fn, signal, held) {
  const lease = new Lease(holding)
  held.add(lease, holding)
  try {
    return await runHeld(holding, lease, fn, signal)
  } finally {
    held.delete(lease)
  }
}

/**
 * @template T
 * @param {NativeHolding} holding
 * @param {Lease} lease
 * @param {(lease: Lease) => T | PromiseLike<T>} fn
 * @param {AbortSignal | null} signal
 * @returns {Promise<T>}
 */
async function runHeld(holding, lease, fn, signal) {
  let cancelled = false
  const stop = () => {
    cancelled = true
    abortLease(lease, signal?.reason)
  }
  signal?.addEventListener('abort', stop, { once: true })
  /** @type {{ ok: true, value: T } | { ok: false, error: unknown }} */
  let outcome
  try {
    outcome = { ok: true, value: await fn(lease) }
  } catch (error) {
    outcome = { ok: false, error }
  } finally {
    signal?.removeEventListener('abort', stop)
  }
  try {
    await holding.end()
  } catch (error) {
    const failure = fromNative(error)
    if (!(failure instanceof LostError)) throw failure
    const lost = new LostError(
      failure.message,
      outcome.ok
        ? { lossReason: failure.lossReason, result: outcome.value }
        : { lossReason: failure.lossReason, cause: outcome.error },
    )
    abortLease(lease, lost)
    throw lost
  }
  if (cancelled) {
    const error = new LeaseholdError('CANCELLED', 'the hold was given up while its function ran', {
      cause: outcome.ok ? signal?.reason : outcome.error,
    })
    throw outcome.ok ? Object.assign(error, { result: outcome.value }) : error
  }
  if (!outcome.ok) throw outcome.error
  return outcome.value
}

module.exports = { Lock, Held, cancelled }
