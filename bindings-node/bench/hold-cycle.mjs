// `make bench-node`: the hold cycle through the Node binding next to the
// same cycle in Rust (bench/src/bin/hold_cycle.rs), in the same run, on the
// embedded store and on a server store process started here (release
// builds). One cycle: Node `await lock.hold(key, fn)` with an empty `fn`;
// Rust `lock.begin(key).await` + `holding.end().await`; one key, uncontended.
// Rounds alternate Rust and Node, so that each Node round is compared with
// the Rust round just before it on a machine as loaded as it was then; the
// medians of the times and of the per-round ratios are reported, on stdout
// and as a Markdown table in $CARGO_TARGET_DIR/bench-node.md (which
// `make bench-node` draws beside it: bench/plots.py).
//
//   node bench/hold-cycle.mjs [EMBEDDED_CYCLES] [SERVER_CYCLES] [ROUNDS]

import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { connect, memory } from 'leasehold'

const repo = fileURLToPath(new URL('../../', import.meta.url))
const target = process.env.CARGO_TARGET_DIR ?? join(repo, 'target')
const [embeddedCycles, serverCycles, rounds] = [
  Number(process.argv[2] ?? 20_000),
  Number(process.argv[3] ?? 5_000),
  Number(process.argv[4] ?? 7),
]

/** Starts the release server on a free port; resolves with its URL and a stop function. */
async function startServer() {
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-bench-node-'))
  const child = spawn(
    join(target, 'release', 'leasehold'),
    ['serve', '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data')],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LEASEHOLD_LOG: 'warn' } },
  )
  let out = ''
  child.stdout.setEncoding('utf8')
  for await (const text of child.stdout) {
    out += text
    const match = /^listening on (\S+)$/m.exec(out)
    if (match) {
      return {
        url: `leasehold://${match[1]}`,
        async stop() {
          child.kill('SIGTERM')
          await once(child, 'exit')
          await rm(dir, { recursive: true, force: true })
        },
      }
    }
  }
  throw new Error('the server did not start')
}

/** Microseconds per Node hold cycle, after a warm-up of a tenth as many. */
async function nodeCycle(
  /** @type {import('leasehold').Store} */ store,
  /** @type {number} */ cycles,
) {
  const lock = store.lock('bench-node')
  const noop = () => {}
  for (let i = 0; i < cycles / 10; i++) await lock.hold('k', noop)
  const started = process.hrtime.bigint()
  for (let i = 0; i < cycles; i++) await lock.hold('k', noop)
  return Number(process.hrtime.bigint() - started) / 1e3 / cycles
}

/** Microseconds per Rust cycle on the given store. */
function rustCycle(/** @type {string | null} */ url, /** @type {number} */ cycles) {
  const binary = join(target, 'release', 'hold_cycle')
  const args = url ? [String(cycles), url] : [String(cycles)]
  const run = spawnSync(binary, args, { encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`${binary} failed: ${run.stderr}`)
  const got = JSON.parse(run.stdout)
  return url ? got.server_us : got.embedded_us
}

const median = (/** @type {number[]} */ xs) =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const server = await startServer()
const results = []
try {
  for (const [kind, cycles] of [
    ['embedded', embeddedCycles],
    ['server', serverCycles],
  ]) {
    const rust = []
    const node = []
    for (let round = 0; round < rounds; round++) {
      rust.push(rustCycle(kind === 'server' ? server.url : null, cycles))
      const store = kind === 'server' ? await connect(server.url) : memory()
      node.push(await nodeCycle(store, cycles))
      await store.close()
    }
    const ratios = node.map((n, i) => n / rust[i])
    results.push({
      kind,
      cycles,
      rust: median(rust),
      node: median(node),
      ratio: median(ratios),
      low: Math.min(...ratios),
      high: Math.max(...ratios),
    })
  }
} finally {
  await server.stop()
}

console.log(
  `hold cycle, median of ${rounds} rounds (µs per cycle; Node: await lock.hold(key, fn); Rust: begin + end)`,
)
console.log('store      cycles   Rust µs   Node µs   Node/Rust (median of rounds; lowest-highest)')
for (const r of results) {
  console.log(
    `${r.kind.padEnd(9)}  ${String(r.cycles).padStart(6)}  ${r.rust.toFixed(2).padStart(8)}  ${r.node
      .toFixed(2)
      .padStart(8)}   ${r.ratio.toFixed(2)}x (${r.low.toFixed(2)}-${r.high.toFixed(2)})`,
  )
}

const table = [
  `## Hold cycle through Node, median of ${rounds} rounds`,
  '',
  "One key, uncontended. Node: `await lock.hold(key, fn)` with an empty `fn`; Rust: `lock.begin(key)` + `holding.end()` (bench/src/bin/hold_cycle.rs). The ratio is the median of each round's Node time over the Rust round's just before it.",
  '',
  '| store | cycles | Rust µs | Node µs | Node / Rust (lowest-highest) |',
  '|---|---:|---:|---:|---|',
  ...results.map(
    (r) =>
      `| ${r.kind} | ${r.cycles} | ${r.rust.toFixed(2)} | ${r.node.toFixed(2)} | ${r.ratio.toFixed(2)}x (${r.low.toFixed(2)}-${r.high.toFixed(2)}) |`,
  ),
  '',
]
await writeFile(join(target, 'bench-node.md'), table.join('\n'))
