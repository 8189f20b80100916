// `{ signal }` on every call that may wait on the store, besides `hold`
// and `acquire` (hold.test.mjs, manual.test.mjs) and `slots.acquire` /
// `slots.hold` while waiting (slots.test.mjs, slot-hold.test.mjs):
// `tryHold`, `tryAcquire`, a manual lease's `extend` and `release`, a slot
// lease's `renew` and `release`, `holders` and `connect`. A signal aborted
// before the call rejects CANCELLED (the signal's reason as cause) and asks
// nothing of the store, on the embedded store and a real server store; one
// aborted while the call waits for a frozen server rejects CANCELLED at
// once, and what the call asked for is released once the server answers
// (LOCK-18: a grant that races a give-up is released at once, never leaked).

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { connect, isTimeout, LeaseholdError, memory, Owner } from 'leasehold'

import { serverFixture } from './helpers/server.mjs'
import { fails } from './helpers/errors.mjs'
import { orHang, sleep } from './helpers/wait.mjs'

/**
 * A check for `assert.rejects`: CANCELLED, not a timeout, with `reason` as cause.
 * @param {unknown} reason
 */
const cancelledBy = (reason) => (/** @type {unknown} */ e) => {
  assert.ok(e instanceof LeaseholdError, `not a LeaseholdError: ${e}`)
  assert.equal(e.code, 'CANCELLED', e.message)
  assert.equal(e.cause, reason)
  assert.equal(isTimeout(e), false)
  return true
}

/**
 * Polls the async `check` every 20 ms until it returns true; false after `ms`.
 * @param {() => Promise<boolean>} check
 * @param {number} [ms]
 */
async function eventuallyAsync(check, ms = 3_000) {
  const until = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > until) return false
    await sleep(20)
  }
  return true
}

/** Runs the store-independent checks against the store `open()` gives. */
function signalSuite(/** @type {string} */ kind, /** @type {() => Promise<any>} */ open) {
  describe(`{ signal } on the ${kind} store`, () => {
    /** @type {import('leasehold').Store} */
    let store
    before(async () => {
      store = await open()
    })
    after(() => store.close())

    // LOCK-18: an aborted signal gives tryHold up before it asks; the key is free after.
    test('LOCK-18 tryHold with an aborted signal rejects CANCELLED and runs nothing', async () => {
      const lock = store.lock('try-aborted')
      const reason = new Error('not now')
      let ran = false
      await assert.rejects(
        lock.tryHold(
          'k',
          () => {
            ran = true
          },
          { signal: AbortSignal.abort(reason) },
        ),
        cancelledBy(reason),
      )
      assert.equal(ran, false)
      assert.equal(await lock.tryHold('k', () => 'free'), 'free')
    })

    // LOCK-17, LOCK-18: a live signal changes nothing of tryHold; aborted while
    // the function runs, it aborts lease.signal and tryHold rejects CANCELLED
    // once the function settled, keeping its value; the key is free after.
    test('LOCK-17 LOCK-18 tryHold with a signal holds, answers null on a held key, and gives up while held', async () => {
      const lock = store.lock('try-signal')
      const controller = new AbortController()
      const { signal } = controller
      assert.equal(await lock.tryHold('k', (lease) => typeof lease.fence, { signal }), 'bigint')
      const nested = await lock.tryHold('k', () => lock.tryHold('k', () => 'ran', { signal }))
      assert.equal(nested, null)
      const reason = new Error('shutting down')
      const holding = lock.tryHold(
        'k',
        async (lease) => {
          controller.abort(reason)
          assert.equal(lease.signal.aborted, true)
          assert.equal(lease.signal.reason, reason)
          return 'stopped'
        },
        { signal },
      )
      await assert.rejects(holding, (e) => {
        assert.equal(/** @type {any} */ (e).code, 'CANCELLED')
        assert.equal(/** @type {any} */ (e).result, 'stopped')
        return true
      })
      assert.equal(await lock.tryHold('k', () => 'free'), 'free')
    })

    // LOCK-18, MANUAL-01, MANUAL-03, MANUAL-04: an aborted signal gives each
    // manual call up before it asks: the name stays free, the lease held.
    test('LOCK-18 tryAcquire, extend and release with an aborted signal reject CANCELLED and change nothing', async () => {
      const reason = new Error('stop')
      const signal = AbortSignal.abort(reason)
      await assert.rejects(store.tryAcquire('manual-aborted', { signal }), cancelledBy(reason))
      const lease = await store.tryAcquire('manual-aborted', { ttl: '10s' })
      assert.ok(lease !== null, 'the aborted tryAcquire took the lease')
      await assert.rejects(lease.extend('20s', { signal }), cancelledBy(reason))
      await assert.rejects(lease.release({ signal }), cancelledBy(reason))
      assert.equal(await store.tryAcquire('manual-aborted'), null)
      await lease.extend('20s', { signal: new AbortController().signal })
      await lease.release({ signal: new AbortController().signal })
      const again = await store.tryAcquire('manual-aborted', {
        signal: new AbortController().signal,
      })
      assert.ok(again !== null && again.fence > lease.fence)
      await again.release()
    })

    // LOCK-18, SLOT-04, SLOT-05: an aborted signal gives a slot lease's renew
    // and release up before they ask: the lease stays, and renews and releases after.
    test('LOCK-18 slot renew and release with an aborted signal reject CANCELLED and change nothing', async () => {
      const slots = store.slots('slots-aborted', { limit: 1 })
      const lease = await slots.acquire(new Owner('aborted'))
      assert.ok(lease !== null)
      const reason = new Error('stop')
      const signal = AbortSignal.abort(reason)
      await assert.rejects(slots.renew(lease, { signal }), cancelledBy(reason))
      await assert.rejects(slots.release(lease, 0, { signal }), cancelledBy(reason))
      assert.equal(await slots.acquire(new Owner('other')), null)
      const live = { signal: new AbortController().signal }
      const renewed = await slots.renew(lease, live)
      assert.ok(renewed !== null && renewed.fence === lease.fence)
      assert.equal(await slots.release(renewed, 0, live), true)
      const next = await slots.acquire(new Owner('other'))
      assert.ok(next !== null)
      assert.equal(await slots.release(next, 0), true)
    })

    // LOCK-18: holders with an aborted signal asks nothing; with a live one it lists.
    test('LOCK-18 holders with an aborted signal rejects CANCELLED', async () => {
      const reason = new Error('stop')
      await assert.rejects(
        store.holders('listed', { signal: AbortSignal.abort(reason) }),
        cancelledBy(reason),
      )
      const listed = await store
        .lock('listed')
        .hold('k', () => store.holders('listed', { signal: new AbortController().signal }))
      assert.deepEqual(
        listed.map((/** @type {import('leasehold').HolderInfo} */ h) => h.key),
        ['k'],
      )
    })

    // ERR-03: a signal that is not an AbortSignal, or an unknown option, is INVALID_ARGUMENT.
    test('ERR-03 a bad signal or option is INVALID_ARGUMENT', async () => {
      const anyLock = /** @type {any} */ (store.lock('bad-signal'))
      const slots = /** @type {any} */ (store.slots('bad-signal', { limit: 1 }))
      const lease = /** @type {any} */ (await store.tryAcquire('bad-signal'))
      const slot = await slots.acquire(new Owner('bad'))
      const anyStore = /** @type {any} */ (store)
      for (const options of [{ signal: {} }, { signal: 'abort' }, { sginal: undefined }, 7]) {
        await assert.rejects(
          anyLock.tryHold('k', () => {}, options),
          fails('INVALID_ARGUMENT'),
        )
        await assert.rejects(anyStore.holders(null, options), fails('INVALID_ARGUMENT'))
        await assert.rejects(lease.extend('10s', options), fails('INVALID_ARGUMENT'))
        await assert.rejects(lease.release(options), fails('INVALID_ARGUMENT'))
        await assert.rejects(slots.renew(slot, options), fails('INVALID_ARGUMENT'))
        await assert.rejects(slots.release(slot, 0, options), fails('INVALID_ARGUMENT'))
      }
      await assert.rejects(
        anyStore.tryAcquire('bad-signal-2', { signal: {} }),
        fails('INVALID_ARGUMENT'),
      )
      await lease.release()
      assert.equal(await slots.release(slot, 0), true)
    })
  })
}

signalSuite('embedded', async () => memory())

describe('{ signal } on the server store', () => {
  const server = serverFixture()
  signalSuite('server', () => connect(server.url))

  /** @type {import('leasehold').Store} */
  let store
  before(async () => {
    store = await connect(server.url)
  })
  after(() => store.close())

  /**
   * Runs `body` with the server frozen (SIGSTOP): a call sent meanwhile
   * waits for its answer until the server is thawed.
   * @param {() => Promise<void>} body
   */
  async function whileFrozen(body) {
    await server.freeze()
    try {
      await body()
    } finally {
      server.thaw()
    }
  }

  /**
   * Starts `call(signal)`, aborts its signal 50 ms later, and expects it to
   * reject CANCELLED with the reason as cause, not TIMEOUT (a call that
   * waited for its own timeout) and not never (one that waited for the
   * frozen server: 30 s, a hang). How long the abort took is printed.
   * @param {(signal: AbortSignal) => Promise<unknown>} call
   */
  async function abortedWhileWaiting(call) {
    const controller = new AbortController()
    const reason = new Error('gave up on a frozen server')
    const started = Date.now()
    const waiting = call(controller.signal)
    setTimeout(() => controller.abort(reason), 50)
    await assert.rejects(orHang(waiting, 'the aborted call'), cancelledBy(reason))
    console.log(
      `LOCK-18: an aborted call on a frozen server ended after ${Date.now() - started} ms`,
    )
  }

  // LOCK-17, LOCK-18: tryHold waiting for a frozen server's answer gives up on
  // the abort; the grant the server gives once thawed is released at once.
  test('LOCK-18 tryHold aborted while the server is frozen rejects CANCELLED; the key is free after', async () => {
    const lock = store.lock('frozen-try')
    let ran = false
    await whileFrozen(() =>
      abortedWhileWaiting((signal) =>
        lock.tryHold(
          'k',
          () => {
            ran = true
          },
          { signal },
        ),
      ),
    )
    assert.equal(ran, false)
    // Within a fraction of the 10 s ttl: the late grant was released, not left to expire.
    const free = await eventuallyAsync(
      async () => (await lock.tryHold('k', () => 'free')) === 'free',
    )
    assert.ok(free, 'the key the abandoned tryHold was granted stayed held')
    assert.deepEqual(await store.holders('frozen-try'), [])
  })

  // LOCK-18, MANUAL-01: tryAcquire likewise; the lease granted late is released at once.
  test('LOCK-18 tryAcquire aborted while the server is frozen rejects CANCELLED; the name is free after', async () => {
    await whileFrozen(() =>
      abortedWhileWaiting((signal) => store.tryAcquire('frozen-manual', { ttl: '30s', signal })),
    )
    let lease = null
    const free = await eventuallyAsync(async () => {
      lease = await store.tryAcquire('frozen-manual')
      return lease !== null
    })
    assert.ok(free, 'the lease the abandoned tryAcquire was granted stayed held')
    await /** @type {any} */ (lease).release()
  })

  // LOCK-18, MANUAL-03, MANUAL-04: extend and release give up waiting; the lease stays usable.
  test('LOCK-18 extend and release aborted while the server is frozen reject CANCELLED; the lease is usable after', async () => {
    const lease = await store.tryAcquire('frozen-extend', { ttl: '10s' })
    assert.ok(lease !== null)
    await whileFrozen(() => abortedWhileWaiting((signal) => lease.extend('20s', { signal })))
    await lease.extend('20s')
    assert.equal(await store.tryAcquire('frozen-extend'), null)
    await whileFrozen(() => abortedWhileWaiting((signal) => lease.release({ signal })))
    // The release went on once the server was thawed; repeating it confirms it.
    await lease.release()
    const next = await store.tryAcquire('frozen-extend')
    assert.ok(next !== null && next.fence > lease.fence)
    await next.release()
  })

  // LOCK-18, SLOT-04, SLOT-05: a slot lease's renew and release give up
  // waiting (CANCELLED, not TIMEOUT); the slot renews and releases after.
  test('LOCK-18 slot renew and release aborted while the server is frozen reject CANCELLED; the slot is usable after', async () => {
    const slots = store.slots('frozen-slot', { limit: 1, timeout: '5s' })
    const lease = await slots.acquire(new Owner('holder'))
    assert.ok(lease !== null)
    await whileFrozen(() => abortedWhileWaiting((signal) => slots.renew(lease, { signal })))
    const renewed = await slots.renew(lease)
    assert.ok(renewed !== null && renewed.fence === lease.fence)
    await whileFrozen(() => abortedWhileWaiting((signal) => slots.release(renewed, 0, { signal })))
    // The release went on once the server was thawed; repeating it answers true.
    assert.equal(await slots.release(renewed, 0), true)
    const next = await slots.acquire(new Owner('next'))
    assert.ok(next !== null, 'the released slot is not free')
    assert.equal(await slots.release(next, 0), true)
  })

  // LOCK-18, SLOT-01: slots.hold waiting for a frozen server gives up; the
  // slot the server leases once thawed is released at once, not left to its ttl.
  test('LOCK-18 slots.hold aborted while the server is frozen rejects CANCELLED; the slot is free after', async () => {
    const slots = store.slots('frozen-slot-hold', { limit: 1, ttl: '30s', timeout: '5s' })
    let ran = false
    await whileFrozen(() =>
      abortedWhileWaiting((signal) =>
        slots.hold(
          new Owner('patient'),
          () => {
            ran = true
          },
          { signal },
        ),
      ),
    )
    assert.equal(ran, false)
    let next = null
    const free = await eventuallyAsync(async () => {
      next = await slots.acquire(new Owner('next'))
      return next !== null
    })
    assert.ok(free, 'the slot the abandoned hold was leased stayed leased')
    assert.equal(await slots.release(/** @type {any} */ (next), 0), true)
  })

  // LOCK-18: holders gives up waiting for a frozen server.
  test('LOCK-18 holders aborted while the server is frozen rejects CANCELLED', async () => {
    await whileFrozen(() => abortedWhileWaiting((signal) => store.holders(undefined, { signal })))
    assert.ok(Array.isArray(await store.holders()))
  })

  // LOCK-18: connect gives up connecting to a frozen server (before its
  // connectTimeout), and an aborted signal before the call asks nothing; connecting works after.
  test('LOCK-18 connect with an aborted signal, or aborted while the server is frozen, rejects CANCELLED', async () => {
    const reason = new Error('not now')
    await assert.rejects(
      connect(server.url, { signal: AbortSignal.abort(reason) }),
      cancelledBy(reason),
    )
    await whileFrozen(() =>
      abortedWhileWaiting((signal) => connect(server.url, { connectTimeout: '10s', signal })),
    )
    const again = await connect(server.url, { signal: new AbortController().signal })
    assert.equal(await again.lock('after-connect').tryHold('k', () => 'held'), 'held')
    await again.close()
  })
})
