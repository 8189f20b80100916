// ID generators through the Node binding (IDGEN), on the embedded store and
// on a real server store process: IDGEN-01 (IDs unique across the
// generators of a namespace, some closed and reopened), IDGEN-02 (only
// timestamps inside the lease), IDGEN-03 (one generator's IDs strictly
// increase), IDGEN-04 (NOT_READY from the non-waiting calls while the
// waiting ones wait; OVERFLOW once the layout's time range is used up),
// giving up a wait with a signal, and the ERR-01 codes of bad input (ERR-03).

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { connect, IdGenerator, IdLayout, LostError, memory } from 'leasehold'

import { fails } from './helpers/errors.mjs'
import { serverFixture } from './helpers/server.mjs'

/** The default layout's epoch: 2026-01-01T00:00:00Z. */
const DEFAULT_EPOCH_MS = 1_767_225_600_000

/**
 * Takes IDs with `takeNow(n)` until it throws, and says what it took and the error.
 * @param {IdGenerator} ids
 * @param {number} n
 */
function drain(ids, n) {
  /** @type {bigint[]} */
  const taken = []
  for (let round = 0; round < 100_000; round++) {
    try {
      taken.push(...ids.takeNow(n))
    } catch (error) {
      return { taken, error }
    }
  }
  throw new Error('takeNow never stopped issuing')
}

/**
 * Checks that `list` strictly increases (IDGEN-03).
 * @param {readonly bigint[]} list
 * @param {string} what
 */
function increasing(list, what) {
  for (let i = 1; i < list.length; i++) {
    assert.ok(list[i - 1] < list[i], `${what}: ${list[i - 1]} then ${list[i]} at ${i}`)
  }
}

test('IdLayout presets are the core’s, and parts takes an ID apart', () => {
  const d = IdLayout.DEFAULT
  assert.ok(d instanceof IdLayout)
  assert.deepEqual(
    [d.timeBits, d.nodeBits, d.sequenceBits, d.tickMs, d.epochMs],
    [41, 10, 12, 1, DEFAULT_EPOCH_MS],
  )
  assert.equal(String(d), '41/10/12 ms')
  assert.equal(String(IdLayout.jsSafe()), '41/6/6 ms')
  const s = IdLayout.seconds()
  assert.deepEqual([s.timeBits, s.nodeBits, s.sequenceBits, s.tickMs], [31, 10, 22, 1000])
  const c = IdLayout.custom(30, 8, 9, { tickMs: 10, epochMs: 1_000n })
  assert.deepEqual(
    [c.timeBits, c.nodeBits, c.sequenceBits, c.tickMs, c.epochMs],
    [30, 8, 9, 10, 1_000],
  )
  // tick 5, node 3, sequence 7: (5 << 17) | (3 << 9) | 7
  const id = (5n << 17n) | (3n << 9n) | 7n
  assert.deepEqual(c.parts(id), { tick: 5n, timestampMs: 1_050, node: 3, sequence: 7n })
  assert.deepEqual(c.parts(Number(id)), c.parts(id), 'a safe whole number is an ID too')
})

function idSuite(/** @type {string} */ kind, /** @type {() => Promise<any>} */ open) {
  describe(`ID generators on the ${kind} store`, () => {
    /** @type {import('leasehold').Store} */
    let store
    before(async () => {
      store = await open()
    })
    after(() => store.close())

    // IDGEN-01: several generators of one namespace, some closed and reopened: every ID unique.
    test('IDGEN-01 IDs are unique across the generators of a namespace', async () => {
      const ns = 'idgen-01'
      const all = new Set()
      let count = 0
      const keep = (/** @type {Iterable<bigint>} */ got) => {
        for (const id of got) {
          all.add(id)
          count++
        }
      }
      /** @type {IdGenerator[]} */
      let open = []
      for (let i = 0; i < 3; i++) open.push(await store.ids(ns, { limit: 3 }))
      assert.deepEqual(open.map((g) => g.node).sort(), [0, 1, 2], 'one slot each')
      for (let round = 0; round < 4; round++) {
        for (const g of open) {
          keep([g.nextNow(), await g.next()])
          keep(g.takeNow(500))
          keep(await g.take(300))
        }
        // Two of them close and are reopened: the new ones get the freed slots,
        // above the floor the closed ones passed on.
        const [first, second, ...rest] = open
        const freed = [first.node, second.node].sort()
        await first.close()
        await second.close()
        open = [...rest, await store.ids(ns, { limit: 3 }), await store.ids(ns, { limit: 3 })]
        assert.deepEqual([open[1].node, open[2].node].sort(), freed)
        assert.ok(open[1].lease.floor > 0, 'a reopened slot starts above a floor')
      }
      for (const g of open) {
        keep(g.takeNow(100))
        await g.close()
      }
      assert.equal(all.size, count, `${count - all.size} duplicate IDs`)
    })

    // IDGEN-03, IDGEN-02: one generator's IDs strictly increase, and carry its
    // node and timestamps in (floor, ceiling] of its lease.
    test('IDGEN-03 one generator’s IDs strictly increase, inside its lease', async () => {
      const ids = await store.ids('idgen-03', { layout: IdLayout.jsSafe() })
      assert.ok(ids instanceof IdGenerator)
      const lease = ids.lease
      assert.equal(ids.lastIssued, 0, 'nothing issued yet')
      /** @type {bigint[]} */
      const got = []
      for (let i = 0; i < 200; i++) {
        got.push(ids.nextNow())
        got.push(...ids.takeNow(7))
        got.push(await ids.next())
        if (i % 20 === 0) got.push(...(await ids.take(50)))
      }
      increasing(got, 'one generator')
      const layout = ids.layout
      assert.equal(String(layout), '41/6/6 ms')
      for (const id of got) {
        assert.ok(id < 2n ** 53n, 'a jsSafe ID is exact as a number')
        const parts = layout.parts(id)
        assert.equal(parts.node, ids.node)
        assert.ok(parts.timestampMs > lease.floor, 'above the floor')
        assert.ok(parts.timestampMs <= ids.lease.ceiling, 'not past the ceiling')
      }
      const last = layout.parts(/** @type {bigint} */ (got.at(-1)))
      assert.equal(ids.lastIssued, last.timestampMs)
      assert.equal(ids.lost, false)
      await ids.close()
    })

    // IDGEN-04: a floor ahead of the store's clock: the non-waiting calls fail
    // NOT_READY (retryable), the waiting ones wait until time passes it.
    test('IDGEN-04 NOT_READY while the floor is ahead; next() waits it out', async () => {
      // Two IDs per millisecond, one slot: the second generator gets the first's slot.
      const layout = IdLayout.custom(41, 10, 1)
      const ns = 'idgen-04-ahead'
      const ahead = await store.ids(ns, { layout, limit: 1, maxLead: '1s' })
      const { taken, error } = drain(ahead, 100_000)
      assert.ok(fails('NOT_READY')(error))
      assert.ok(taken.length > 1_000, `issued ${taken.length} IDs up to the lead`)
      increasing(taken, 'issued ahead')
      const floor = ahead.lastIssued
      assert.ok(floor > Date.now() + 500, 'the first generator issued far ahead of the clock')
      await ahead.close()

      const behind = await store.ids(ns, { layout, limit: 1, maxLead: 0 })
      assert.equal(behind.node, ahead.node)
      assert.ok(behind.lease.floor >= floor, 'the close passed its last tick on as the floor')
      assert.throws(() => behind.nextNow(), fails('NOT_READY'))
      assert.throws(() => behind.takeNow(10), fails('NOT_READY'))

      // Giving up the wait: CANCELLED at once, the signal's reason as cause.
      const controller = new AbortController()
      const waiting = behind.next({ signal: controller.signal })
      setTimeout(() => controller.abort(new Error('enough')), 20)
      const started = Date.now()
      await assert.rejects(waiting, (e) => {
        assert.ok(fails('CANCELLED')(e))
        assert.equal(/** @type {Error} */ (/** @type {Error} */ (e).cause).message, 'enough')
        return true
      })
      // At once: before the floor came (a give-up that waited for the floor
      // would answer after it). How long it took is printed.
      console.log(`IDGEN-04: the give-up answered after ${Date.now() - started} ms`)
      assert.ok(Date.now() < floor, 'the give-up waited for the floor')
      await assert.rejects(behind.take(5, { signal: AbortSignal.timeout(20) }), fails('CANCELLED'))

      // The waiting call resolves once the store's clock passes the floor.
      const [next, more] = await Promise.all([behind.next(), behind.take(3)])
      // The store's clock as the client tracks it may lead the local one by a round trip.
      assert.ok(Date.now() >= floor - 50, 'waited for the floor')
      assert.ok(layout.parts(next).timestampMs > floor)
      assert.equal(more.length, 3)
      // Two IDs a millisecond and no lead: the next tick may not have come yet.
      const later = await behind.next()
      assert.ok(!taken.includes(next) && later > next, 'above everything issued before')
      await behind.close()
    })

    // IDGEN-04: a layout whose time range is used up fails OVERFLOW, waiting or not.
    test('IDGEN-04 OVERFLOW once the layout’s time range is used up', async () => {
      // 8 bits of milliseconds from the Unix epoch: used up in 1970.
      const layout = IdLayout.custom(8, 10, 12, { epochMs: 0 })
      const ids = await store.ids('idgen-04-overflow', { layout })
      assert.throws(() => ids.nextNow(), fails('OVERFLOW'))
      assert.throws(() => ids.takeNow(5), fails('OVERFLOW'))
      await assert.rejects(ids.next(), fails('OVERFLOW'))
      await assert.rejects(ids.take(5), fails('OVERFLOW'))
      await ids.close()
    })

    // ERR-03: bad input fails with its ERR-01 code; nothing crashes.
    test('ERR-03 bad layouts, options, counts and IDs fail INVALID_ARGUMENT', async () => {
      const invalid = fails('INVALID_ARGUMENT')
      for (const bad of [
        () => IdLayout.custom(0, 10, 12),
        () => IdLayout.custom(41, 10, 13),
        () => IdLayout.custom(41, 0, 12),
        () => IdLayout.custom(41.5, 10, 12),
        () => IdLayout.custom(-1, 10, 12),
        () => IdLayout.custom(300, 10, 12),
        () => IdLayout.custom(41, 10, 12, { tickMs: 0 }),
        () => IdLayout.custom(41, 10, 12, { tickMs: 3_600_001 }),
        () => IdLayout.custom(41, 10, 12, { epochMs: -1 }),
        () => IdLayout.custom(41, 10, 12, { epoch: 0 }),
        () => IdLayout.custom(/** @type {any} */ ('41'), 10, 12),
        () => IdLayout.DEFAULT.parts(-1n),
        () => IdLayout.DEFAULT.parts(2n ** 64n),
        () => IdLayout.DEFAULT.parts(1.5),
        () => IdLayout.DEFAULT.parts(/** @type {any} */ ('1')),
      ]) {
        assert.throws(bad, invalid)
      }
      await assert.rejects(
        store.ids('idgen-err', { layout: /** @type {any} */ ({ timeBits: 41 }) }),
        invalid,
      )
      await assert.rejects(store.ids('idgen-err', /** @type {any} */ ({ maxlead: 1 })), invalid)
      await assert.rejects(store.ids('idgen-err', { limit: -1 }), invalid)
      await assert.rejects(store.ids('idgen-err', { preferred: 1.5 }), invalid)
      await assert.rejects(store.ids('idgen-err', { maxLead: 'soon' }), fails('INVALID_TTL'))
      await assert.rejects(store.ids(''), fails('EMPTY_NAME'))
      await assert.rejects(store.ids('idgen-err', { ownerKey: '' }), fails('EMPTY_NAME'))
      // jsSafe has 6 bits of node: 64 node numbers.
      await assert.rejects(
        store.ids('idgen-err', { layout: IdLayout.jsSafe(), limit: 100 }),
        invalid,
      )

      const ids = await store.ids('idgen-err', { limit: 1 })
      // The only slot is held: NOT_READY (retryable), not a crash.
      await assert.rejects(store.ids('idgen-err', { limit: 1 }), fails('NOT_READY'))
      // The namespace's layout is fixed by its first use.
      await assert.rejects(
        store.ids('idgen-err', { limit: 1, layout: IdLayout.jsSafe() }),
        fails('NAMESPACE_MISMATCH'),
      )
      for (const n of [0, -1, 1.5, 2 ** 24 + 1, 2 ** 40, NaN, '3', undefined]) {
        assert.throws(() => ids.takeNow(/** @type {any} */ (n)), invalid, `takeNow(${n})`)
        await assert.rejects(ids.take(/** @type {any} */ (n)), invalid, `take(${n})`)
      }
      await assert.rejects(ids.next(/** @type {any} */ ({ signal: 'no' })), invalid)
      await assert.rejects(ids.take(1, /** @type {any} */ ({ wait: 1 })), invalid)

      // Use after close: every call fails LOST; a second close does nothing.
      await ids.close()
      await ids.close()
      assert.throws(
        () => ids.nextNow(),
        (e) => e instanceof LostError && fails('LOST')(e),
      )
      assert.throws(() => ids.takeNow(3), fails('LOST'))
      await assert.rejects(ids.next(), fails('LOST'))
      await assert.rejects(ids.take(3), fails('LOST'))
      // Its slot was released: the namespace has it again.
      const again = await store.ids('idgen-err', { limit: 1 })
      assert.equal(again.node, ids.node)
      await again.close()
    })

    // A signal aborted before the call rejects CANCELLED without asking anything.
    test('a signal aborted before next, take or ids rejects CANCELLED', async () => {
      const ids = await store.ids('idgen-cancel')
      const aborted = AbortSignal.abort(new Error('before'))
      await assert.rejects(ids.next({ signal: aborted }), fails('CANCELLED'))
      await assert.rejects(ids.take(2, { signal: aborted }), fails('CANCELLED'))
      await assert.rejects(store.ids('idgen-cancel', { signal: aborted }), fails('CANCELLED'))
      // A signal that does not abort changes nothing.
      const live = new AbortController().signal
      assert.ok((await ids.next({ signal: live })) < (await ids.take(2, { signal: live }))[0])
      await ids.close()
    })
  })
}

idSuite('embedded', async () => memory())

describe('ID generators on the server store', () => {
  const server = serverFixture()
  idSuite('server', () => connect(server.url))
})
