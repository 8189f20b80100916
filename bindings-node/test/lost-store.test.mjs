// LOCK-21 through the Node binding: a server store killed (SIGKILL) under a
// held key. hold rejects LOST by the holder's deadline, not a ttl later, and
// the release of the lost lease never delays it.

import assert from 'node:assert/strict'
import { once } from 'node:events'
import { afterEach, beforeEach, describe, test } from 'node:test'

import { connect, LostError } from 'leasehold'

import { startServer } from './helpers/server.mjs'

const TTL_MS = 2_000
// LOCK-21's bound on the hold, from the kill: the holder's deadline is at most
// ttl - margin (the default margin, a tenth of the ttl) after it (the grant or
// renewal it counts from was sent before the kill), and a hold that waited for
// its release, or for the store, would end a ttl or a connect timeout (5 s)
// after that deadline. Half a ttl past the deadline tells the two apart and
// leaves a loaded machine's scheduling a second (the Rust test:
// server/tests/holder_engine.rs).
const BOUND_MS = TTL_MS - TTL_MS / 10 + TTL_MS / 2

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
      console.log(
        `LOCK-21: hold rejected ${elapsed.toFixed(0)} ms after the kill (bound ${BOUND_MS} ms)`,
      )
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
      console.log(
        `LOCK-21: hold rejected ${elapsed.toFixed(0)} ms after the kill (bound ${BOUND_MS} ms)`,
      )
      assert.ok(elapsed < BOUND_MS, `hold rejected ${elapsed.toFixed(0)} ms after the kill`)
    } finally {
      await store.close()
    }
  })
})
