// slots.hold through the Node binding: a slot held while a function runs,
// renewed in the background by the core. On the embedded store with a
// virtual clock: renewal across several ttls and the release that hands on
// the largest timestamp issued (SLOT-04, SLOT-05); a slot released behind
// its holder's back is lost at the next renewal: held.signal aborts
// (LOCK-09's analogue) and hold rejects LostError although the function
// resolved, keeping its value or its error (LOCK-10's analogue). On both
// stores: Exhausted runs nothing (SLOT-01), the function's own error, the
// caller's AbortSignal and bad input (ERR-03). On a real server store
// process: a hold renewed past its ttl in real time, and one lost at its
// holder's deadline while the server is frozen (LOCK-04's analogue).

import assert from 'node:assert/strict'
import { once } from 'node:events'
import { after, before, describe, test } from 'node:test'

import { connect, HeldSlot, LeaseholdError, LostError, memory, Owner } from 'leasehold'
import { memory as testMemory, VirtualClock } from 'leasehold/testing'

import { fails } from './helpers/errors.mjs'
import { serverFixture } from './helpers/server.mjs'
import { eventually, sleep } from './helpers/wait.mjs'

/**
 * Waits until `signal` aborted (at most `ms`), and returns its reason.
 * @param {AbortSignal} signal
 * @param {number} [ms]
 */
async function aborted(signal, ms = 5_000) {
  if (!signal.aborted) await once(signal, 'abort', { signal: AbortSignal.timeout(ms) })
  return signal.reason
}

/**
 * Asserts that `reason` is the LostError a lost slot aborts its signal with.
 * @param {unknown} reason
 * @param {string} lossReason
 */
function assertLost(reason, lossReason) {
  assert.ok(reason instanceof LostError, `not a LostError: ${reason}`)
  assert.equal(reason.code, 'LOST')
  assert.equal(reason.lossReason, lossReason)
}

/** Runs the store-independent checks against the store `open()` gives. */
function slotHoldSuite(/** @type {string} */ kind, /** @type {() => Promise<any>} */ open) {
  describe(`slots.hold on the ${kind} store`, () => {
    /** @type {import('leasehold').Store} */
    let store
    before(async () => {
      store = await open()
    })
    after(() => store.close())

    // SLOT-01: hold takes a slot as acquire does; every slot held: null, and nothing runs.
    test('SLOT-01 hold runs on a slot, and resolves null running nothing when every slot is held', async () => {
      const slots = store.slots('hold-01', { limit: 1, offset: 10 })
      const owner = new Owner('first')
      let inner = /** @type {unknown} */ ('not run')
      const outcome = await slots.hold(owner, async (held) => {
        assert.ok(held instanceof HeldSlot)
        assert.deepEqual([held.slot, held.node], [0, 10])
        assert.equal(typeof held.fence, 'bigint')
        assert.equal(held.lost, false)
        assert.equal(held.lossReason, null)
        assert.equal(held.signal.aborted, false)
        assert.ok(held.remaining > 0 && held.remaining <= slots.ttl - slots.margin)
        assert.equal(held.lastIssued, 0)
        const lease = held.lease
        assert.equal(lease.owner.instance, owner.instance)
        assert.equal(lease.fence, held.fence)
        assert.deepEqual([lease.floor, lease.ceiling], [held.floor, held.ceiling])
        let ran = false
        inner = await slots.hold(new Owner('second'), () => {
          ran = true
        })
        assert.equal(ran, false)
        // The exhausted hold asked for a preferred slot too.
        assert.equal(await slots.hold(new Owner('third'), () => 'ran', { preferred: 0 }), null)
        return held.node
      })
      assert.equal(outcome, 10)
      assert.equal(inner, null)
      // Released when the function settled: the slot is free again.
      assert.equal(await slots.hold(new Owner('second'), (held) => held.slot), 0)
    })

    // SLOT-05: the release hands on the largest timestamp the function recorded as issued.
    test('SLOT-05 the end releases with the largest issued timestamp as the next floor', async () => {
      const slots = store.slots('hold-05', { limit: 1, ttl: '30s' })
      const first = await slots.hold(new Owner('issuer'), (held) => {
        held.issued(held.floor + 7)
        held.issued(BigInt(held.floor + 3))
        assert.equal(held.lastIssued, held.floor + 7)
        return held.lease
      })
      assert.ok(first !== null)
      const next = await slots.acquire(new Owner('next'))
      assert.ok(next !== null)
      assert.equal(next.floor, first.floor + 7)
      assert.ok(next.fence > first.fence)
      assert.equal(await slots.release(next, next.floor), true)
    })

    // LOCK-11's analogue: the function's own error is what hold rejects with, and the slot is released.
    test('the function’s own error rejects hold, and the slot is released', async () => {
      const slots = store.slots('hold-error', { limit: 1 })
      const own = new Error('the id generator broke')
      await assert.rejects(
        slots.hold(new Owner('thrower'), async () => {
          throw own
        }),
        (e) => e === own,
      )
      const value = { not: 'an error' }
      await assert.rejects(
        slots.hold(new Owner('thrower'), () => {
          throw value
        }),
        (e) => e === value,
      )
      assert.equal(await slots.hold(new Owner('after'), () => 'free'), 'free')
    })

    // LOCK-18's analogue: the caller's signal aborted while the function runs
    // aborts held.signal with its reason; hold rejects CANCELLED once the function settled.
    test('the caller’s signal aborts held.signal, and hold rejects CANCELLED keeping the value', async () => {
      const slots = store.slots('hold-abort', { limit: 1 })
      const controller = new AbortController()
      const reason = new Error('shutting down')
      await assert.rejects(
        slots.hold(
          new Owner('stopped'),
          async (held) => {
            controller.abort(reason)
            assert.equal(held.signal.aborted, true)
            assert.equal(held.signal.reason, reason)
            assert.equal(held.lost, false)
            return 'stopped'
          },
          { signal: controller.signal },
        ),
        (e) => {
          assert.ok(e instanceof LeaseholdError && !(e instanceof LostError))
          assert.equal(e.code, 'CANCELLED')
          assert.equal(/** @type {any} */ (e).result, 'stopped')
          return true
        },
      )
      // A signal aborted before the call asks nothing of the store and runs nothing.
      let ran = false
      await assert.rejects(
        slots.hold(
          new Owner('late'),
          () => {
            ran = true
          },
          { signal: AbortSignal.abort(reason) },
        ),
        (e) => fails('CANCELLED')(e) && /** @type {any} */ (e).cause === reason,
      )
      assert.equal(ran, false)
      assert.equal(await slots.hold(new Owner('after'), () => 'free'), 'free')
    })

    // ERR-01, ERR-03: bad input to hold and to the margin fails with its code and runs nothing.
    test('ERR-03 bad hold input fails with ERR-01 codes', async () => {
      const slots = store.slots('hold-bad', { limit: 2 })
      const any = /** @type {any} */ (slots)
      const owner = new Owner('bad')
      let ran = false
      const fn = () => {
        ran = true
      }
      for (const who of [undefined, null, 'bad', { key: 'bad', instance: 'x' }]) {
        await assert.rejects(any.hold(who, fn), fails('INVALID_ARGUMENT'))
      }
      for (const notFn of [undefined, null, 'fn', {}]) {
        await assert.rejects(any.hold(owner, notFn), fails('INVALID_ARGUMENT'))
      }
      for (const preferred of [2, -1, 0.5, '0', 2 ** 32]) {
        await assert.rejects(any.hold(owner, fn, { preferred }), fails('INVALID_ARGUMENT'))
      }
      await assert.rejects(any.hold(owner, fn, { wait: '1s' }), fails('INVALID_ARGUMENT'))
      await assert.rejects(any.hold(owner, fn, { signal: {} }), fails('INVALID_ARGUMENT'))
      await assert.rejects(any.hold(owner, fn, 3), fails('INVALID_ARGUMENT'))
      assert.equal(ran, false)
      await slots.hold(owner, (held) => {
        const anyHeld = /** @type {any} */ (held)
        for (const ms of [-1, 1.5, '5', 2n ** 64n, undefined]) {
          assert.throws(() => anyHeld.issued(ms), fails('INVALID_ARGUMENT'), String(ms))
        }
        assert.equal(held.lastIssued, 0)
      })
      for (const margin of ['5s', 5_000, 'x', -1, {}]) {
        assert.throws(
          () => store.slots('hold-bad', /** @type {any} */ ({ ttl: '10s', margin })),
          fails('INVALID_TTL'),
          String(margin),
        )
      }
      assert.equal(store.slots('hold-bad', { ttl: '10s', margin: '2s' }).margin, 2_000)
      assert.equal(store.slots('hold-bad', { ttl: '10s' }).margin, 1_000, 'ttl/10 by default')
    })
  })
}

slotHoldSuite('embedded', async () => memory())

describe('slots.hold on the server store', () => {
  const server = serverFixture()
  slotHoldSuite('server', () => connect(server.url))

  // SLOT-04, SLOT-05 end to end: a hold longer than its ttl is renewed in
  // real time (same fence, the ceiling moves on) and hands on what it issued.
  test('SLOT-04 SLOT-05 a hold on the server is renewed past its ttl and hands on its issued', async () => {
    const store = await connect(server.url)
    try {
      const slots = store.slots('server-held', { limit: 1, ttl: '1s' })
      const seen = await slots.hold(new Owner('long'), async (held) => {
        const first = held.lease
        await sleep(2_500)
        assert.equal(held.lost, false, `lost: ${held.lossReason}`)
        assert.equal(held.signal.aborted, false)
        assert.equal(held.fence, first.fence)
        assert.ok(held.lease.expiresAt >= first.expiresAt + 1_500, 'renewed meanwhile')
        assert.ok(held.ceiling > first.ceiling)
        held.issued(held.ceiling)
        return held.ceiling
      })
      assert.ok(seen !== null)
      const next = await slots.acquire(new Owner('next'))
      assert.ok(next !== null)
      assert.ok(next.floor >= seen, `the next floor ${next.floor} is below ${seen}`)
      assert.equal(await slots.release(next, 0), true)
    } finally {
      await store.close()
    }
  })

  // LOCK-04's analogue: no renewal confirmed by the holder's deadline (send
  // time + ttl − margin; the server is frozen) loses the slot, Expired.
  test('LOCK-04 LOCK-09 LOCK-10 a held slot on a frozen server is lost at its deadline', async () => {
    const store = await connect(server.url)
    let frozen = false
    try {
      const slots = store.slots('server-frozen', { limit: 1, ttl: '1s', timeout: '5s' })
      const holding = slots.hold(new Owner('frozen'), async (held) => {
        const signal = held.signal
        await server.freeze()
        frozen = true
        const started = Date.now()
        assertLost(await aborted(signal, 30_000), 'expired')
        console.log(
          `LOCK-04: a held slot on a frozen server lost after ${Date.now() - started} ms (ttl 1 s)`,
        )
        assert.equal(held.lost, true)
        assert.equal(held.remaining, 0)
        server.thaw()
        frozen = false
        return 'finished anyway'
      })
      await assert.rejects(holding, (e) => {
        assertLost(e, 'expired')
        assert.equal(/** @type {LostError} */ (e).result, 'finished anyway')
        return true
      })
    } finally {
      if (frozen) server.thaw()
      await store.close()
    }
  })
})

describe('slots.hold and the store closing', () => {
  // A held slot ends with its store, as a held key does (LOCK-19): its
  // signal has aborted, LOST (closed), by the time close resolves.
  test('closing the store loses a held slot before close resolves', async () => {
    const store = memory()
    const slots = store.slots('closing', { limit: 1 })
    const holding = slots.hold(new Owner('a'), async (held) => {
      await store.close()
      assert.equal(held.signal.aborted, true)
      assertLost(held.signal.reason, 'closed')
      return held.lossReason
    })
    await assert.rejects(holding, (e) => {
      assertLost(e, 'closed')
      assert.equal(/** @type {LostError} */ (e).result, 'closed')
      return true
    })
  })
})

describe('slots.hold on the embedded store, on a virtual clock', () => {
  // SLOT-04, SLOT-05: renewed in the background across several ttls (same
  // fence, later expiry); the end releases with the largest issued.
  test('SLOT-04 SLOT-05 a held slot is renewed across several ttls and hands on its issued', async () => {
    const clock = new VirtualClock()
    const store = testMemory({ clock })
    try {
      const slots = store.slots('clocked', { limit: 2, ttl: '3s' })
      const first = await slots.hold(new Owner('svc'), async (held) => {
        const lease = held.lease
        for (let i = 0; i < 6; i++) await clock.advance(1_500)
        assert.equal(held.lost, false, `lost: ${held.lossReason}`)
        assert.equal(held.signal.aborted, false)
        assert.equal(held.fence, lease.fence)
        assert.ok(held.lease.expiresAt >= lease.expiresAt + 7_000, 'renewed meanwhile')
        assert.ok(held.ceiling >= lease.ceiling + 7_000, 'the ceiling moved on')
        held.issued(lease.floor + 7)
        held.issued(lease.floor + 3)
        return lease
      })
      assert.ok(first !== null)
      const next = await slots.acquire(new Owner('other'), { preferred: first.slot })
      assert.ok(next !== null)
      assert.equal(next.slot, first.slot)
      assert.equal(next.floor, first.floor + 7, 'SLOT-05: the largest issued')
    } finally {
      await store.close()
    }
  })

  // LOCK-09's analogue: a slot released behind its holder's back is lost at
  // the next renewal (ttl/3 later): held.signal aborts with a LostError.
  // LOCK-10's analogue: hold rejects LostError although the function resolved, with its value.
  test('LOCK-09 LOCK-10 a slot released behind the holder’s back aborts held.signal and fails hold', async () => {
    const clock = new VirtualClock()
    const store = testMemory({ clock })
    try {
      const slots = store.slots('behind', { limit: 1, ttl: '3s' })
      const holding = slots.hold(new Owner('held'), async (held) => {
        const signal = held.signal
        assert.equal(await slots.release(held.lease, 0), true)
        assert.equal(held.lost, false, 'not lost before the next renewal')
        await clock.advance(1_001)
        assertLost(await aborted(signal), 'unknown')
        assert.equal(held.lost, true)
        assert.equal(held.lossReason, 'unknown')
        assert.equal(held.remaining, 0)
        return 'finished anyway'
      })
      await assert.rejects(holding, (e) => {
        assertLost(e, 'unknown')
        assert.equal(/** @type {LostError} */ (e).result, 'finished anyway')
        return true
      })
      assert.equal(await slots.hold(new Owner('next'), (held) => held.slot), 0)
    } finally {
      await store.close()
    }
  })

  // LOCK-10's analogue: the function's own error stays reachable as the LostError's cause.
  test('LOCK-10 a lost slot fails hold with the function’s own error as cause', async () => {
    const clock = new VirtualClock()
    const store = testMemory({ clock })
    try {
      const slots = store.slots('behind-error', { limit: 1, ttl: '3s' })
      const own = new Error('the work failed too')
      const holding = slots.hold(new Owner('held'), async (held) => {
        const signal = held.signal
        assert.equal(await slots.release(held.lease, 0), true)
        await clock.advance('1s')
        await clock.advance(1)
        assertLost(await aborted(signal), 'unknown')
        throw own
      })
      await assert.rejects(holding, (e) => {
        assertLost(e, 'unknown')
        assert.equal(/** @type {LostError} */ (e).cause, own)
        assert.equal('result' in /** @type {object} */ (e), false)
        return true
      })
    } finally {
      await store.close()
    }
  })

  // LOCK-09's analogue: the signal read only after the loss is aborted already.
  test('LOCK-09 held.signal first read after the loss is aborted', async () => {
    const clock = new VirtualClock()
    const store = testMemory({ clock })
    try {
      const slots = store.slots('late-signal', { limit: 1, ttl: '3s' })
      const holding = slots.hold(new Owner('held'), async (held) => {
        assert.equal(await slots.release(held.lease, 0), true)
        await clock.advance(1_001)
        assert.ok(await eventually(() => held.lost))
        assertLost(held.signal.reason, 'unknown')
        assert.equal(held.signal.aborted, true)
      })
      await assert.rejects(holding, (e) => e instanceof LostError)
    } finally {
      await store.close()
    }
  })
})
