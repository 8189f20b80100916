#!/usr/bin/env node
// The Node holder of the chaos harness (docs/chaos.md). Holds keys k0… of
// the lock `chaos` through the Node binding, one at a time, until SIGTERM,
// recording its history in the harness's format (one JSON object a line,
// `ns` from CLOCK_MONOTONIC: process.hrtime.bigint). The binding's own calls
// are out of its sight, so it records what its holder sees: the request (no
// request id), the grant (its fence), the function's start and end, the
// loss, the hold's outcome and, given --postgres, the fenced write to the
// run's PostgreSQL table (chaos/src/postgres.rs: the same statement as the
// Rust holders', through pg). Node has no flock for the file register, so
// without --postgres it writes nothing. Its holds are short, so that no
// renewal is needed.
'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { parseArgs } = require('node:util')
const { setTimeout: sleep } = require('node:timers/promises')
const { createRequire } = require('node:module')
const bindings = path.join(__dirname, '../../bindings-node')
const { connect } = require(bindings)

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    name: { type: 'string' },
    history: { type: 'string' },
    register: { type: 'string' },
    seed: { type: 'string', default: '0' },
    keys: { type: 'string', default: '4' },
    'ttl-ms': { type: 'string', default: '1000' },
    postgres: { type: 'string' },
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

/**
 * The run's table (chaos/src/postgres.rs) through pg, from the binding's own
 * dependencies; `null` without --postgres.
 */
async function fencedTable() {
  if (args.postgres === undefined) return null
  const { Client } = createRequire(path.join(bindings, 'package.json'))('pg')
  const client = new Client({ connectionString: args.postgres })
  await client.connect()
  return client
}

/** Writes `fence` to `key` if it is larger than the row's, recording the outcome. */
async function writeFenced(client, key, fence) {
  const { rows } = await client.query(
    'UPDATE chaos_fenced SET fence = $2::text::numeric, writes = writes + 1 ' +
      'WHERE key = $1 AND fence < $2::text::numeric RETURNING writes',
    [key, fence.toString()],
  )
  const landed = rows.length === 1
  record('write', { key, fence, reason: landed ? 'landed' : 'refused', seq: landed ? Number(rows[0].writes) : 0 })
}

let stop = false
process.on('SIGTERM', () => {
  stop = true
})

async function main() {
  const ttlMs = Number(args['ttl-ms'])
  const table = await fencedTable()
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
      await sleep(holdFor / 2)
      if (table !== null && !lease.lost) await writeFenced(table, key, fence)
      await sleep(holdFor / 2)
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
  if (table !== null) await table.end()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
