// What every remote store (etcd, PostgreSQL) does, run on two stores of one
// (DIST-01, PG-01): a held key that the other store's tryHold finds held and
// lists, a manual lease, a slot and 100 IDs, with fences growing throughout.

import assert from 'node:assert/strict'

import { Owner } from 'leasehold'

/**
 * @param {import('leasehold').Store} store
 * @param {import('leasehold').Store} other
 */
export async function checkRemoteStore(store, other) {
  /** @type {bigint[]} */
  const fences = []
  const grew = (/** @type {bigint} */ fence) => {
    assert.equal(typeof fence, 'bigint')
    assert.ok(
      fence > 0n && (fences.length === 0 || fence > fences[fences.length - 1]),
      `${fence} after ${fences}`,
    )
    fences.push(fence)
  }
  const lock = store.lock('summaries', { ttl: '2s' })
  const rival = other.lock('summaries', { ttl: '2s' })
  const ran = await lock.hold('chat-1', async (lease) => {
    grew(lease.fence)
    assert.equal(
      await rival.tryHold('chat-1', () => assert.fail('tryHold ran on a held key')),
      null,
    )
    const holders = await other.holders('summaries')
    assert.deepEqual(
      holders.map((h) => [h.key, h.fence]),
      [['chat-1', lease.fence]],
    )
    return 'ran'
  })
  assert.equal(ran, 'ran')
  const mine = await rival.tryHold('chat-1', (lease) => {
    grew(lease.fence)
    return 'mine'
  })
  assert.equal(mine, 'mine')

  const manual = await store.tryAcquire('batch', { ttl: '2s' })
  assert.ok(manual !== null && manual.name === 'batch')
  grew(manual.fence)
  assert.equal(await other.tryAcquire('batch', { ttl: '2s' }), null)
  await manual.extend('3s')
  await manual.release()
  const next = await other.acquire('batch', { ttl: '2s', wait: '10s' })
  grew(next.fence)
  await next.release()

  const slots = store.slots('nodes', { limit: 4 })
  const slot = await slots.acquire(new Owner('worker-a'))
  assert.ok(slot !== null && slot.slot >= 0 && slot.slot < 4)
  grew(slot.fence)
  assert.equal(await slots.release(slot, 0), true)

  const ids = await store.ids('orders', { limit: 4 })
  /** @type {bigint[]} */
  const taken = []
  for (let i = 0; i < 100; i++) taken.push(await ids.next())
  assert.ok(
    taken.every((id, i) => i === 0 || id > taken[i - 1]),
    'ids grow',
  )
  await ids.close()
}
