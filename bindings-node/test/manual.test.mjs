// Manual leases through the Node binding, on the embedded store
// and on a real server store process: MANUAL-01 … MANUAL-07.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { connect, LeaseholdError, memory } from 'leasehold'
import { memory as testMemory, VirtualClock } from 'leasehold/testing'

import { serverFixture } from './helpers/server.mjs'
import { sleep } from './helpers/wait.mjs'

function manualSuite(/** @type {string} */ kind, /** @type {() => Promise<any>} */ open) {
  describe(`manual leases on the ${kind} store`, () => {
    /** @type {import('leasehold').Store} */
    let store
    before(async () => {
      store = await open()
    })
    after(() => store.close())

    // MANUAL-01, MANUAL-07: tryAcquire answers at once, null when held; fences are growing bigints.
    test('MANUAL-01 tryAcquire answers at once; MANUAL-07 with a fence', async () => {
      const lease = await store.tryAcquire('batch', { ttl: '10s' })
      assert.ok(lease !== null)
      assert.equal(lease.name, 'batch')
      assert.equal(typeof lease.fence, 'bigint')
      assert.equal(await store.tryAcquire('batch', { ttl: 10_000 }), null)
      await lease.release()
      const again = await store.tryAcquire('batch')
      assert.ok(again !== null && again.fence > lease.fence)
      await again.release()
    })

    // MANUAL-02: acquire waits and is woken by the release.
    test('MANUAL-02 acquire waits for the release', async () => {
      const first = await store.tryAcquire('queue', { ttl: '10s' })
      assert.ok(first !== null)
      let granted = false
      const waiting = store.acquire('queue', { ttl: '10s' }).then((lease) => {
        granted = true
        return lease
      })
      await sleep(80)
      assert.equal(granted, false)
      await first.release()
      const second = await waiting
      assert.ok(second.fence > first.fence)
      await second.release()
    })

    // MANUAL-02, LOCK-18: acquire's wait and signal bound the wait.
    test('MANUAL-02 acquire gives up on its wait or its signal', async () => {
      const held = await store.tryAcquire('bounded', { ttl: '10s' })
      assert.ok(held !== null)
      await assert.rejects(store.acquire('bounded', { ttl: '10s', wait: 60 }), {
        code: 'WAIT_TIMEOUT',
      })
      const controller = new AbortController()
      const waiting = store.acquire('bounded', { signal: controller.signal })
      setTimeout(() => controller.abort(), 30)
      await assert.rejects(waiting, { code: 'CANCELLED' })
      await assert.rejects(store.acquire('bounded', { signal: AbortSignal.abort() }), {
        code: 'CANCELLED',
      })
      await held.release()
      const free = await store.tryAcquire('bounded')
      assert.ok(free !== null)
      await free.release()
    })

    // MANUAL-03, MANUAL-04: extend, release once, then releases do nothing; extend after release fails LOST.
    test('MANUAL-03 extend and MANUAL-04 release', async () => {
      const lease = await store.tryAcquire('extended', { ttl: '2s' })
      assert.ok(lease !== null)
      await lease.extend('1m')
      await lease.extend(5_000)
      await assert.rejects(lease.extend('0s'), { code: 'INVALID_TTL' })
      await assert.rejects(lease.extend('2h'), { code: 'INVALID_TTL' })
      await assert.rejects(lease.extend('soon'), { code: 'INVALID_TTL' })
      await lease.release()
      await lease.release()
      await assert.rejects(lease.extend('1m'), { code: 'LOST' })
    })

    // MANUAL-05: empty names and bad durations fail; acquisition is not reentrant.
    test('MANUAL-05 bad input fails and a second acquire contends', async () => {
      await assert.rejects(store.tryAcquire('', { ttl: '1m' }), { code: 'EMPTY_NAME' })
      await assert.rejects(store.tryAcquire('x', { ttl: '61m' }), { code: 'INVALID_TTL' })
      await assert.rejects(store.tryAcquire('x', { ttl: -5 }), { code: 'INVALID_TTL' })
      await assert.rejects(store.acquire('x', { ttl: '1m', wait: 'a while' }), {
        code: 'INVALID_TTL',
      })
      const lease = await store.tryAcquire('reentrant', { ttl: '1m' })
      assert.ok(lease !== null)
      assert.equal(await store.tryAcquire('reentrant', { ttl: '1m' }), null)
      await lease.release()
    })

    // MANUAL-06: one lease used from many promises at once.
    test('MANUAL-06 one lease, many concurrent calls', async () => {
      const lease = await store.tryAcquire('shared', { ttl: '10s' })
      assert.ok(lease !== null)
      await Promise.all(Array.from({ length: 16 }, () => lease.extend('10s')))
      await Promise.all(Array.from({ length: 16 }, () => lease.release()))
      const next = await store.tryAcquire('shared')
      assert.ok(next !== null)
      await next.release()
    })
  })
}

manualSuite('embedded', async () => memory())

describe('manual leases on the server store', () => {
  const server = serverFixture()
  manualSuite('server', () => connect(server.url))
})

// MANUAL-04: a lost lease's first release fails LOST and touches no newer holder; later ones succeed.
test('MANUAL-04 releasing a lost lease fails LOST once and leaves the new holder', async () => {
  const clock = new VirtualClock()
  const store = testMemory({ clock })
  const old = await store.tryAcquire('expiring', { ttl: '1s' })
  assert.ok(old !== null)
  await clock.advance('1s')
  const current = await store.tryAcquire('expiring', { ttl: '1m' })
  assert.ok(current !== null && current.fence > old.fence)
  await assert.rejects(old.release(), (e) => e instanceof LeaseholdError && e.code === 'LOST')
  await old.release()
  assert.equal(await store.tryAcquire('expiring', { ttl: '1m' }), null)
  await current.release()
  await store.close()
})
