// Slot leases through the Node binding, on the embedded store and
// on a real server store process: SLOT-01 (which slot an acquire takes),
// SLOT-05 (the next holder's floor after a release), SLOT-07 (a timeout of a
// frozen server is recognisable, apart from outcomes), and the ERR-01 codes
// of bad input (ERR-03), NamespaceMismatch among them.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import {
  connect,
  isTimeout,
  LeaseholdError,
  LostError,
  memory,
  Owner,
  SlotLease,
  Slots,
} from 'leasehold'
import { memory as testMemory, VirtualClock } from 'leasehold/testing'

import { fails } from './helpers/errors.mjs'
import { serverFixture, startServer } from './helpers/server.mjs'
import { orHang } from './helpers/wait.mjs'

/**
 * The lease `slots.acquire` answers, which must not be `null`.
 * @param {Slots} slots
 * @param {Owner} owner
 * @param {import('leasehold').SlotAcquireOptions} [options]
 */
async function leased(slots, owner, options) {
  const lease = await slots.acquire(owner, options)
  assert.ok(lease instanceof SlotLease, `${owner.key} got no slot`)
  return lease
}

function slotSuite(/** @type {string} */ kind, /** @type {() => Promise<any>} */ open) {
  describe(`slot leases on the ${kind} store`, () => {
    /** @type {import('leasehold').Store} */
    let store
    before(async () => {
      store = await open()
    })
    after(() => store.close())

    // SLOT-01: the held slot, then preferred, then the key's last slot, then the lowest free; Exhausted is null.
    test('SLOT-01 acquire takes the held slot, preferred, the key’s last, the lowest free', async () => {
      const slots = store.slots('slot-01', { limit: 4, ttl: '30s' })
      assert.ok(slots instanceof Slots)
      assert.deepEqual(
        [slots.name, slots.limit, slots.ttl, slots.tolerance, slots.offset],
        ['slot-01', 4, 30_000, 1_000, 0],
      )
      const alpha = new Owner('alpha')
      const first = await leased(slots, alpha)
      assert.equal(first.slot, 0, 'the lowest free slot')
      assert.equal(first.node, 0)
      assert.equal(first.namespace, 'slot-01')
      assert.equal(first.owner.key, 'alpha')
      assert.equal(first.owner.instance, alpha.instance)
      assert.equal(typeof first.fence, 'bigint')
      assert.ok(first.floor < first.expiresAt && first.expiresAt < first.ceiling)
      assert.equal(first.ceiling - first.expiresAt, 1_000, 'ceiling = expiry + tolerance')

      // The slot the owner holds comes back, same fence, whatever it prefers.
      const again = await leased(slots, alpha, { preferred: 3 })
      assert.equal(again.slot, 0)
      assert.equal(again.fence, first.fence)

      const beta = new Owner('beta')
      const betaLease = await leased(slots, beta, { preferred: 2 })
      assert.equal(betaLease.slot, 2, 'preferred, when free')
      assert.ok(betaLease.fence > first.fence)
      const gamma = await leased(slots, new Owner('gamma'), { preferred: 2 })
      assert.equal(gamma.slot, 1, 'preferred is held: the lowest free slot')
      const delta = await leased(slots, new Owner('delta'))
      assert.equal(delta.slot, 3)

      // Every slot is held: null, not an error, with or without a preference.
      const late = new Owner('late')
      assert.equal(await slots.acquire(late), null)
      assert.equal(await slots.acquire(late, { preferred: 0 }), null)

      // A new process of beta's key gets the slot its key held last, not the lowest free one.
      assert.equal(await slots.release(first, first.floor), true)
      assert.equal(await slots.release(betaLease, betaLease.floor), true)
      const reborn = new Owner('beta')
      assert.notEqual(reborn.instance, beta.instance)
      const back = await leased(slots, reborn)
      assert.equal(back.slot, 2, 'the key’s last slot')
      assert.ok(back.fence > betaLease.fence)
      assert.equal(back.owner.instance, reborn.instance)
      // ... and its preference comes before that.
      assert.equal(await slots.release(back, back.floor), true)
      const preferring = await leased(slots, new Owner('beta'), { preferred: 0 })
      assert.equal(preferring.slot, 0)
      const lowest = await leased(slots, new Owner('epsilon'))
      assert.equal(lowest.slot, 2, 'the only free slot')
      assert.equal(await slots.acquire(late), null)
    })

    // SLOT-01: the offset moves node numbers, not the slot chosen.
    test('SLOT-01 an offset adds to the node number only', async () => {
      const slots = store.slots('slot-01-offset', { limit: 2, offset: 100, tolerance: '2s' })
      const lease = await leased(slots, new Owner('worker', 'pod-1'))
      assert.deepEqual([lease.slot, lease.node], [0, 100])
      assert.equal(lease.owner.instance, 'pod-1')
      assert.equal(lease.ceiling - lease.expiresAt, 2_000)
      const renewed = await slots.renew(lease)
      assert.ok(renewed !== null)
      assert.equal(renewed.fence, lease.fence)
      assert.ok(renewed.expiresAt >= lease.expiresAt)
      assert.equal(await slots.release(renewed, 0n), true)
    })

    // SLOT-05: the next floor is max(floor, min(lastIssued, ceiling)); stale releases are false; a repeat is true and changes nothing.
    test('SLOT-05 release sets the next holder’s floor', async () => {
      const slots = store.slots('slot-05', { limit: 1, ttl: '30s', tolerance: '2s' })
      const first = await leased(slots, new Owner('first'))
      // lastIssued below the ceiling: the next floor is lastIssued.
      const below = first.floor + 10
      assert.ok(below < first.ceiling)
      assert.equal(await slots.release(first, below), true)
      assert.equal(await slots.release(first, below), true, 'a repeat answers true')
      assert.equal(await slots.release(first, first.ceiling), true, 'and changes nothing')
      const second = await leased(slots, new Owner('second'))
      assert.equal(second.floor, Math.max(first.floor, Math.min(below, first.ceiling)))
      assert.equal(second.floor, below)
      assert.ok(second.fence > first.fence)

      // A stale lease (the slot was taken since) neither releases nor renews.
      assert.equal(await slots.release(first, second.ceiling + 60_000), false)
      assert.equal(await slots.renew(first), null)

      // lastIssued above the ceiling: the next floor is the ceiling.
      assert.equal(await slots.release(second, BigInt(second.ceiling + 60_000)), true)
      const third = await leased(slots, new Owner('third'))
      assert.equal(third.floor, second.ceiling)
      assert.equal(await slots.release(second, 0), false, 'stale once the slot is taken again')

      // lastIssued below the floor: the floor never goes back.
      assert.equal(await slots.release(third, 0), true)
      const fourth = await leased(slots, new Owner('fourth'))
      assert.equal(fourth.floor, third.floor)
      assert.equal(await slots.release(fourth, fourth.floor), true)
    })

    // ERR-01, ERR-03: bad input fails with its code and never crashes; NamespaceMismatch is an outcome, not a timeout.
    test('ERR-03 bad slot input fails with ERR-01 codes; NAMESPACE_MISMATCH', async () => {
      const any = /** @type {any} */ (store)
      assert.throws(() => store.slots(''), fails('EMPTY_NAME'))
      assert.throws(() => store.slots('k'.repeat(2048)), fails('INVALID_ARGUMENT'))
      for (const name of [undefined, null, 42, {}, 1n]) {
        assert.throws(() => any.slots(name), fails('INVALID_ARGUMENT'))
      }
      for (const limit of [0, 65_537, -1, 1.5, '4', Number.NaN, 2 ** 32]) {
        assert.throws(() => any.slots('bad', { limit }), fails('INVALID_ARGUMENT'), String(limit))
      }
      for (const offset of [-1, 0.5, '1', 2 ** 32]) {
        assert.throws(() => any.slots('bad', { offset }), fails('INVALID_ARGUMENT'), String(offset))
      }
      assert.throws(() => store.slots('bad', { offset: 2 ** 32 - 2 }), fails('INVALID_ARGUMENT'))
      for (const options of [
        { ttl: '0s' },
        { ttl: 999 },
        { ttl: '2h' },
        { ttl: 'soon' },
        { ttl: -1 },
        { ttl: {} },
        { tolerance: '2h' },
        { tolerance: 'x' },
        { timeout: 0 },
        { timeout: '0s' },
        { timeout: [] },
      ]) {
        assert.throws(
          () => any.slots('bad', options),
          fails('INVALID_TTL'),
          JSON.stringify(options),
        )
      }
      assert.throws(() => any.slots('bad', { limits: 4 }), fails('INVALID_ARGUMENT'))
      assert.throws(() => any.slots('bad', 4), fails('INVALID_ARGUMENT'))

      assert.throws(() => new Owner(''), fails('EMPTY_NAME'))
      assert.throws(() => new Owner('key', ''), fails('EMPTY_NAME'))
      assert.throws(() => new Owner('k'.repeat(2048)), fails('INVALID_ARGUMENT'))
      const AnyOwner = /** @type {any} */ (Owner)
      for (const key of [undefined, 42, {}]) {
        assert.throws(() => new AnyOwner(key), fails('INVALID_ARGUMENT'))
      }
      assert.throws(() => new AnyOwner('key', 7), fails('INVALID_ARGUMENT'))

      const slots = store.slots('err-slots', { limit: 2 })
      const anySlots = /** @type {any} */ (slots)
      const owner = new Owner('err')
      for (const preferred of [2, 100, 2 ** 32 - 1]) {
        await assert.rejects(slots.acquire(owner, { preferred }), fails('INVALID_ARGUMENT'))
      }
      for (const preferred of [-1, 0.5, '0', 2 ** 32, 1n]) {
        await assert.rejects(anySlots.acquire(owner, { preferred }), fails('INVALID_ARGUMENT'))
      }
      for (const who of [undefined, null, 'err', { key: 'err', instance: 'x' }]) {
        await assert.rejects(anySlots.acquire(who), fails('INVALID_ARGUMENT'))
      }
      await assert.rejects(anySlots.acquire(owner, { prefered: 0 }), fails('INVALID_ARGUMENT'))
      await assert.rejects(anySlots.acquire(owner, { signal: {} }), fails('INVALID_ARGUMENT'))
      const lease = await leased(slots, owner)
      for (const last of [-1, 1.5, '5', 2n ** 64n, -1n, Number.MAX_SAFE_INTEGER + 2, undefined]) {
        await assert.rejects(anySlots.release(lease, last), fails('INVALID_ARGUMENT'))
      }
      for (const bad of [undefined, null, {}, owner]) {
        await assert.rejects(anySlots.release(bad, 0), fails('INVALID_ARGUMENT'))
        await assert.rejects(anySlots.renew(bad), fails('INVALID_ARGUMENT'))
      }
      // A signal aborted before the call asks nothing of the store.
      const reason = new Error('stop')
      await assert.rejects(slots.acquire(owner, { signal: AbortSignal.abort(reason) }), (e) => {
        assert.ok(e instanceof LeaseholdError && e.code === 'CANCELLED')
        assert.equal(e.cause, reason)
        return !isTimeout(e)
      })

      // NamespaceMismatch (SLOT-02): another limit, tolerance or offset than the first use.
      for (const options of [
        { limit: 3 },
        { limit: 2, tolerance: '2s' },
        { limit: 2, offset: 1 },
      ]) {
        await assert.rejects(
          store.slots('err-slots', options).acquire(new Owner('other')),
          fails('NAMESPACE_MISMATCH'),
          JSON.stringify(options),
        )
      }
      // Another ttl is not part of the namespace.
      assert.ok((await store.slots('err-slots', { limit: 2, ttl: '1m' }).acquire(owner)) !== null)
      assert.equal(await slots.release(lease, 2n ** 64n - 1n), true)

      const closing = await open()
      const closed = closing.slots('closed')
      await closing.close()
      assert.throws(() => closing.slots('closed'), fails('CLOSED'))
      await assert.rejects(closed.acquire(owner), fails('CLOSED'))
    })
  })
}

slotSuite('embedded', async () => memory())

describe('slot leases on the server store', () => {
  const server = serverFixture()
  slotSuite('server', () => connect(server.url))
})

// LOCK-14, ERR-01: a read-only connection may not lease slots: PERMISSION_DENIED, not a timeout.
test('ERR-01 a read-only token may not acquire a slot', async () => {
  const guarded = await startServer({ tokens: ['writer-token write', 'reader-token read'] })
  try {
    const reader = await connect(guarded.url, { token: 'reader-token' })
    await assert.rejects(
      reader.slots('guarded').acquire(new Owner('reader')),
      fails('PERMISSION_DENIED'),
    )
    const writer = await connect(guarded.url, { token: 'writer-token' })
    const lease = await leased(writer.slots('guarded'), new Owner('writer'))
    await assert.rejects(reader.slots('guarded').renew(lease), fails('PERMISSION_DENIED'))
    await assert.rejects(reader.slots('guarded').release(lease, 0), fails('PERMISSION_DENIED'))
    assert.equal(await writer.slots('guarded').release(lease, 0), true)
    await reader.close()
    await writer.close()
  } finally {
    await guarded.stop()
  }
})

// SLOT-01: an expired slot is free again; its new holder's floor covers the old ceiling (SLOT-06).
test('SLOT-01 an expired slot is free (virtual clock)', async () => {
  const clock = new VirtualClock()
  const store = testMemory({ clock })
  try {
    const slots = store.slots('expiring', { limit: 1, ttl: '1s', tolerance: '500ms' })
    const old = await leased(slots, new Owner('old'))
    assert.equal(old.expiresAt - old.floor > 0, true)
    const newcomer = new Owner('new')
    assert.equal(await slots.acquire(newcomer), null, 'held until it expires')
    await clock.advance(500)
    const renewed = await slots.renew(old)
    assert.ok(renewed !== null)
    assert.equal(renewed.fence, old.fence)
    assert.equal(renewed.expiresAt, old.expiresAt + 500, 'expiry = store now + ttl')
    assert.equal(await slots.acquire(newcomer), null)
    await clock.advance('1s')
    const taken = await leased(slots, newcomer)
    assert.equal(taken.slot, 0)
    assert.ok(taken.fence > old.fence)
    assert.equal(
      taken.floor,
      renewed.ceiling,
      'the expired holder may have issued up to its ceiling',
    )
    assert.equal(await slots.renew(renewed), null)
    assert.equal(await slots.release(renewed, 0), false)
  } finally {
    await store.close()
  }
})

// SLOT-07: a frozen server store makes acquire fail TIMEOUT, which isTimeout tells apart from outcomes.
describe('SLOT-07 timeouts of a frozen server store', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let server
  /** @type {import('leasehold').Store} */
  let store
  let frozen = false
  before(async () => {
    server = await startServer()
    store = await connect(server.url)
  })
  after(async () => {
    if (frozen) server.thaw()
    await store?.close()
    await server.stop()
  })

  /** Freezes the server, runs `body`, and thaws it whatever happens. */
  async function whileFrozen(/** @type {() => Promise<void>} */ body) {
    await server.freeze()
    frozen = true
    try {
      await body()
    } finally {
      server.thaw()
      frozen = false
    }
  }

  // The calls that must answer keep the default bound (5 s); those to the
  // frozen server, which must time out, 300 ms. A timed-out call ends no
  // sooner than its bound; how much later is printed (the server stays
  // frozen until they ended: a call that waited for it would never end).
  test('SLOT-07 acquire on a frozen server fails TIMEOUT and isTimeout is true', async () => {
    const answering = store.slots('frozen', { limit: 1 })
    const slots = store.slots('frozen', { limit: 1, timeout: 300 })
    const held = await leased(answering, new Owner('before'))
    await whileFrozen(async () => {
      const started = Date.now()
      const error = await orHang(slots.acquire(new Owner('during')), 'acquire').then(
        () => assert.fail('a frozen server answered'),
        (/** @type {unknown} */ e) => e,
      )
      const took = Date.now() - started
      console.log(`SLOT-07: a 300 ms call to a frozen server timed out after ${took} ms`)
      assert.ok(error instanceof LeaseholdError, String(error))
      assert.equal(error.code, 'TIMEOUT', error.message)
      assert.equal(isTimeout(error), true)
      assert.equal(isTimeout(new Error('the id generator stopped', { cause: error })), true)
      assert.ok(took >= 250, `took ${took} ms`)
      // Renew and release are bounded the same way.
      await assert.rejects(slots.renew(held), (e) => isTimeout(e))
      await assert.rejects(slots.release(held, held.floor), (e) => isTimeout(e))
    })
    // Thawed, the store answers again. The release that timed out may have
    // been carried out since (its outcome was unknown): releasing again is true either way.
    assert.equal(await answering.release(held, held.floor), true)
    const after = await leased(answering, new Owner('after'))
    assert.ok(after.fence > held.fence)
    assert.equal(await answering.release(after, after.floor), true)
  })

  test('SLOT-07 an abort while the server is frozen fails CANCELLED, not TIMEOUT', async () => {
    const slots = store.slots('frozen-abort', { timeout: '5s' })
    await whileFrozen(async () => {
      const controller = new AbortController()
      const waiting = slots.acquire(new Owner('patient'), { signal: controller.signal })
      setTimeout(() => controller.abort(), 50)
      await assert.rejects(waiting, fails('CANCELLED'))
    })
  })

  test('SLOT-07 outcomes are not timeouts: Exhausted is null, NAMESPACE_MISMATCH is not a timeout', async () => {
    const slots = store.slots('outcomes', { limit: 1 })
    const held = await leased(slots, new Owner('holder'))
    assert.equal(await slots.acquire(new Owner('second')), null)
    const mismatch = await store
      .slots('outcomes', { limit: 2 })
      .acquire(new Owner('third'))
      .then(
        () => assert.fail('a mismatched namespace was accepted'),
        (/** @type {unknown} */ e) => e,
      )
    assert.ok(mismatch instanceof LeaseholdError && mismatch.code === 'NAMESPACE_MISMATCH')
    assert.equal(isTimeout(mismatch), false)
    assert.equal(await slots.release(held, held.floor), true)
    for (const other of [
      new LostError('gone'),
      new LeaseholdError('WAIT_TIMEOUT', 'waited'),
      new LeaseholdError('UNAVAILABLE', 'down'),
      Object.assign(new Error('not ours'), { code: 'TIMEOUT' }),
      new Error('plain'),
      null,
      undefined,
      'TIMEOUT',
    ]) {
      assert.equal(isTimeout(other), false, String(other))
    }
    const cyclic = new Error('a cause that loops')
    cyclic.cause = cyclic
    assert.equal(isTimeout(cyclic), false)
  })
})
