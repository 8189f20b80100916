// Connecting to the server store: TLS with a CA given as a string or a
// Buffer, listing holders, and the exports that index.d.ts declares.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'

import * as leasehold from 'leasehold'
import * as testing from 'leasehold/testing'

import { makeCertificates, repo, serverFixture, startServer } from './helpers/server.mjs'

describe('the server store over TLS', () => {
  /** @type {Awaited<ReturnType<typeof makeCertificates>>} */
  let certs = null
  /** @type {Awaited<ReturnType<typeof startServer>> | null} */
  let server = null
  before(async () => {
    certs = await makeCertificates()
    if (certs) server = await startServer({ tls: { cert: certs.cert, key: certs.key } })
  })
  after(async () => {
    await server?.stop()
    await certs?.remove()
  })

  test('leaseholds:// with tls.ca holds keys; without the CA it fails', async (t) => {
    if (!certs || !server) return t.skip('no openssl to make certificates')
    const pem = readFileSync(certs.ca, 'utf8')
    for (const ca of [pem, Buffer.from(pem)]) {
      const store = await leasehold.connect(server.url, { tls: { ca } })
      assert.equal(await store.lock('tls').hold('k', (lease) => typeof lease.fence), 'bigint')
      await store.close()
    }
    await assert.rejects(
      leasehold.connect(server.url),
      (e) => e instanceof leasehold.LeaseholdError,
    )
    await assert.rejects(leasehold.connect(server.url, { tls: { ca: 'not a pem' } }), (e) => {
      return e instanceof leasehold.LeaseholdError && e.code !== 'INTERNAL'
    })
  })
})

describe('store.holders', () => {
  const server = serverFixture()

  test('lists what is held, on both stores', async () => {
    for (const store of [leasehold.memory(), await leasehold.connect(server.url)]) {
      await store.lock('listed').hold('k', async (lease) => {
        const [holder] = await store.holders('listed')
        assert.equal(holder.lock, 'listed')
        assert.equal(holder.key, 'k')
        assert.equal(holder.fence, lease.fence)
        assert.equal(typeof holder.heldFor, 'number')
      })
      assert.deepEqual(await store.holders('listed'), [])
      await store.close()
    }
  })

  test('ERR-03 bad URLs and options fail INVALID_ARGUMENT', async () => {
    const connect = /** @type {any} */ (leasehold.connect)
    for (const url of ['http://x', 'nonsense', 'leasehold://', 42, undefined]) {
      await assert.rejects(connect(url), { code: 'INVALID_ARGUMENT' })
    }
    await assert.rejects(connect(server.url, { tokn: 'x' }), { code: 'INVALID_ARGUMENT' })
    await assert.rejects(connect(server.url, { token: 5 }), { code: 'INVALID_ARGUMENT' })
    await assert.rejects(connect(server.url, { tls: { ca: 5 } }), { code: 'INVALID_ARGUMENT' })
    await assert.rejects(connect(server.url, { connectTimeout: 'never' }), { code: 'INVALID_TTL' })
    await assert.rejects(connect(server.url, { identity: 5 }), { code: 'INVALID_ARGUMENT' })
    for (const identity of ['two\nlines', 'x'.repeat(257)]) {
      await assert.rejects(connect(server.url, { identity }), {
        code: 'INVALID_ARGUMENT',
        message: /the identity/,
      })
    }
  })
})

/** The names a .d.ts file exports (`export class X`, `export function x`, `export const x`). */
function declared(/** @type {string} */ file) {
  const text = readFileSync(`${repo}/bindings-node/${file}`, 'utf8')
  return [...text.matchAll(/^export (?:class|function|const) (\w+)/gm)].map((m) => m[1]).sort()
}

test('the runtime exports are what index.d.ts and testing.d.ts declare', () => {
  assert.deepEqual(
    Object.keys(leasehold)
      .filter((k) => k !== 'default')
      .sort(),
    declared('index.d.ts'),
  )
  assert.deepEqual(
    Object.keys(testing)
      .filter((k) => k !== 'default')
      .sort(),
    declared('testing.d.ts'),
  )
})
