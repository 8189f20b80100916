// hold / tryHold through the Node binding, on the embedded store and on a
// real server store process: lease.signal (LOCK-09), LostError after a
// resolved function (LOCK-10), release on every exit path (LOCK-11),
// tryHold (LOCK-17), AbortSignal and wait while waiting (LOCK-18), one
// loss callback per holding (LOCK-09), and the rest of the binding-level
// LOCK contracts.

import assert from 'node:assert/strict'
import { once } from 'node:events'
import { hostname } from 'node:os'
import { createRequire } from 'node:module'
import { after, before, describe, test } from 'node:test'

import { connect, LeaseholdError, LostError, memory } from 'leasehold'
import { memory as testMemory, VirtualClock } from 'leasehold/testing'

import { serverFixture, startServer } from './helpers/server.mjs'
import { eventually, sleep } from './helpers/wait.mjs'

/** A function whose promise the test settles by hand, recording its lease. */
function heldUntilReleased() {
  /** @type {(value?: unknown) => void} */
  let release = () => {}
  /** @type {import('leasehold').Lease | null} */
  let lease = null
  const fn = (/** @type {import('leasehold').Lease} */ l) =>
    new Promise((resolve) => {
      lease = l
      release = resolve
    })
  return {
    fn,
    release: (/** @type {unknown} */ value) => release(value),
    get lease() {
      return lease
    },
  }
}

/** Runs the store-independent checks against the store `open()` gives. */
function holdSuite(/** @type {string} */ kind, /** @type {() => Promise<any>} */ open) {
  describe(`hold on the ${kind} store`, () => {
    /** @type {import('leasehold').Store} */
    let store
    before(async () => {
      store = await open()
    })
    after(() => store.close())

    // LOCK-11, LOCK-02: hold resolves with the function's value; the fence is a bigint that grows.
    test('LOCK-11 hold resolves with the value and releases; LOCK-02 fences are growing bigints', async () => {
      const lock = store.lock('values')
      const first = await lock.hold('k', (lease) => lease.fence)
      const second = await lock.hold('k', async (lease) => lease.fence)
      assert.equal(typeof first, 'bigint')
      assert.ok(second > first)
      assert.equal(await lock.tryHold('k', () => 'free again'), 'free again')
    })

    // LOCK-11: throwing (an Error, a non-Error value, synchronously) releases too.
    test('LOCK-11 the lease is released on every exit path', async () => {
      const lock = store.lock('exits')
      const own = new Error('boom')
      await assert.rejects(
        lock.hold('k', async () => {
          throw own
        }),
        (e) => e === own,
      )
      const value = { not: 'an error' }
      await assert.rejects(
        lock.hold('k', () => {
          throw value
        }),
        (e) => e === value,
      )
      await assert.rejects(
        lock.hold('k', () => Promise.reject(own)),
        (e) => e === own,
      )
      assert.equal(await lock.tryHold('k', () => 'free'), 'free')
    })

    // LOCK-01, LOCK-11: waiters are granted in arrival order, each when the one before releases.
    test('LOCK-01 waiters are served first come, first served', async () => {
      const lock = store.lock('line')
      const first = heldUntilReleased()
      const holding = lock.hold('k', first.fn)
      assert.ok(await eventually(() => first.lease !== null))
      const order = []
      const waiters = [1, 2, 3].map(async (n) => {
        await sleep(n * 20)
        return lock.hold('k', () => {
          order.push(n)
        })
      })
      await sleep(120)
      assert.deepEqual(order, [])
      first.release()
      await holding
      await Promise.all(waiters)
      assert.deepEqual(order, [1, 2, 3])
    })

    // LOCK-17: tryHold resolves null and runs nothing when the key is held.
    test('LOCK-17 tryHold resolves null and runs nothing on a held key', async () => {
      const lock = store.lock('try')
      const held = heldUntilReleased()
      const holding = lock.hold('k', held.fn)
      assert.ok(await eventually(() => held.lease !== null))
      let ran = false
      const answer = await lock.tryHold('k', () => {
        ran = true
        return 'ran'
      })
      assert.equal(answer, null)
      assert.equal(ran, false)
      held.release('done')
      assert.equal(await holding, 'done')
      assert.equal(await lock.tryHold('k', () => 'ran'), 'ran')
    })

    // LOCK-18: an AbortSignal passed to hold gives up waiting: CANCELLED, out of the line.
    test('LOCK-18 aborting the signal gives up waiting and leaves the line', async () => {
      const lock = store.lock('abort')
      const held = heldUntilReleased()
      const holding = lock.hold('k', held.fn)
      assert.ok(await eventually(() => held.lease !== null))
      const controller = new AbortController()
      let ran = false
      const waiting = lock.hold(
        'k',
        () => {
          ran = true
        },
        { signal: controller.signal },
      )
      const next = lock.hold('k', (lease) => lease.fence)
      await sleep(50)
      const reason = new Error('the user went away')
      controller.abort(reason)
      await assert.rejects(waiting, (e) => {
        assert.ok(e instanceof LeaseholdError)
        assert.equal(e.code, 'CANCELLED')
        assert.equal(e.cause, reason)
        return true
      })
      held.release()
      await holding
      assert.equal(typeof (await next), 'bigint')
      assert.equal(ran, false)
      assert.equal(await lock.tryHold('k', () => 'free'), 'free')
    })

    // LOCK-18: a signal aborted before the call gives up at once and runs nothing.
    test('LOCK-18 an aborted signal runs nothing', async () => {
      const lock = store.lock('aborted')
      let ran = false
      await assert.rejects(
        lock.hold(
          'k',
          () => {
            ran = true
          },
          { signal: AbortSignal.abort() },
        ),
        { code: 'CANCELLED' },
      )
      assert.equal(ran, false)
      assert.equal(await lock.tryHold('k', () => 'free'), 'free')
    })

    // LOCK-18: `wait` (on the call or the lock) bounds the time in line: WAIT_TIMEOUT.
    test('LOCK-18 wait bounds the time in line', async () => {
      const lock = store.lock('wait', { wait: 100 })
      const held = heldUntilReleased()
      const holding = lock.hold('k', held.fn)
      assert.ok(await eventually(() => held.lease !== null))
      const started = Date.now()
      await assert.rejects(
        lock.hold('k', () => {}),
        { code: 'WAIT_TIMEOUT' },
      )
      assert.ok(Date.now() - started >= 90)
      await assert.rejects(
        lock.hold('k', () => {}, { wait: '50ms' }),
        { code: 'WAIT_TIMEOUT' },
      )
      held.release()
      await holding
    })

    // LOCK-18: aborted while the function runs, lease.signal aborts with the
    // signal's reason and hold rejects CANCELLED once the function settled; the key is free.
    test('LOCK-18 aborting while held aborts lease.signal and releases when the function ends', async () => {
      const lock = store.lock('abort-held')
      const controller = new AbortController()
      const reason = new Error('shutting down')
      const holding = lock.hold(
        'k',
        async (lease) => {
          controller.abort(reason)
          assert.equal(lease.signal.aborted, true)
          assert.equal(lease.signal.reason, reason)
          return 'stopped'
        },
        { signal: controller.signal },
      )
      await assert.rejects(holding, (e) => {
        assert.equal(/** @type {any} */ (e).code, 'CANCELLED')
        assert.equal(/** @type {any} */ (e).result, 'stopped')
        return true
      })
      assert.equal(await lock.tryHold('k', () => 'free'), 'free')
    })

    // LOCK-20: holding one key does not hold up another.
    test('LOCK-20 keys are independent', async () => {
      const lock = store.lock('independent')
      const held = heldUntilReleased()
      const holding = lock.hold('a', held.fn)
      assert.ok(await eventually(() => held.lease !== null))
      assert.equal(await lock.tryHold('b', () => 'b'), 'b')
      held.release()
      await holding
    })
  })
}

holdSuite('embedded', async () => memory())

// LOCK-09: a lease kept past its hold still answers: its fence (read in the
// hold or not), key and lock name, that it was not lost, no time left, and
// a signal never aborted; the same for each lease of a holdMany.
test('LOCK-09 a lease read after its hold ended keeps what it was', async () => {
  const store = memory()
  const lock = store.lock('after')
  /** @type {import('leasehold').Lease[]} */
  const kept = []
  const fence = await lock.hold('k', (lease) => {
    kept.push(lease)
    return lease.fence
  })
  await lock.hold('k', (lease) => {
    kept.push(lease)
  })
  await lock.holdMany(['a', 'b'], (leases) => {
    kept.push(...leases)
  })
  const [read, unread, a, b] = kept
  assert.equal(read.fence, fence)
  assert.ok(unread.fence > fence)
  assert.ok(a.fence > unread.fence && b.fence > unread.fence)
  assert.deepEqual(
    kept.map((lease) => [lease.key, lease.lockName, lease.lost, lease.lossReason, lease.remaining]),
    [
      ['k', 'after', false, null, 0],
      ['k', 'after', false, null, 0],
      ['a', 'after', false, null, 0],
      ['b', 'after', false, null, 0],
    ],
  )
  for (const lease of kept) assert.equal(lease.signal.aborted, false)
  await store.close()
})

// LOCK-09: a holding (a key's, a slot's) has one loss callback: the addon's
// second watch of it throws INVALID_ARGUMENT rather than start a second
// watcher, and the library itself watches once however often a function
// reads its signal.
test('LOCK-09 a second watch of the same holding throws INVALID_ARGUMENT', async () => {
  const native = createRequire(import.meta.url)('../lib/native.js')
  const store = native.memory()
  // The addon's lock is an External, its key holding a number: lib/ wraps both.
  const { Holding } = createRequire(import.meta.url)('../lib/holding.js')
  const lock = store.lock('watched', null, null, null, null)
  const key = new Holding(await native.lockBegin(lock, 'k', null, null), 'k', 'watched')
  const slots = store.slots('watched', { limit: 1 })
  const slot = await slots.begin(native.owner('o', null), null, null)
  for (const holding of [key, slot]) {
    assert.ok(holding !== null)
    holding.watch(() => {})
    assert.throws(
      () => holding.watch(() => {}),
      (/** @type {any} */ e) => {
        assert.equal(e.code, 'INVALID_ARGUMENT')
        assert.equal(e.message, 'the loss of this holding is watched already')
        return true
      },
    )
    await holding.end()
  }
  await store.close()

  const library = memory()
  const signals = await library
    .lock('watched-once')
    .hold('k', (lease) => [lease.signal, lease.signal])
  assert.equal(signals[0], signals[1])
  await library.close()
})

describe('hold on the server store', () => {
  const server = serverFixture()
  holdSuite('server', () => connect(server.url))

  // LOCK-06: the lease is renewed in the background while the function runs past its ttl.
  test('LOCK-06 a hold longer than its ttl is renewed and not lost', async () => {
    const store = await connect(server.url)
    const lock = store.lock('renewed', { ttl: '1s' })
    const lost = await lock.hold('k', async (lease) => {
      await sleep(2_500)
      return lease.lost || lease.signal.aborted
    })
    assert.equal(lost, false)
    await store.close()
  })

  // LOCK-09, LOCK-10, LOCK-12: maxHold revokes; lease.signal aborts with a
  // LostError; hold rejects LostError although the function resolved.
  test('LOCK-09 LOCK-10 LOCK-12 a revoked lease aborts lease.signal and hold rejects LOST', async () => {
    const store = await connect(server.url)
    const lock = store.lock('revoked', { ttl: '1s', maxHold: '1s' })
    /** @type {import('leasehold').Lease | null} */
    let seen = null
    const holding = lock.hold('k', async (lease) => {
      seen = lease
      await once(lease.signal, 'abort')
      assert.ok(lease.signal.reason instanceof LostError)
      assert.equal(lease.signal.reason.lossReason, 'revoked')
      assert.equal(lease.lost, true)
      return 'finished anyway'
    })
    await assert.rejects(holding, (e) => {
      assert.ok(e instanceof LostError)
      assert.equal(e.code, 'LOST')
      assert.equal(e.lossReason, 'revoked')
      assert.equal(e.result, 'finished anyway')
      return true
    })
    // Read after its hold ended, the lease still says it was lost, and why.
    const lease = /** @type {import('leasehold').Lease} */ (/** @type {unknown} */ (seen))
    assert.equal(lease.lost, true)
    assert.equal(lease.lossReason, 'revoked')
    assert.equal(lease.remaining, 0)
    assert.equal(typeof lease.fence, 'bigint')
    assert.equal(lease.key, 'k')
    await store.close()
  })

  // LOCK-14: a read-only connection may not hold; no valid token: UNAUTHENTICATED at connect.
  test('LOCK-14 read-only tokens may not hold, and connections need a valid token', async () => {
    const guarded = await startServer({ tokens: ['writer-token write', 'reader-token read'] })
    try {
      await assert.rejects(connect(guarded.url), { code: 'UNAUTHENTICATED' })
      await assert.rejects(connect(guarded.url, { token: 'nope' }), { code: 'UNAUTHENTICATED' })
      const reader = await connect(guarded.url, { token: 'reader-token' })
      const lock = reader.lock('guarded')
      let ran = false
      const run = () => {
        ran = true
      }
      await assert.rejects(lock.hold('k', run), { code: 'PERMISSION_DENIED' })
      await assert.rejects(lock.tryHold('k', run), { code: 'PERMISSION_DENIED' })
      assert.equal(ran, false)
      const writer = await connect(guarded.url, { token: 'writer-token' })
      assert.equal(await writer.lock('guarded').tryHold('k', () => 'held'), 'held')
      await reader.close()
      await writer.close()
    } finally {
      await guarded.stop()
    }
  })

  // WHO-01, WHO-02: lock.holder(key) answers null for a free key and, for a
  // held one, the identity its holder connected with (by default
  // hostname:pid), its fence and how many wait; a read-only connection may ask.
  test('WHO-02 lock.holder names the identity, the fence and the line', async () => {
    const guarded = await startServer({ tokens: ['writer-token write', 'reader-token read'] })
    try {
      const writer = await connect(guarded.url, { token: 'writer-token', identity: 'billing-3' })
      const other = await connect(guarded.url, { token: 'writer-token' })
      const reader = await connect(guarded.url, { token: 'reader-token' })
      const seen = reader.lock('who')
      assert.equal(await seen.holder('k'), null)
      /** @type {Promise<string> | null} */
      let waiter = null
      await writer.lock('who', { ttl: '5s' }).hold('k', async (lease) => {
        waiter = other.lock('who', { ttl: '5s' }).hold('k', async () => {
          const info = await seen.holder('k')
          return info?.identity ?? 'nobody'
        })
        // The waiter joins the line when its hold reaches the server.
        let info = await seen.holder('k')
        for (const until = Date.now() + 30_000; info?.waiting !== 1 && Date.now() < until;) {
          await sleep(10)
          info = await seen.holder('k')
        }
        assert.ok(info !== null && info.waiting === 1, `the waiter never showed: ${info}`)
        assert.equal(info.identity, 'billing-3')
        assert.equal(info.fence, lease.fence)
        assert.ok(info.expiresIn !== null && info.expiresIn > 0 && info.expiresIn <= 5000)
      })
      assert.equal(await waiter, `${hostname()}:${process.pid}`)
      assert.equal(await seen.holder('k'), null)
      await assert.rejects(seen.holder(''), { code: 'EMPTY_NAME' })
      await Promise.all([writer.close(), other.close(), reader.close()])
    } finally {
      await guarded.stop()
    }
  })

  // The server store goes away: a call fails UNAVAILABLE or TIMEOUT, never hangs or crashes.
  test('ERR-01 a server that is not there fails UNAVAILABLE', async () => {
    await assert.rejects(connect('leasehold://127.0.0.1:1', { connectTimeout: '1s' }), (e) => {
      assert.ok(e instanceof LeaseholdError)
      assert.ok(['UNAVAILABLE', 'TIMEOUT'].includes(e.code), e.code)
      return true
    })
  })
})

describe('hold on the embedded store with renewal, on a virtual clock', () => {
  // LOCK-05, LOCK-09, LOCK-10: a lost lease is never renewed; hold keeps the function's own error.
  test('LOCK-05 LOCK-10 a lease that ran out fails hold with the own error as cause', async () => {
    const clock = new VirtualClock()
    const store = testMemory({ clock, renewal: true })
    const lock = store.lock('clocked', { ttl: '1s', maxHold: '2s' })
    const own = new Error('late')
    let fence = 0n
    const holding = lock.hold('k', async (lease) => {
      fence = lease.fence
      await clock.advance('5s')
      assert.equal(lease.lost, true)
      assert.equal(lease.remaining, 0)
      throw own
    })
    await assert.rejects(holding, (e) => {
      assert.ok(e instanceof LostError)
      assert.equal(e.cause, own)
      return true
    })
    const again = await lock.hold('k', (lease) => lease.fence)
    assert.ok(again > fence)
    await store.close()
  })

  // LOCK-19: an embedded holder needs no renewal: no deadline, never lost by time.
  test('LOCK-19 an embedded lease has no deadline and outlives its ttl', async () => {
    const clock = new VirtualClock()
    const store = testMemory({ clock })
    const lock = store.lock('embedded', { ttl: '1s' })
    const lost = await lock.hold('k', async (lease) => {
      assert.equal(lease.remaining, null)
      await clock.advance('1h')
      return lease.lost
    })
    assert.equal(lost, false)
    await store.close()
  })

  // LOCK-19: closing the store ends its leases: the holder sees LOST (closed).
  test('LOCK-19 closing the store ends its leases', async () => {
    const store = memory()
    const lock = store.lock('closing')
    const holding = lock.hold('k', async (lease) => {
      await store.close()
      assert.equal(lease.signal.aborted, true)
      return lease.lossReason
    })
    await assert.rejects(
      holding,
      (e) => e instanceof LostError && e.lossReason === 'closed' && e.result === 'closed',
    )
    await assert.rejects(
      lock.hold('k', () => {}),
      { code: 'CLOSED' },
    )
  })
})
