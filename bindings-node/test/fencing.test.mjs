// `leasehold/fencing` against the real PostgreSQL `make postgres` starts (its
// URL in LEASEHOLD_POSTGRES_URL or $CARGO_TARGET_DIR/postgres/url), through pg.

import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'

import pg from 'pg'

import { connect, memory } from 'leasehold'
import { FenceRefused, fencedUpdate, fencedWrite } from 'leasehold/fencing'

import { postgresUrl } from './helpers/postgres.mjs'
import { serverFixture } from './helpers/server.mjs'
import { sleep } from './helpers/wait.mjs'

/** @type {pg.Client} */
let client
before(async () => {
  client = new pg.Client({ connectionString: postgresUrl() })
  await client.connect()
})
after(() => client.end())

/** A fresh table of the test's own: key, fence numeric(20), text. */
async function table() {
  const name = `node_${randomUUID().replaceAll('-', '')}`
  await client.query(
    `CREATE TABLE ${name} (key text PRIMARY KEY, fence numeric(20) NOT NULL, text text NOT NULL)`,
  )
  return name
}

/** The row of `key`: its fence (a bigint) and text, or null. @param {string} t @param {string} key */
async function row(t, key) {
  const { rows } = await client.query(`SELECT fence::text, text FROM ${t} WHERE key = $1`, [key])
  return rows.length === 0 ? null : { fence: BigInt(rows[0].fence), text: rows[0].text }
}

test('a larger fence lands, a smaller or equal one is refused and changes nothing', async () => {
  const t = await table()
  await fencedWrite(client, t, 'k', 5n, { text: 'five' })
  await fencedWrite(client, t, 'k', 7n, { text: 'seven' })
  for (const stale of [7n, 6n, 1n]) {
    await assert.rejects(fencedWrite(client, t, 'k', stale, { text: 'stale' }), (e) => {
      assert.ok(e instanceof FenceRefused)
      assert.equal(e.fence, stale)
      assert.equal(e.key, 'k')
      return true
    })
    await assert.rejects(fencedUpdate(client, t, 'k', stale, { text: 'stale' }), FenceRefused)
  }
  assert.deepEqual(await row(t, 'k'), { fence: 7n, text: 'seven' })
  await fencedUpdate(client, t, 'k', 8n, { text: 'eight' })
  assert.deepEqual(await row(t, 'k'), { fence: 8n, text: 'eight' })
})

test('fencedUpdate refuses a missing row', async () => {
  const t = await table()
  await assert.rejects(fencedUpdate(client, t, 'k', 1n, { text: 'x' }), FenceRefused)
  assert.equal(await row(t, 'k'), null)
})

// Fences above 2^63 - 1 (server fences from 2038 on) keep their order, exactly.
test('fences above bigint keep their order', async () => {
  const t = await table()
  await fencedWrite(client, t, 'k', 2n ** 63n - 1n, { text: 'bigint max' })
  await fencedWrite(client, t, 'k', 2n ** 64n - 1n, { text: 'u64 max' })
  await assert.rejects(fencedWrite(client, t, 'k', 2n ** 63n, { text: 'stale' }), FenceRefused)
  assert.deepEqual(await row(t, 'k'), { fence: 2n ** 64n - 1n, text: 'u64 max' })
  await assert.rejects(fencedWrite(client, t, 'k', 2n ** 64n, { text: 'too wide' }), RangeError)
})

// The paused holder: A holds the key with a 1 s ttl and stops renewing past its
// lease, B holds it and writes with its larger fence; A's late write is refused.
function pausedHolder(/** @type {string} */ kind, /** @type {() => Promise<any>} */ open) {
  describe(`a holder paused past its lease on the ${kind} store`, () => {
    /** @type {import('leasehold').Store} */
    let store
    before(async () => {
      store = await open()
    })
    after(() => store.close())

    test('is refused after the next holder wrote', async () => {
      const t = await table()
      const a = await store.tryAcquire('chat-1', { ttl: '1s' })
      assert.ok(a !== null)
      await fencedWrite(client, t, 'chat-1', a.fence, { text: 'a, on time' })
      await sleep(1500) // A is paused past its ttl
      const b = await store.tryAcquire('chat-1', { ttl: '1s' })
      assert.ok(b !== null, "A's lease ran out")
      assert.ok(b.fence > a.fence)
      await fencedWrite(client, t, 'chat-1', b.fence, { text: 'b' })
      await assert.rejects(
        fencedWrite(client, t, 'chat-1', a.fence, { text: 'a, late' }),
        FenceRefused,
      )
      assert.deepEqual(await row(t, 'chat-1'), { fence: b.fence, text: 'b' })
      await b.release()
    })
  })
}

pausedHolder('embedded', async () => memory())
const server = serverFixture()
pausedHolder('server', () => connect(server.url))
