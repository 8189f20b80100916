#!/usr/bin/env node
// The Node holder of the chaos harness (docs/chaos.md). Holds keys k0… of
// the lock `chaos` through the Node binding, one at a time, until SIGTERM,
// recording its history in the harness's format (one JSON object a line,
// `ns` from CLOCK_MONOTONIC: process.hrtime.bigint). The binding's own calls
// are out of its sight, so it records what its holder sees: the request (no
// request id), the grant (its fence), the function's start and end, the
// loss and the hold's outcome. It makes no fenced write: Node has no flock
// for the register's. Its holds are short, so that no renewal is needed.
'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { parseArgs } = require('node:util')
const { setTimeout: sleep } = require('node:timers/promises')
const { connect } = require(path.join(__dirname, '../../bindings-node'))

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    name: { type: 'string' },
    history: { type: 'string' },
    register: { type: 'string' },
    seed: { type: 'string', default: '0' },
    keys: { type: 'string', default: '4' },
    'ttl-ms': { type: 'string', default: '1000' },
  },
})

const fd = fs.openSync(args.history, 'a')
/** Appends one event, one write(2) a line; fences are bigints, written exactly. */
function record(kind, fields = {}) {
  const { fence, ...rest } = fields
  let line = JSON.stringify({
    ns: 0,
    process: args.name,
    pid: process.pid,
    kind,
    ...rest,
  })
  line = line.replace('"ns":0', `"ns":${process.hrtime.bigint()}`)
  if (fence !== undefined) line = `${line.slice(0, -1)},"fence":${fence}}`
  fs.writeSync(fd, `${line}\n`)
}

// A small seeded generator (mulberry32), so that a seed replays the choices.
let state = Number(args.seed) >>> 0
function random() {
  state = (state + 0x6d2b79f5) >>> 0
  let t = state
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

let stop = false
process.on('SIGTERM', () => {
  stop = true
})

async function main() {
  const ttlMs = Number(args['ttl-ms'])
  let store = null
  while (store === null) {
    store = await connect(args.url).catch(() => null)
    if (store === null) await sleep(50)
  }
  const lock = store.lock('chaos', { ttl: ttlMs, wait: 5000 })
  while (!stop) {
    const key = `k${Math.floor(random() * Number(args.keys))}`
    const holdFor = random() * 3
    const attempt = random() < 0.1
    record('request', { key, queue: !attempt, ttl_ms: ttlMs })
    let fence
    const held = async (lease) => {
      fence = lease.fence
      record('granted', { key, fence, lease: `${process.pid.toString(16)}-${fence.toString(16)}` })
      record('start', { key, fence })
      await sleep(holdFor)
      record('end', { key, fence })
      return true
    }
    try {
      const ran = attempt ? await lock.tryHold(key, held) : await lock.hold(key, held)
      if (ran === null) record('outcome', { key, reason: 'not_held' })
      else record('outcome', { key, fence, reason: 'ok' })
    } catch (error) {
      const code = error.code ?? String(error)
      if (fence !== undefined && code === 'LOST') record('lost', { key, fence, reason: code })
      record('outcome', { key, fence, reason: code })
      await sleep(1 + random() * 20)
    }
  }
  await store.close()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
