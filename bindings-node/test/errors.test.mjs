// Errors through the Node binding: every ERR-01 code as a LeaseholdError
// with `code` (LostError for LOST), bad arguments that throw those codes and
// never crash the process (ERR-03), the option bounds of LOCK-13, and a Rust
// panic that becomes INTERNAL.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { test } from 'node:test'

import { codes, LeaseholdError, LostError, memory } from 'leasehold'
import { memory as testMemory, panicLater, panicNow } from 'leasehold/testing'

import { fails } from './helpers/errors.mjs'
import { repo } from './helpers/server.mjs'

// ERR-01: the codes are the contracts' (and docs/errors.md's), in upper snake case.
test('ERR-01 every code of the contracts, as JS writes it', () => {
  const contracts = readFileSync(`${repo}/docs/contracts.md`, 'utf8')
  const line = contracts.split('\n').find((l) => l.startsWith('| ERR-01 |')) ?? ''
  const list = line.split('every language:')[1]?.split('(add codes')[0] ?? ''
  const listed = [...list.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1])
  assert.ok(listed.length >= 12, line)
  const js = listed.map((c) => c.replace(/(?<!^)([A-Z])/g, '_$1').toUpperCase())
  for (const code of js) assert.equal(codes[/** @type {keyof typeof codes} */ (code)], code)
  assert.ok('INVALID_ARGUMENT' in codes && 'CLOSED' in codes)
  const lost = new LostError('gone', { lossReason: 'expired' })
  assert.ok(lost instanceof LeaseholdError && lost instanceof Error)
  assert.equal(lost.code, 'LOST')
  assert.equal(lost.name, 'LostError')
  assert.equal(new LeaseholdError('TIMEOUT', 'slow').name, 'LeaseholdError')
})

// LOCK-13: ttl from 1 s to 1 h (10 s by default), maxHold >= ttl, margin below ttl/2;
// numbers are milliseconds, strings are parsed by the core.
test('LOCK-13 option bounds and duration forms', () => {
  const store = memory()
  const lock = store.lock('defaults')
  assert.equal(lock.ttl, 10_000)
  assert.equal(lock.margin, 1_000)
  assert.equal(lock.maxHold, null)
  assert.equal(lock.wait, null)
  const set = store.lock('set', { ttl: '1m30s', maxHold: '1h', wait: 250, margin: '2s' })
  assert.deepEqual([set.ttl, set.maxHold, set.wait, set.margin], [90_000, 3_600_000, 250, 2_000])
  assert.equal(store.lock('min', { ttl: 1000 }).ttl, 1000)
  assert.equal(store.lock('max', { ttl: '1h' }).ttl, 3_600_000)
  for (const options of [
    { ttl: 999 },
    { ttl: '0s' },
    { ttl: '61m' },
    { ttl: 3_600_001 },
    { ttl: -1 },
    { ttl: Number.NaN },
    { ttl: Number.POSITIVE_INFINITY },
    { ttl: '30' },
    { ttl: 'soon' },
    { ttl: '10s', maxHold: '9s' },
    { ttl: '10s', margin: '5s' },
    { ttl: {} },
    { ttl: true },
    { wait: [] },
  ]) {
    assert.throws(
      () => store.lock('bad', /** @type {any} */ (options)),
      fails('INVALID_TTL'),
      JSON.stringify(options),
    )
  }
  assert.throws(() => store.lock(''), fails('EMPTY_NAME'))
})

// ERR-03: wrong types and values from JS throw ERR-01 codes and never crash the process.
test('ERR-03 bad arguments throw codes, never crash', async () => {
  const store = memory()
  const lock = store.lock('input')
  const any = /** @type {any} */ (store)
  const anyLock = /** @type {any} */ (lock)
  for (const name of [undefined, null, 42, {}, Symbol('x'), 1n]) {
    assert.throws(() => any.lock(name), fails('INVALID_ARGUMENT'))
    await assert.rejects(
      anyLock.hold(name, () => {}),
      fails('INVALID_ARGUMENT'),
    )
    await assert.rejects(
      anyLock.tryHold(name, () => {}),
      fails('INVALID_ARGUMENT'),
    )
    await assert.rejects(any.tryAcquire(name), fails('INVALID_ARGUMENT'))
    await assert.rejects(any.acquire(name), fails('INVALID_ARGUMENT'))
  }
  await assert.rejects(
    lock.hold('', () => {}),
    fails('EMPTY_NAME'),
  )
  await assert.rejects(anyLock.hold('k'), fails('INVALID_ARGUMENT'))
  await assert.rejects(anyLock.hold('k', 'not a function'), fails('INVALID_ARGUMENT'))
  await assert.rejects(
    anyLock.hold('k', () => {}, { signal: {} }),
    fails('INVALID_ARGUMENT'),
  )
  await assert.rejects(
    anyLock.hold('k', () => {}, { sigal: AbortSignal.abort() }),
    fails('INVALID_ARGUMENT'),
  )
  await assert.rejects(
    anyLock.hold('k', () => {}, 'fast'),
    fails('INVALID_ARGUMENT'),
  )
  await assert.rejects(
    anyLock.hold('k', () => {}, { wait: 'later' }),
    fails('INVALID_TTL'),
  )
  assert.throws(() => any.lock('x', { maxhold: '1m' }), fails('INVALID_ARGUMENT'))
  assert.throws(() => any.lock('x', 5), fails('INVALID_ARGUMENT'))
  // Huge and odd strings: over the core's 1024-byte limit, a lone surrogate, a NUL.
  const huge = 'k'.repeat(4 * 1024 * 1024)
  await assert.rejects(
    lock.hold(huge, () => {}),
    fails('INVALID_ARGUMENT'),
  )
  assert.throws(() => store.lock(huge), fails('INVALID_ARGUMENT'))
  await assert.rejects(store.tryAcquire(huge), fails('INVALID_ARGUMENT'))
  assert.equal(await lock.hold('\ud800-lone', () => 'odd but fine'), 'odd but fine')
  assert.equal(await lock.hold('nul\u0000key', () => 'fine'), 'fine')
  // A duration string of any length is refused, not crashed on.
  assert.throws(() => store.lock('x', { ttl: '9'.repeat(100_000) + 's' }), fails('INVALID_TTL'))
  assert.throws(() => store.lock('x', { ttl: 1e300 }), fails('INVALID_TTL'))
  // Use after close, and releases twice.
  const lease = await store.tryAcquire('twice')
  assert.ok(lease !== null)
  await lease.release()
  await lease.release()
  await store.close()
  await store.close()
  await assert.rejects(
    lock.hold('k', () => {}),
    fails('CLOSED'),
  )
  await assert.rejects(store.tryAcquire('after'), fails('CLOSED'))
  // Bad test-store options.
  assert.throws(() => testMemory(/** @type {any} */ ({ clock: 'now' })), fails('INVALID_ARGUMENT'))
})

// ERR-01: a Rust panic becomes INTERNAL, synchronously and on the runtime, and the process goes on.
test('ERR-01 a Rust panic becomes an INTERNAL error', async () => {
  assert.throws(() => panicNow('on purpose'), fails('INTERNAL'))
  await assert.rejects(panicLater('on purpose, later'), fails('INTERNAL'))
  assert.equal(
    await memory()
      .lock('after-panic')
      .hold('k', () => 'still fine'),
    'still fine',
  )
})

// ERR-03: a holding the addon never gave (a fraction of an id, zero, a
// negative, NaN, an id past every one) is CLOSED, never another holding.
test('ERR-03 a made-up key holding fails CLOSED', async () => {
  const native = createRequire(import.meta.url)('../lib/native.js')
  const store = native.memory()
  const lock = store.lock('made-up', null, null, null, null)
  const held = await native.lockBegin(lock, 'k', null, null)
  for (const id of [held + 0.5, 0, -1, NaN, held + 1e6]) {
    assert.throws(
      () => native.holdingLost(id),
      (/** @type {any} */ e) => e.code === 'CLOSED',
    )
    assert.throws(
      () => native.holdingEnd(id),
      (/** @type {any} */ e) => e.code === 'CLOSED',
    )
  }
  assert.equal(native.holdingLost(held), false)
  await native.holdingEnd(held)
  await store.close()
})

// ERR-03: the addon's holdings of a key and of a slot end twice the same
// way, CLOSED (the library itself ends each once).
test('ERR-03 a held key and a held slot ended twice fail CLOSED alike', async () => {
  const native = createRequire(import.meta.url)('../lib/native.js')
  const store = native.memory()
  const lock = store.lock('twice', null, null, null, null)
  // The addon's lock is an External, its key holding a number: lib/ wraps both.
  const { Holding } = createRequire(import.meta.url)('../lib/holding.js')
  const key = new Holding(await native.lockBegin(lock, 'k', null, null), 'k', 'twice')
  const slots = store.slots('twice', { limit: 1 })
  const slot = await slots.begin(native.owner('o', null), null, null)
  for (const holding of [key, slot]) {
    assert.ok(holding !== null)
    await holding.end()
    await assert.rejects(
      async () => holding.end(),
      (e) => e.code === 'CLOSED',
    )
  }
  await store.close()
})
