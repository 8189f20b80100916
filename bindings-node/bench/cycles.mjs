// N embedded hold cycles through Node and nothing else, for an instruction
// count: run it under `valgrind --tool=callgrind` with N and with 3N, and
// the difference of the two counts over 2N is one cycle's cost (starting
// Node, loading the addon and exiting cancel out; docs/benchmarks.md,
// "Node binding: the hold cycle next to Rust").
//
// Every 1,000 cycles the loop turns once (a setImmediate), as a service's
// does between requests: Node runs the finalizers of the addon's objects
// (the holdings' Externals) only then, and a loop of awaits that never
// turns it keeps every holding of the run until it ends, its scavenges
// slower with each (docs/benchmarks.md).
//
// Usage: node bench/cycles.mjs N [fence]
//   fence: the held function reads lease.fence (else it does nothing)

import { memory } from 'leasehold'

const cycles = Number(process.argv[2] ?? 10_000)
const lock = memory().lock('bench-node')
const fn = process.argv[3] === 'fence' ? (lease) => lease.fence : () => {}
const turn = () => new Promise((resolve) => setImmediate(resolve))
for (let i = 0; i < cycles; i++) {
  await lock.hold('k', fn)
  if (i % 1000 === 999) await turn()
}
