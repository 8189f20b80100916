// `make bench-node-ids`: the ID generator's non-waiting calls through the
// Node binding next to the same calls in Rust (examples/ids_next.rs), in
// the same run, on the embedded store, in the default layout (41/10/12 ms;
// it caps one node at 4,096,000 IDs/s, so each measurement opens a
// generator of its own namespace with a lead of 9 s and no call waits for
// the clock). Node `ids.nextNow()` per call against Rust `ids.next()`;
// Node `ids.takeNow(BATCH)` per ID against Rust `ids.next_into(&mut buf)`.
// Rounds alternate Rust and Node, so that each Node round is compared with
// the Rust round just before it on a machine as loaded as it was then; the
// medians of the times and of the per-round ratios are reported, on stdout
// and as a Markdown table in $CARGO_TARGET_DIR/bench-node-ids.md (which
// `make bench-node-ids` draws beside it: bench/plots.py).
//
//   node bench/ids.mjs [CALLS] [BATCHES] [BATCH] [ROUNDS]

import { spawnSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { IdLayout, memory } from 'leasehold'

const repo = fileURLToPath(new URL('../../', import.meta.url))
const target = process.env.CARGO_TARGET_DIR ?? join(repo, 'target')
const [calls, batches, batch, rounds] = [
  Number(process.argv[2] ?? 1_000_000),
  Number(process.argv[3] ?? 500),
  Number(process.argv[4] ?? 4096),
  Number(process.argv[5] ?? 7),
]
const layout = IdLayout.DEFAULT

/** A generator of its own namespace, issuing up to 9 s ahead. */
function open(/** @type {import('leasehold').Store} */ store, /** @type {string} */ name) {
  return store.ids(name, { layout, ttl: '30s', maxLead: '9s' })
}

/** Nanoseconds per Node `nextNow()` and per ID of `takeNow(batch)`, after a warm-up. */
async function nodeRound(/** @type {number} */ round) {
  const store = memory()
  const warm = await open(store, `bench-node-warm-${round}`)
  for (let i = 0; i < 100_000; i++) warm.nextNow()
  for (let i = 0; i < 50; i++) warm.takeNow(batch)
  await warm.close()

  const ids = await open(store, `bench-node-next-${round}`)
  let last = 0n
  let started = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) last = ids.nextNow()
  const next = Number(process.hrtime.bigint() - started) / calls
  if (last === 0n) throw new Error('no ID issued')
  await ids.close()

  const many = await open(store, `bench-node-batch-${round}`)
  let issued = 0
  started = process.hrtime.bigint()
  for (let i = 0; i < batches; i++) issued += many.takeNow(batch).length
  const perId = Number(process.hrtime.bigint() - started) / issued
  await many.close()
  await store.close()
  return { next, perId }
}

/** Nanoseconds per Rust `next()` and per ID of `next_into`. */
function rustRound() {
  const binary = join(target, 'release', 'examples', 'ids_next')
  const run = spawnSync(binary, [String(calls), String(batches), String(batch)], {
    encoding: 'utf8',
  })
  if (run.status !== 0) throw new Error(`${binary} failed: ${run.stderr}`)
  const got = JSON.parse(run.stdout)
  if (got.layout !== String(layout)) throw new Error(`Rust measured layout ${got.layout}`)
  return { next: got.next_ns, perId: got.next_into_ns_per_id }
}

const median = (/** @type {number[]} */ xs) =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const rust = []
const node = []
for (let round = 0; round < rounds; round++) {
  rust.push(rustRound())
  node.push(await nodeRound(round))
}

console.log(
  `ID generator, layout ${layout}, embedded store, median of ${rounds} rounds ` +
    `(${calls} calls; ${batches} batches of ${batch})`,
)
console.log(
  'call                                   Rust ns   Node ns   Node/Rust (median; lowest-highest)',
)
const rows = []
for (const [what, key] of /** @type {const} */ ([
  ['nextNow() per call   | Rust next()', 'next'],
  [`takeNow(${batch}) per ID | Rust next_into`, 'perId'],
])) {
  const r = rust.map((x) => x[key])
  const n = node.map((x) => x[key])
  const ratios = n.map((v, i) => v / r[i])
  const ratio = `${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`
  console.log(
    `${what.padEnd(37)}  ${median(r).toFixed(2).padStart(7)}  ${median(n).toFixed(2).padStart(8)}   ${ratio}`,
  )
  rows.push(
    `| ${what.replace(/\s+\|\s+/, ' against ')} | ${median(r).toFixed(2)} | ${median(n).toFixed(2)} | ${ratio} |`,
  )
}

const table = [
  `## IDs through Node, layout ${layout}, embedded store, median of ${rounds} rounds`,
  '',
  `${calls} calls; ${batches} batches of ${batch}. The ratio is the median of each round's Node time over the Rust round's just before it.`,
  '',
  '| call | Rust ns | Node ns | Node / Rust (lowest-highest) |',
  '|---|---:|---:|---|',
  ...rows,
  '',
]
await writeFile(join(target, 'bench-node-ids.md'), table.join('\n'))
