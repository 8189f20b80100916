// N embedded hold cycles through Node and nothing else, for an instruction
// count: run it under `valgrind --tool=callgrind` with N and with 3N, and
// the difference of the two counts over 2N is one cycle's cost (starting
// Node, loading the addon and exiting cancel out; docs/benchmarks.md,
// "Node binding: the hold cycle next to Rust").
//
// Every 1,000 cycles the event loop turns once (a setImmediate), as a
// service's does between requests. Under valgrind, which runs one thread
// at a time, a loop of awaits that never turns it (every embedded hold is
// granted at once: nothing but microtasks) stayed in V8's baseline code
// (Sparkplug's prologue led the profile), as if the optimized code V8
// compiles on a thread of its own never came: 22,453 instructions a cycle
// against 14,786 (docs/benchmarks.md).
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
