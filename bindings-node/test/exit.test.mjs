// The event loop: a process with nothing left to do exits on its own, a
// held lease or slot never keeps Node alive by itself, and after store.close()
// neither a held lease, a waiting call nor the open store does. Each case is
// a child process (test/fixtures) on the embedded store and a server store;
// it must exit 0 by itself, well before its time limit.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'

import { serverFixture } from './helpers/server.mjs'

const server = serverFixture()

/**
 * Runs a fixture; resolves with its exit code, output and run time, or
 * kills it and fails after `limitMs`.
 * @param {string} name
 * @param {number} [limitMs]
 */
async function runFixture(name, limitMs = 15_000) {
  const file = fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))
  const started = Date.now()
  const child = spawn(process.execPath, [file, server.url], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (t) => (out += t))
  child.stderr.setEncoding('utf8').on('data', (t) => (err += t))
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs)
  const [code, signal] = await once(child, 'exit')
  clearTimeout(timer)
  assert.equal(signal, null, `${name} did not exit on its own within ${limitMs} ms: ${out}${err}`)
  assert.equal(code, 0, `${name} exited ${code}: ${out}${err}`)
  return { out, ms: Date.now() - started }
}

// The fixtures are killed after 15 s (runFixture's limit): one that did not
// exit on its own would renew its 1 s leases forever. How long each took is
// printed.
test('a process with nothing left to do exits on its own (stores never closed)', async () => {
  const { out, ms } = await runFixture('idle.cjs')
  assert.equal(out.trim(), 'done')
  console.log(`idle.cjs exited after ${ms} ms`)
})

test('LOCK-09 a held lease or slot, watched through its signal, does not keep Node alive', async () => {
  const { out, ms } = await runFixture('held.cjs')
  assert.equal(out.trim(), 'holding')
  console.log(`held.cjs exited after ${ms} ms`)
})

test('LOCK-19 after store.close() no held lease, waiting call or store keeps Node alive', async () => {
  const { out } = await runFixture('close.cjs')
  const lines = out.trim().split('\n')
  assert.deepEqual(lines, [
    'embedded LOST:closed:closed CLOSED CLOSED',
    'server LOST:closed:closed CLOSED CLOSED',
  ])
})
