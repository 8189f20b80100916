// The etcd store through the Node binding (DIST-01): connect('etcd://…') on
// a real etcd member, with the same lock, manual and slot APIs.

import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test } from 'node:test'

import { connect } from 'leasehold'

import { startEtcd } from './helpers/etcd.mjs'
import { checkRemoteStore } from './helpers/remote-store.mjs'

/** @type {Awaited<ReturnType<typeof startEtcd>>} */
let etcd
/** @type {Awaited<ReturnType<typeof startEtcd>>} */
let old
before(async () => {
  etcd = await startEtcd()
  old = await startEtcd('LEASEHOLD_ETCD_34')
})
after(async () => {
  await etcd?.stop()
  await old?.stop()
})

// DIST-01: an etcd:// URL opens a store with the same lock, manual, slot and ID APIs.
test('DIST-01 connect(etcd://) holds keys, manual leases and slots', async () => {
  const url = etcd.url(`dist01-node-${randomUUID()}`)
  const store = await connect(url)
  const other = await connect(url, { acceptOldEtcd: false })
  try {
    await checkRemoteStore(store, other)
  } finally {
    await store.close()
    await other.close()
  }
})

// DIST-01, DIST-08: acceptOldEtcd reaches the driver: an etcd 3.4 older than 3.4.32 is
// refused (PROTOCOL, naming the option) without it and holds with it.
test('DIST-01 acceptOldEtcd opens an old etcd, refused without it', async () => {
  const url = old.url(`dist01-node-old-${randomUUID()}`)
  await assert.rejects(connect(url), (/** @type {any} */ e) => {
    assert.equal(e.code, 'PROTOCOL')
    assert.match(e.message, /accept_old_etcd/)
    return true
  })
  const store = await connect(url, { acceptOldEtcd: true })
  try {
    const fence = await store.lock('old', { ttl: '2s' }).hold('k', (lease) => lease.fence)
    assert.ok(fence > 0n)
  } finally {
    await store.close()
  }
})

// DIST-01: the etcd options are checked by type before anything is sent.
test('DIST-01 connect checks the etcd options', async () => {
  const connectAny = /** @type {any} */ (connect)
  const url = 'etcd://127.0.0.1:1/p'
  await assert.rejects(connectAny(url, { user: 5 }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(connectAny(url, { password: {} }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(connectAny(url, { clientCert: 5 }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(connectAny(url, { clientKey: 5 }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(connectAny(url, { acceptOldEtcd: 'yes' }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(connectAny(url, { clientcert: 'x' }), { code: 'INVALID_ARGUMENT' })
})
