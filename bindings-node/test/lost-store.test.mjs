// LOCK-21 through the Node binding: a server store killed (SIGKILL) under a
// held key. hold rejects LOST by the holder's deadline, not a ttl later, and
// the release of the lost lease never delays it.

import assert from 'node:assert/strict'
import { once } from 'node:events'
import { afterEach, beforeEach, describe, test } from 'node:test'

import { connect, LostError } from 'leasehold'

import { startServer } from './helpers/server.mjs'

const TTL_MS = 2_000
// The bound of LOCK-21: the holder's deadline (before the ttl) plus a round trip.
const BOUND_MS = TTL_MS + 500

/**
 * Settles as `promise` does, failing after `ms`. Its timer also keeps the
 * event loop alive meanwhile: a held lease never does by itself (LOCK-09),
 * and once the server is killed nothing else would.
 * @template T
 * @param {Promise<T>} promise
 * @param {string} what
 * @param {number} [ms]
 * @returns {Promise<T>}
 */
function within(promise, what, ms = 10_000) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms)
  })
  return /** @type {Promise<T>} */ (Promise.race([promise, late])).finally(() =>
    clearTimeout(timer),
  )
}

describe('LOCK-21 a killed server store', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let server
  beforeEach(async () => {
    server = await startServer()
  })
  afterEach(() => server.stop())

  /** Kills the server (SIGKILL) and returns the time of the kill. */
  function kill() {
    process.kill(server.pid, 'SIGKILL')
    return performance.now()
  }

  test('LOCK-21 a killed store fails the hold at the deadline', async () => {
    const store = await connect(server.url)
    try {
      const lock = store.lock('node-lock-21', { ttl: '2s' })
      /** @type {number | null} */
      let killedAt = null
      const holding = lock.hold('k', async (lease) => {
        killedAt = kill()
        await within(once(lease.signal, 'abort'), 'the loss reaching the function')
        assert.ok(lease.signal.reason instanceof LostError)
        assert.equal(lease.lost, true)
        return 'ended after the loss'
      })
      await assert.rejects(within(holding, 'the end of the hold'), (e) => {
        assert.ok(e instanceof LostError, String(e))
        assert.equal(e.code, 'LOST')
        assert.equal(e.result, 'ended after the loss')
        return true
      })
      assert.notEqual(killedAt, null, 'the function ran')
      const elapsed = performance.now() - /** @type {number} */ (killedAt)
      assert.ok(elapsed < BOUND_MS, `hold rejected ${elapsed.toFixed(0)} ms after the kill`)
    } finally {
      await store.close()
    }
  })

  test('LOCK-21 an unreachable store bounds the release by the deadline', async () => {
    const store = await connect(server.url)
    try {
      const lock = store.lock('node-lock-21', { ttl: '2s' })
      /** @type {number | null} */
      let killedAt = null
      const holding = lock.hold('k', async () => {
        killedAt = kill()
      })
      await assert.rejects(within(holding, 'the end of the hold'), (e) => {
        assert.ok(e instanceof LostError, String(e))
        assert.equal(e.code, 'LOST')
        assert.equal(e.lossReason, 'expired')
        return true
      })
      assert.notEqual(killedAt, null, 'the function ran')
      const elapsed = performance.now() - /** @type {number} */ (killedAt)
      assert.ok(elapsed < BOUND_MS, `hold rejected ${elapsed.toFixed(0)} ms after the kill`)
    } finally {
      await store.close()
    }
  })
})
