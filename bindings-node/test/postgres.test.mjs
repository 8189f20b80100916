// The PostgreSQL store through the Node binding (PG-01): connect('postgres://…')
// on the PostgreSQL `make postgres` runs, with the same lock, manual, slot and
// ID APIs, each test on a schema of its own.

import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'

import { connect } from 'leasehold'

import { postgresUrl } from './helpers/postgres.mjs'
import { checkRemoteStore } from './helpers/remote-store.mjs'

/** The test PostgreSQL's URL with a schema no other test uses. */
function storeUrl() {
  const base = postgresUrl()
  const schema = `pg01_node_${randomUUID().replaceAll('-', '').slice(0, 16)}`
  return `${base}${base.includes('?') ? '&' : '?'}schema=${schema}`
}

// PG-01: a postgres:// URL opens a store with the same lock, manual, slot and ID APIs.
test('PG-01 connect(postgres://) holds keys, manual leases, slots and ids', async () => {
  const url = storeUrl()
  const store = await connect(url)
  const other = await connect(url.replace('postgres://', 'postgresql://'))
  try {
    await checkRemoteStore(store, other)
  } finally {
    await store.close()
    await other.close()
  }
})

// PG-01, ERR-01: a bad PostgreSQL URL fails INVALID_ARGUMENT before anything is
// sent, and an unreachable database fails UNAVAILABLE.
test('PG-01 bad postgres URLs fail clearly', async () => {
  /** @param {string} code @param {RegExp} message */
  const fails = (code, message) => (/** @type {any} */ e) => {
    assert.equal(e.code, code)
    assert.match(e.message, message)
    return true
  }
  await assert.rejects(
    connect('postgres://u@127.0.0.1/db?schema=Not-An-Identifier'),
    fails('INVALID_ARGUMENT', /schema/),
  )
  await assert.rejects(
    connect('postgres://u@127.0.0.1/db?no_such_option=1'),
    fails('INVALID_ARGUMENT', /no_such_option/),
  )
  await assert.rejects(
    connect('postgres://u@127.0.0.1:1/db?connect_timeout=2'),
    fails('UNAVAILABLE', /PostgreSQL/),
  )
})
