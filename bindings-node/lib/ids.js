'use strict'
// ID generators (IDGEN): unique 64-bit IDs of timestamp | node | sequence,
// issued on a slot lease of a namespace, and the layouts of their bits.
// Issuing, waiting, sealing, the release and a layout's checks and parts
// are the core's; this file checks the JS types and wraps the addon's objects.

const native = require('./native')
const args = require('./args')
const { LeaseholdError, fromNative } = require('./errors')
const { cancellable } = require('./run')
const { SlotLease, MAX_U32 } = require('./slots')

/** @typedef {import('./addon').NativeIdLayout} NativeIdLayout */
/** @typedef {import('./addon').NativeIdGenerator} NativeIdGenerator */

/** @typedef {import('../index').IdLayout} PublicIdLayout */
/** @typedef {import('../index').IdGenerator} PublicIdGenerator */
/** @typedef {import('../index').IdParts} IdParts */

/** The message of a `next` or a `take` given up by its signal. */
const GIVE_UP_WAITING = 'gave up waiting for IDs'

/**
 * A required whole number from 0 to 2^32 - 1 (ranges are the core's to check).
 * @param {string} what
 * @param {unknown} value
 * @returns {number}
 */
function whole(what, value) {
  const n = args.optionalIndex(what, value, MAX_U32)
  if (n === null) throw new LeaseholdError('INVALID_ARGUMENT', `${what} is required`)
  return n
}

/**
 * An ID as the addon takes it: a bigint from 0 to 2^64 - 1, or a whole
 * number up to 2^53 - 1 (a `jsSafe()` layout's IDs are exact as numbers).
 * @param {unknown} value
 * @returns {bigint}
 */
function idArg(value) {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value)
  if (typeof value === 'bigint' && value >= 0n && value <= 0xffff_ffff_ffff_ffffn) return value
  const shown = typeof value === 'bigint' ? `${value}n` : String(value)
  throw new LeaseholdError(
    'INVALID_ARGUMENT',
    `an ID must be a bigint from 0 to 2^64 - 1 or a whole number up to 2^53 - 1, got ${shown}`,
  )
}

/** @implements {PublicIdLayout} */
class IdLayout {
  /** @type {NativeIdLayout} */
  #native

  /**
   * Made by `IdLayout.DEFAULT`, `jsSafe`, `seconds`, `custom`; not for callers.
   * @param {NativeIdLayout} native
   */
  constructor(native) {
    this.#native = native
  }

  /**
   * IDs below 2^53, exact as JS numbers: 41 bits of milliseconds, 6 of node
   * (64 nodes), 6 of sequence (64 IDs per millisecond per node).
   * @returns {IdLayout}
   */
  static jsSafe() {
    return new IdLayout(native.jsSafeIdLayout())
  }

  /**
   * A layout in seconds: 31 bits of seconds (68 years), 10 of node, 22 of
   * sequence (4,194,304 IDs per second per node).
   * @returns {IdLayout}
   */
  static seconds() {
    return new IdLayout(native.secondsIdLayout())
  }

  /**
   * A layout of these splits, high bits to low, with ticks of `tickMs`
   * (1 by default) from `epochMs` (2026-01-01 by default; ms since the
   * Unix epoch, a whole number or a bigint). Throws INVALID_ARGUMENT
   * unless each part has a bit, the three at most 63, a tick 1 ms to 1 h.
   * @param {number} timeBits
   * @param {number} nodeBits
   * @param {number} sequenceBits
   * @param {import('../index').IdLayoutOptions} [options]
   * @returns {IdLayout}
   */
  static custom(timeBits, nodeBits, sequenceBits, options) {
    const given = args.options('layout options', options, ['tickMs', 'epochMs'])
    const time = whole('timeBits', timeBits)
    const node = whole('nodeBits', nodeBits)
    const sequence = whole('sequenceBits', sequenceBits)
    const tickMs = args.optionalIndex('tickMs', given.tickMs, MAX_U32)
    const epochMs =
      given.epochMs === undefined || given.epochMs === null
        ? null
        : args.millis('epochMs', given.epochMs)
    try {
      return new IdLayout(native.customIdLayout(time, node, sequence, tickMs, epochMs))
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** Bits of timestamp (ticks since the epoch). */
  get timeBits() {
    return this.#native.timeBits
  }

  /** Bits of node number. */
  get nodeBits() {
    return this.#native.nodeBits
  }

  /** Bits of sequence within one tick. */
  get sequenceBits() {
    return this.#native.sequenceBits
  }

  /** The length of one tick in milliseconds. */
  get tickMs() {
    return this.#native.tickMs
  }

  /** The time of tick 0, in milliseconds since the Unix epoch. */
  get epochMs() {
    return this.#native.epochMs
  }

  /**
   * Takes an ID apart: its tick, the tick's start (ms since the Unix
   * epoch), its node and its sequence.
   * @param {bigint | number} id
   * @returns {IdParts}
   */
  parts(id) {
    const value = idArg(id)
    try {
      return this.#native.parts(value)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** The layout as errors and benchmarks name it: `41/10/12 ms`. */
  toString() {
    return this.#native.describe()
  }

  /**
   * The native layout of `layout`, which must be an IdLayout.
   * @param {unknown} layout
   * @returns {NativeIdLayout}
   */
  static native(layout) {
    if (!(layout instanceof IdLayout)) {
      throw new LeaseholdError('INVALID_ARGUMENT', 'layout must be an IdLayout')
    }
    return layout.#native
  }

  /** The default layout: 41 bits of milliseconds from 2026-01-01, 10 of node, 12 of sequence. */
  static DEFAULT = new IdLayout(native.defaultIdLayout())
}

/** @implements {PublicIdGenerator} */
class IdGenerator {
  /** @type {NativeIdGenerator} */
  #native
  /** Issues the next ID without waiting: the addon's function bound to this generator. */
  #next
  /** @type {IdLayout | null} */
  #layout = null

  /**
   * Made by `store.ids`; not for callers.
   * @param {NativeIdGenerator} native
   */
  constructor(native) {
    this.#native = native
    this.#next = native.bindNext()
  }

  /**
   * The next ID, without waiting: throws NOT_READY when none can be issued
   * yet (retryable), OVERFLOW when the layout's time range is used up,
   * LOST once the slot was lost or the generator closed (IDGEN-04).
   * @returns {bigint}
   */
  nextNow() {
    try {
      return this.#next()
    } catch (error) {
      throw fromNative(error)
    }
  }

  /**
   * The next ID, waiting while none can be issued yet: the non-waiting
   * path first, then the core's wait. `signal` gives up waiting (CANCELLED).
   * @param {import('../index').SignalOptions} [options]
   * @returns {Promise<bigint>}
   */
  async next(options) {
    const signal = args.signal(args.options('next options', options, ['signal']).signal)
    if (!signal?.aborted) {
      try {
        return this.#next()
      } catch (error) {
        const { code } = /** @type {{ code?: unknown }} */ (error)
        if (code !== 'NOT_READY') throw fromNative(error)
      }
    }
    return cancellable((canceller) => this.#native.nextAsync(canceller), signal, GIVE_UP_WAITING)
  }

  /**
   * As many IDs as can be issued now, up to `n` (at least 1), in one step;
   * throws as `nextNow` when none can.
   * @param {number} n 1 to 16,777,216
   * @returns {BigUint64Array}
   */
  takeNow(n) {
    const count = whole('n', n)
    try {
      return this.#native.takeNow(count)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /**
   * `n` IDs, waiting while they cannot be issued yet. `signal` gives up
   * waiting (CANCELLED; the IDs taken so far are skipped).
   * @param {number} n 1 to 16,777,216
   * @param {import('../index').SignalOptions} [options]
   * @returns {Promise<BigUint64Array>}
   */
  async take(n, options) {
    const count = whole('n', n)
    const signal = args.signal(args.options('take options', options, ['signal']).signal)
    return cancellable((canceller) => this.#native.take(count, canceller), signal, GIVE_UP_WAITING)
  }

  /**
   * Seals the generator (nothing is issued after this) and releases its
   * slot, passing the last issued tick on as the next holder's floor
   * (IDGEN-02). Rejects with a LostError if the slot was lost meanwhile; a
   * second close does nothing.
   * @returns {Promise<void>}
   */
  async close() {
    try {
      await this.#native.close()
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** The node number every ID carries: the slot plus the namespace's offset. */
  get node() {
    return this.#native.node
  }

  /** The layout of the IDs, fixed by the namespace's first use. */
  get layout() {
    this.#layout ??= new IdLayout(this.#native.layout)
    return this.#layout
  }

  /** The slot lease as last renewed. */
  get lease() {
    return new SlotLease(this.#native.lease)
  }

  /** The start of the largest tick issued so far (ms since the Unix epoch; 0: none). */
  get lastIssued() {
    return this.#native.lastIssued
  }

  /** Whether the slot was lost; once true, nothing more is issued. */
  get lost() {
    return this.#native.lost
  }
}

module.exports = { IdLayout, IdGenerator }
