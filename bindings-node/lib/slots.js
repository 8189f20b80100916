'use strict'
// Slot leases: a namespace of `limit` numbered slots, owners that
// lease one slot at a time, the leases with their floor and ceiling, and a
// slot held while a function runs. Which slot an acquire takes, what a
// renewal or a release changes, a held slot's renewal and its loss are the
// core's; this file checks the JS types and wraps the addon's objects.

const native = require('./native')
const args = require('./args')
const { LeaseholdError, fromNative } = require('./errors')
const { LossSignal, LossView } = require('./loss')
const { begin, cancellable } = require('./run')

/** @typedef {import('./addon').NativeOwner} NativeOwner */
/** @typedef {import('./addon').NativeSlots} NativeSlots */
/** @typedef {import('./addon').NativeSlotLease} NativeSlotLease */
/** @typedef {import('./addon').NativeSlotHolding} NativeSlotHolding */

/** @typedef {import('../index').Owner} PublicOwner */
/** @typedef {import('../index').Slots} PublicSlots */
/** @typedef {import('../index').SlotLease} PublicSlotLease */
/** @typedef {import('../index').HeldSlot} PublicHeldSlot */

/** The largest slot number and offset: node numbers are 32-bit. */
const MAX_U32 = 0xffff_ffff

/** The message of an acquire (or a hold's) given up by its signal. */
const GIVE_UP = 'gave up acquiring a slot'
/** The message of a renewal given up by its signal. */
const GIVE_UP_RENEWING = 'gave up renewing the slot'
/** The message of a release given up by its signal. */
const GIVE_UP_RELEASING = 'gave up releasing the slot'

/**
 * The options of an acquire and of a hold (`what`: their name in errors):
 * the preferred slot and the signal that gives up acquiring.
 * @param {string} what
 * @param {import('../index').SlotAcquireOptions | undefined} options
 * @returns {{ preferred: number | null, signal: AbortSignal | null }}
 */
function acquireOptions(what, options) {
  const given = args.options(what, options, ['preferred', 'signal'])
  const preferred = args.optionalIndex('preferred', given.preferred, MAX_U32)
  return { preferred, signal: args.signal(given.signal) }
}

/** @implements {PublicOwner} */
class Owner {
  /** @type {NativeOwner} */
  #native

  /**
   * An owner: a stable `key` (a service, a deployment) and the instance id
   * of this process; without `instance`, a fresh random one. Fails
   * EMPTY_NAME for an empty key or instance.
   * @param {string} key
   * @param {string} [instance]
   */
  constructor(key, instance) {
    args.string('owner key', key)
    const id = args.optionalString('owner instance', instance)
    try {
      this.#native = native.owner(key, id)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** The stable key. */
  get key() {
    return this.#native.key
  }

  /** This process's instance id. */
  get instance() {
    return this.#native.instance
  }

  /**
   * The native owner of `owner`, which must be an Owner.
   * @param {unknown} owner
   * @returns {NativeOwner}
   */
  static native(owner) {
    if (!(owner instanceof Owner)) {
      throw new LeaseholdError('INVALID_ARGUMENT', 'owner must be an Owner')
    }
    return owner.#native
  }
}

/** @implements {PublicSlotLease} */
class SlotLease {
  /** @type {NativeSlotLease} */
  #native
  /** @type {Owner | null} */
  #owner = null

  /**
   * Made by `slots.acquire` and `slots.renew`; not for callers.
   * @param {NativeSlotLease} native
   */
  constructor(native) {
    this.#native = native
  }

  /** The namespace. */
  get namespace() {
    return this.#native.namespace
  }

  /** The owner that holds the slot. */
  get owner() {
    this.#owner ??= new Owner(this.#native.ownerKey, this.#native.ownerInstance)
    return this.#owner
  }

  /** The slot, in `[0, limit)`. */
  get slot() {
    return this.#native.slot
  }

  /** The node number for IDs: the slot plus the namespace's offset. */
  get node() {
    return this.#native.node
  }

  /** The fence: larger than every fence the store gave before (SLOT-08). */
  get fence() {
    return this.#native.fence
  }

  /** Issue only timestamps above this one (ms on the store's clock). */
  get floor() {
    return this.#native.floor
  }

  /** When the lease expires unless renewed (ms on the store's clock). */
  get expiresAt() {
    return this.#native.expiresAt
  }

  /** Issue no timestamp past this one (ms on the store's clock). */
  get ceiling() {
    return this.#native.ceiling
  }

  /**
   * The native lease of `lease`, which must be a SlotLease.
   * @param {unknown} lease
   * @returns {NativeSlotLease}
   */
  static native(lease) {
    if (!(lease instanceof SlotLease)) {
      throw new LeaseholdError('INVALID_ARGUMENT', 'lease must be a SlotLease')
    }
    return lease.#native
  }
}

/**
 * Its loss (`lost`, `lossReason`, `signal`) is a LossView's.
 * @implements {PublicHeldSlot}
 */
class HeldSlot extends LossView {
  /** @type {NativeSlotHolding} */
  #native

  /**
   * Made by `slots.hold`; not for callers.
   * @param {NativeSlotHolding} native
   * @param {LossSignal} loss
   */
  constructor(native, loss) {
    super(native, loss)
    this.#native = native
    /** The slot, in `[0, limit)`. */
    this.slot = native.slot
    /** The node number for IDs: the slot plus the namespace's offset. */
    this.node = native.node
    /** The fence (SLOT-08); renewals keep it. */
    this.fence = native.fence
  }

  /** Issue only timestamps above this one (ms on the store's clock). */
  get floor() {
    return this.#native.floor
  }

  /** Issue no timestamp past this one (ms on the store's clock); renewals move it on. */
  get ceiling() {
    return this.#native.ceiling
  }

  /** The lease as last renewed. */
  get lease() {
    return new SlotLease(this.#native.lease)
  }

  /**
   * Records that timestamps up to `ms` were issued: the release hands the
   * largest recorded on as the slot's next holder's floor (SLOT-05).
   * @param {number | bigint} ms
   */
  issued(ms) {
    const last = args.millis('issued', ms)
    try {
      this.#native.issued(last)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** The largest timestamp recorded by `issued` (ms; 0: none). */
  get lastIssued() {
    return this.#native.lastIssued
  }

  /** Milliseconds left before the holder's deadline (0 once lost). */
  get remaining() {
    return this.#native.remaining
  }
}

/** @implements {PublicSlots} */
class Slots {
  /** @type {NativeSlots} */
  #native
  /** @type {import('./run').Running} */
  #running

  /**
   * Made by `store.slots`; not for callers.
   * @param {NativeSlots} native
   * @param {import('./run').Running} running the functions the store runs while they hold
   */
  constructor(native, running) {
    this.#native = native
    this.#running = running
  }

  /** The namespace's name. */
  get name() {
    return this.#native.name
  }

  /** The slots are `[0, limit)`. */
  get limit() {
    return this.#native.limit
  }

  /** The ttl of the leases, in milliseconds. */
  get ttl() {
    return this.#native.ttl
  }

  /** How far a lease's ceiling lies beyond its expiry, in milliseconds. */
  get tolerance() {
    return this.#native.tolerance
  }

  /** What a node number adds to the slot. */
  get offset() {
    return this.#native.offset
  }

  /** How long before a held slot's expiry its holder declares it lost, in milliseconds. */
  get margin() {
    return this.#native.margin
  }

  /**
   * Acquires a slot for `owner` (SLOT-01): the one it holds already, else
   * `preferred` if free, else the one its key held last if free, else the
   * lowest free slot; `null` when every slot is held (an outcome, not an
   * error). Fails TIMEOUT when the store does not answer within the
   * namespace's timeout, NAMESPACE_MISMATCH when the namespace was first
   * used with another limit, tolerance or offset, CANCELLED when `signal`
   * aborts first.
   * @param {Owner} owner
   * @param {import('../index').SlotAcquireOptions} [options]
   * @returns {Promise<SlotLease | null>}
   */
  async acquire(owner, options) {
    const who = Owner.native(owner)
    const { preferred, signal } = acquireOptions('slot acquire options', options)
    const lease = await cancellable(
      (canceller) => this.#native.acquire(who, preferred, canceller),
      signal,
      GIVE_UP,
    )
    return lease === null ? null : new SlotLease(lease)
  }

  /**
   * Acquires a slot for `owner` as `acquire` does, runs `fn(held)` holding
   * it, renewed in the background every ttl/3, and releases it when `fn`
   * settles with the largest timestamp `held.issued` recorded (SLOT-05).
   * Resolves with `fn`'s value, or `null` and runs nothing when every slot
   * is held (SLOT-01); rejects with `fn`'s error; rejects with a LostError
   * if the slot was lost while `fn` ran (`held.signal` aborts at once),
   * even if it resolved: `fn`'s value is its `result`, its error its
   * `cause`. `options.signal` gives up acquiring (CANCELLED); aborted while
   * `fn` runs, it aborts `held.signal` and `hold` rejects CANCELLED once
   * `fn` settles.
   * @template T
   * @param {Owner} owner
   * @param {(held: HeldSlot) => T | PromiseLike<T>} fn
   * @param {import('../index').SlotAcquireOptions} [options]
   * @returns {Promise<T | null>}
   */
  async hold(owner, fn, options) {
    const who = Owner.native(owner)
    args.func(fn)
    const { preferred, signal } = acquireOptions('slot hold options', options)
    const holding = await begin(
      (canceller) => this.#native.begin(who, preferred, canceller),
      signal,
      GIVE_UP,
    )
    if (holding === null) return null
    const loss = new LossSignal(holding, 'the slot')
    return this.#running.run(holding, new HeldSlot(holding, loss), loss, fn, signal)
  }

  /**
   * Renews `lease` for the namespace's ttl (SLOT-04): the fence stays, the
   * expiry and the ceiling never move back; `null` when the slot's owner or
   * fence no longer match. `options.signal` gives up waiting for the
   * store's answer (CANCELLED; the store may have renewed the lease).
   * @param {SlotLease} lease
   * @param {import('../index').SignalOptions} [options]
   * @returns {Promise<SlotLease | null>}
   */
  async renew(lease, options) {
    const held = SlotLease.native(lease)
    const signal = args.signal(args.options('slot renew options', options, ['signal']).signal)
    const renewed = await cancellable(
      (canceller) => this.#native.renew(held, canceller),
      signal,
      GIVE_UP_RENEWING,
    )
    return renewed === null ? null : new SlotLease(renewed)
  }

  /**
   * Releases `lease`, having issued timestamps up to `lastIssued` ms: the
   * slot's next holder gets the floor `max(floor, min(lastIssued,
   * ceiling))` (SLOT-05). `false` when the slot's owner or fence no longer
   * match; a release repeated by the same holder answers `true` again.
   * `options.signal` gives up waiting for the store's answer (CANCELLED;
   * the release goes on, and repeating it says how it ended).
   * @param {SlotLease} lease
   * @param {number | bigint} lastIssued
   * @param {import('../index').SignalOptions} [options]
   * @returns {Promise<boolean>}
   */
  async release(lease, lastIssued, options) {
    const held = SlotLease.native(lease)
    const last = args.millis('lastIssued', lastIssued)
    const signal = args.signal(args.options('slot release options', options, ['signal']).signal)
    return cancellable(
      (canceller) => this.#native.release(held, last, canceller),
      signal,
      GIVE_UP_RELEASING,
    )
  }
}

module.exports = { Owner, Slots, SlotLease, HeldSlot, MAX_U32 }
