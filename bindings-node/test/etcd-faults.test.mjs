// DIST-09 through Node with traffic in flight: six holders in three stores
// take turns on two keys (10 ms holds, waiters always in line) while one
// member of a 3-member etcd cluster (etcd-tests' etcd-cluster,
// helpers/etcd.mjs) is killed or frozen, and then comes back. A member's
// fault must cost the holders an election and a round trip, never a failed
// call: every hold succeeds, fences grow, no two holds of a key overlap, and
// the longest hold call stays under the election plus one second: two
// election timeouts (etcd elects one to two election timeouts after the
// leader's last heartbeat: each follower's timer is randomized in that
// span), or the cluster's own outage when it was longer (etcd-cluster's
// `outage` command: a split vote, a loaded machine).
//
// The clients' calls go to member 0, the URL's first, while it answers, so
// each fault is placed where it hurts: the leader killed while the clients
// talk to a follower that forwards to it, and the clients' own member frozen
// while it leads (the Rust tests of the same: etcd-tests/tests/member_faults.rs).

import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'

import { connect } from 'leasehold'

import { startEtcdCluster } from './helpers/etcd.mjs'

// How long the holders take turns, and when the fault comes and ends (ms).
const RUN = 7000
const FAULT_AT = 2500
const FAULT_FOR = 3000
const WORK = 10

/**
 * One hold call: its key, when it began and how long it took (performance.now(),
 * ms), and its fence and block's start and end, or its error.
 * @typedef {{ key: string, began: number, took: number, fence: bigint, start: number, end: number, error: any }} Hold
 */

/**
 * @param {import('leasehold').Lock} lock
 * @param {string[]} keys
 * @param {number} until
 * @param {Hold[]} holds
 */
async function holder(lock, keys, until, holds) {
  for (let turn = 0; performance.now() < until; turn++) {
    /** @type {Hold} */
    const hold = {
      key: keys[turn % 2],
      began: performance.now(),
      took: 0,
      fence: 0n,
      start: 0,
      end: 0,
      error: null,
    }
    try {
      await lock.hold(hold.key, async (lease) => {
        hold.start = performance.now()
        await sleep(WORK)
        hold.fence = lease.fence
        hold.end = performance.now()
      })
    } catch (e) {
      hold.error = e
    }
    hold.took = performance.now() - hold.began
    holds.push(hold)
  }
}

/**
 * Moves the leadership to member `lead`, starts the holders, sends `fault`
 * at 2.5 s and `mend` 3 s later, and checks every hold.
 * @param {string} name
 * @param {number} lead
 * @param {string} fault
 * @param {string} mend
 */
async function run(name, lead, fault, mend) {
  const cluster = await startEtcdCluster()
  try {
    assert.equal(await cluster.command(`lead ${lead}`), 'ok')
    const url = `${cluster.url(`dist09-node-${name}-${randomUUID()}`)}?attempt-timeout=${cluster.electionTimeoutMs / 2}ms`
    const stores = [await connect(url), await connect(url), await connect(url)]
    /** @type {Hold[]} */
    const holds = []
    const start = performance.now()
    const holders = stores.flatMap((store, i) =>
      [0, 1].map((j) =>
        holder(
          store.lock('jobs', { ttl: '5s' }),
          (i + j) % 2 === 0 ? ['a', 'b'] : ['b', 'a'],
          start + RUN,
          holds,
        ),
      ),
    )
    let faultAt = 0
    try {
      await sleep(start + FAULT_AT - performance.now())
      faultAt = performance.now()
      assert.equal(await cluster.command(fault), 'ok')
      await sleep(faultAt + FAULT_FOR - performance.now())
      assert.equal(await cluster.command(mend), 'ok')
    } finally {
      await Promise.all(holders)
      await Promise.all(stores.map((store) => store.close()))
    }
    const outage = /^outage (\d+)ms$/.exec(await cluster.command('outage'))
    assert.ok(outage, "etcd-cluster's outage")
    check(name, Math.max(2 * cluster.electionTimeoutMs, Number(outage[1])), faultAt, holds)
  } finally {
    await cluster.stop()
  }
}

/**
 * Checks every hold; `election` is two election timeouts, or the cluster's
 * own outage when it was longer (ms).
 * @param {string} name
 * @param {number} election
 * @param {number} faultAt
 * @param {Hold[]} holds
 */
function check(name, election, faultAt, holds) {
  const failed = holds
    .filter((h) => h.error !== null)
    .map(
      (h) =>
        `${h.key}: ${h.error?.code} ${h.error?.message} after ${h.took.toFixed(1)} ms, ` +
        `begun ${(h.began - faultAt).toFixed(1)} ms from the fault`,
    )
  const longest = Math.max(...holds.map((h) => h.took))
  const through = holds.filter(
    (h) => h.began + h.took >= faultAt && h.began <= faultAt + FAULT_FOR,
  ).length
  console.log(
    `${name}: ${holds.length} holds, ${failed.length} failed, ${through} in flight through the fault, longest hold call ${longest.toFixed(1)} ms, the election ${election} ms`,
  )
  assert.deepEqual(failed, [], `${name}: holds failed`)
  assert.ok(through > 20, `${name}: only ${through} holds ran through the fault`)
  for (const key of ['a', 'b']) {
    const ran = holds.filter((h) => h.key === key).sort((x, y) => x.start - y.start)
    for (let i = 1; i < ran.length; i++) {
      const [before, after] = [ran[i - 1], ran[i]]
      assert.ok(
        after.fence > before.fence,
        `${name}: key ${key}: fence ${after.fence} after ${before.fence}`,
      )
      assert.ok(
        after.start >= before.end,
        `${name}: key ${key}: the hold of fence ${after.fence} began before fence ${before.fence}'s ended`,
      )
    }
  }
  const slow = holds
    .filter((h) => h.took >= election + 1000)
    .map(
      (h) =>
        `${h.key}: ${h.took.toFixed(1)} ms, begun ${(h.began - faultAt).toFixed(1)} ms from the fault`,
    )
  assert.deepEqual(
    slow,
    [],
    `${name}: hold calls longer than the election (${election} ms) and a second`,
  )
}

// DIST-09: kill -9 of the leader (member 1) while the clients' calls go to a
// follower (member 0) that forwards them to it; restarted 3 s later.
test('DIST-09 killing the leader under load fails no hold', { timeout: 60_000 }, async () => {
  await run('kill-leader', 1, 'kill 1', 'restart 1')
})

// DIST-09: the clients' own member frozen (SIGSTOP) while it leads, thawed
// 3 s later: their calls and their watch stream move to another member.
test(
  "DIST-09 freezing the clients' leader under load fails no hold",
  { timeout: 60_000 },
  async () => {
    await run('freeze-leader', 0, 'freeze 0', 'thaw 0')
  },
)
