#!/usr/bin/env node
// The Node holder of `make demo`. For DEMO_SECONDS (default 4) it holds
// random keys chat-1 … chat-3 of lock `summaries` on the server store at
// LEASEHOLD_STORE, 20–80 ms each; inside each hold it writes its fence to the
// fenced resource $DEMO_DIR/<key>, which refuses a fence that is not larger
// than the last one it saw (then the holder prints REJECTED and exits 1).
'use strict'

const fs = require('node:fs/promises')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')
const { connect } = require('..')

const KEYS = ['chat-1', 'chat-2', 'chat-3']
const name = process.env.DEMO_NAME || '1'
const dir = process.env.DEMO_DIR || '.'
const seconds = Number(process.env.DEMO_SECONDS ?? 4)
const url = process.env.LEASEHOLD_STORE || 'leasehold://127.0.0.1:7450'

/**
 * Writes `fence` to the resource of `key` unless a fence at least as large is there already.
 * @param {string} key
 * @param {bigint} fence
 */
async function writeFenced(key, fence) {
  const file = path.join(dir, key)
  const text = await fs.readFile(file, 'utf8').catch(() => '0')
  const last = BigInt(text.trim() || '0')
  if (fence <= last)
    throw new Error(`REJECTED fence ${fence} for ${key}: the resource has seen ${last}`)
  await fs.writeFile(file, fence.toString())
}

async function main() {
  const store = await connect(url)
  const summaries = store.lock('summaries', { ttl: '5s' })
  const end = Date.now() + seconds * 1000
  while (Date.now() < end) {
    const key = KEYS[Math.floor(Math.random() * KEYS.length)]
    const asked = Date.now()
    await summaries.hold(key, async (lease) => {
      console.log(
        `[node-${name}] holds summaries/${key} fence=${lease.fence} waited=${Date.now() - asked}ms at=${Date.now()}`,
      )
      await writeFenced(key, lease.fence)
      await sleep(20 + Math.floor(Math.random() * 61), undefined, { signal: lease.signal })
      console.log(`[node-${name}] done summaries/${key} fence=${lease.fence} at=${Date.now()}`)
    })
  }
  await store.close()
}

main().catch((error) => {
  console.log(`[node-${name}] ${error.message}`)
  process.exit(1)
})
