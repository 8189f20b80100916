'use strict'
// Stores: `memory()` (embedded, in this process) and `connect(url)` (the
// server store or etcd), locks, manual leases, slot namespaces, ID
// generators and closing.

const native = require('./native')
const args = require('./args')
const { fromNative } = require('./errors')
const { Lock } = require('./lock')
const { cancellable, Running } = require('./run')
const { ManualLease } = require('./manual')
const { Slots, MAX_U32 } = require('./slots')
const { IdGenerator, IdLayout } = require('./ids')

/** @typedef {import('./addon').NativeStore} NativeStore */
/** @typedef {import('../index').HolderInfo} HolderInfo */

/** @typedef {import('../index').Store} PublicStore */

/** @implements {PublicStore} */
class Store {
  /** @type {NativeStore} */
  #native
  /** The functions its locks and slot namespaces run while they hold. */
  #running = new Running()

  /**
   * Made by `memory()` and `connect()`; not for callers.
   * @param {NativeStore} native
   */
  constructor(native) {
    this.#native = native
  }

  /**
   * The lock `name` with its options (LOCK-13): `ttl` (1 s to 1 h, 10 s by
   * default), `maxHold` (at least the ttl), `wait` (bound on time in line),
   * `margin` (default: a tenth of the ttl). Nothing is sent to the store.
   * @param {string} name
   * @param {import('../index').LockOptions} [options]
   * @returns {Lock}
   */
  lock(name, options) {
    args.string('lock name', name)
    const given = args.options('lock options', options, ['ttl', 'maxHold', 'wait', 'margin'])
    const ttl = args.duration('ttl', given.ttl)
    const maxHold = args.duration('maxHold', given.maxHold)
    const wait = args.duration('wait', given.wait)
    const margin = args.duration('margin', given.margin)
    try {
      return new Lock(this.#native.lock(name, ttl, maxHold, wait, margin), this.#running)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /**
   * The slot namespace `name` with its options: `limit` slots
   * (1 to 65536, 1024 by default), `ttl` of the leases (1 s to 1 h, 10 s
   * by default), `tolerance` of their ceilings (at most 1 h, 1 s by
   * default), `offset` added to a slot to make its node number (0 by
   * default), `margin` before a held slot's expiry at which its holder
   * declares it lost (a tenth of the ttl by default, below half of it),
   * `timeout` of each call (5 s by default; TIMEOUT past it).
   * Nothing is sent to the store.
   * @param {string} name
   * @param {import('../index').SlotsOptions} [options]
   * @returns {Slots}
   */
  slots(name, options) {
    args.string('slot namespace', name)
    const given = args.options('slots options', options, [
      'limit',
      'ttl',
      'tolerance',
      'offset',
      'margin',
      'timeout',
    ])
    const limit = args.optionalIndex('limit', given.limit, MAX_U32)
    const ttl = args.duration('ttl', given.ttl)
    const tolerance = args.duration('tolerance', given.tolerance)
    const offset = args.optionalIndex('offset', given.offset, MAX_U32)
    const margin = args.duration('margin', given.margin)
    const timeout = args.duration('timeout', given.timeout)
    try {
      const chosen = present({ limit, ttl, tolerance, offset, margin, timeout })
      return new Slots(this.#native.slots(name, chosen), this.#running)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /**
   * An ID generator on the namespace `name` (IDGEN): leases a slot under
   * `ownerKey` ('leasehold-ids' by default) with a fresh instance id, and
   * issues IDs in `layout` (IdLayout.DEFAULT by default; fixed by the
   * namespace's first use) above the slot's floor, at most `maxLead` (1 s
   * by default) ahead of the store's clock. `limit` (as many as the
   * layout's node bits hold above `offset`, at most 65536), `offset` (0),
   * `ttl`, `tolerance`, `timeout` and `preferred` are the slot
   * namespace's and the acquire's (`store.slots`). Rejects NOT_READY when
   * every slot is held, NAMESPACE_MISMATCH when the namespace was first
   * used otherwise, INVALID_ARGUMENT when the node numbers do not fit the
   * layout, CANCELLED when `signal` aborts first.
   * @param {string} name
   * @param {import('../index').IdsOptions} [options]
   * @returns {Promise<IdGenerator>}
   */
  async ids(name, options) {
    args.string('ID namespace', name)
    const given = args.options('ids options', options, [
      'layout',
      'limit',
      'offset',
      'ttl',
      'tolerance',
      'timeout',
      'maxLead',
      'ownerKey',
      'preferred',
      'signal',
    ])
    const layout =
      given.layout === undefined || given.layout === null ? null : IdLayout.native(given.layout)
    const chosen = present({
      limit: args.optionalIndex('limit', given.limit, MAX_U32),
      offset: args.optionalIndex('offset', given.offset, MAX_U32),
      ttl: args.duration('ttl', given.ttl),
      tolerance: args.duration('tolerance', given.tolerance),
      timeout: args.duration('timeout', given.timeout),
      maxLead: args.duration('maxLead', given.maxLead),
      ownerKey: args.optionalString('ownerKey', given.ownerKey),
      preferred: args.optionalIndex('preferred', given.preferred, MAX_U32),
    })
    const signal = args.signal(given.signal)
    const ids = await cancellable(
      (canceller) => this.#native.ids(name, layout, chosen, canceller),
      signal,
      'gave up opening the ID generator',
    )
    return new IdGenerator(ids)
  }

  /**
   * Takes the manual lease `name` if nobody holds it; `null` when another
   * holder has it (MANUAL-01). `ttl`: 1 s to 1 h, 10 s by default.
   * `signal` gives up waiting for the store's answer (CANCELLED; a lease
   * that answers later is released at once).
   * @param {string} name
   * @param {import('../index').TryAcquireOptions} [options]
   * @returns {Promise<ManualLease | null>}
   */
  async tryAcquire(name, options) {
    args.string('lease name', name)
    const given = args.options('tryAcquire options', options, ['ttl', 'signal'])
    const ttl = args.duration('ttl', given.ttl)
    const signal = args.signal(given.signal)
    const lease = await cancellable(
      (canceller) => this.#native.tryAcquire(name, ttl, canceller),
      signal,
      'gave up trying for the lease',
    )
    return lease === null ? null : new ManualLease(lease)
  }

  /**
   * Waits for the manual lease `name` (MANUAL-02), at most `wait`
   * (WAIT_TIMEOUT), until `signal` aborts (CANCELLED); the ttl starts at the grant.
   * @param {string} name
   * @param {import('../index').AcquireOptions} [options]
   * @returns {Promise<ManualLease>}
   */
  async acquire(name, options) {
    args.string('lease name', name)
    const given = args.options('acquire options', options, ['ttl', 'wait', 'signal'])
    const ttl = args.duration('ttl', given.ttl)
    const wait = args.duration('wait', given.wait)
    const signal = args.signal(given.signal)
    const lease = await cancellable(
      (canceller) => this.#native.acquire(name, ttl, wait, canceller),
      signal,
      'gave up waiting for the key',
    )
    return new ManualLease(lease)
  }

  /**
   * The holders of lock `lock` (or of every lock). `options.signal` gives
   * up waiting for the store's answer (CANCELLED).
   * @param {string} [lock]
   * @param {import('../index').SignalOptions} [options]
   * @returns {Promise<HolderInfo[]>}
   */
  async holders(lock, options) {
    const name = args.optionalString('lock', lock)
    const signal = args.signal(args.options('holders options', options, ['signal']).signal)
    return cancellable(
      (canceller) => this.#native.holders(name, canceller),
      signal,
      'gave up listing the holders',
    )
  }

  /**
   * Closes the store: every lease it gave ends (its holders see LOST, and
   * each `lease.signal` has aborted when `close` resolves), every waiting
   * call fails CLOSED, later calls fail CLOSED.
   * @returns {Promise<void>}
   */
  async close() {
    try {
      await this.#native.close()
    } catch (error) {
      throw fromNative(error)
    }
    this.#running.closed()
  }
}

/**
 * The options that were given: the addon reads an absent option as the
 * core's default (Node-API reads `null` as a value of the wrong type).
 * @template {Record<string, unknown>} O
 * @param {O} options
 * @returns {{ [K in keyof O]?: Exclude<O[K], null> }}
 */
function present(options) {
  const given = Object.entries(options).filter(([, value]) => value !== null)
  return /** @type {{ [K in keyof O]?: Exclude<O[K], null> }} */ (Object.fromEntries(given))
}

/**
 * An embedded store in this process: holders need no renewal (LOCK-19).
 * @returns {Store}
 */
function memory() {
  return new Store(native.memory())
}

/**
 * PEM text given as a string or bytes; `undefined` is "not given".
 * @param {string} what
 * @param {unknown} value
 * @returns {string | null}
 */
function pem(what, value) {
  if (value === undefined || value === null) return null
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8')
  return args.string(what, value)
}

/**
 * Connects to the store at `url`: the server store (`leasehold://host:port`,
 * or `leaseholds://` for TLS with `tls.ca`, the certificates to trust), or
 * etcd (`etcd://h1:2379,h2:2379/PREFIX`, or `etcds://`; DIST-01) or
 * PostgreSQL (`postgres://user@h1,h2/db`; PG-01) as `user` with `password`, presenting `clientCert` and `clientKey`. `signal` gives
 * up connecting (CANCELLED; a store that connects later is closed at once).
 * @param {string} url
 * @param {import('../index').ConnectOptions} [options]
 * @returns {Promise<Store>}
 */
async function connect(url, options) {
  args.string('url', url)
  const given = args.options('connect options', options, [
    'token',
    'tls',
    'user',
    'password',
    'clientCert',
    'clientKey',
    'acceptOldEtcd',
    'connectTimeout',
    'identity',
    'signal',
  ])
  const tls = args.options('tls', given.tls, ['ca'])
  // Absent, not null: the addon's options object takes no nulls.
  const nativeOptions = {
    token: args.optionalString('token', given.token) ?? undefined,
    caPem: pem('tls.ca', tls.ca) ?? undefined,
    user: args.optionalString('user', given.user) ?? undefined,
    password: args.optionalString('password', given.password) ?? undefined,
    clientCertPem: pem('clientCert', given.clientCert) ?? undefined,
    clientKeyPem: pem('clientKey', given.clientKey) ?? undefined,
    acceptOldEtcd: args.flag('acceptOldEtcd', given.acceptOldEtcd),
    connectTimeout: args.duration('connectTimeout', given.connectTimeout) ?? undefined,
    identity: args.optionalString('identity', given.identity) ?? undefined,
  }
  const signal = args.signal(given.signal)
  const store = await cancellable(
    (canceller) => native.connect(url, nativeOptions, canceller),
    signal,
    'gave up connecting to the store',
  )
  return new Store(store)
}

module.exports = { Store, memory, connect }
