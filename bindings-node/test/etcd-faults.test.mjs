// DIST-09 through Node with traffic in flight: six holders in three stores
// take turns on two keys (10 ms holds, waiters always in line) while one
// member of a 3-member etcd cluster (etcd-tests' etcd-cluster,
// helpers/etcd.mjs) is killed or frozen, and then comes back. A member's
// fault must cost the holders an election and a round trip, never a failed
// call: every hold succeeds, fences grow, no two holds of a key overlap, and
// the holders' calls are retried on the live members: each holder completes
// holds while the struck member is still out (the fault lasts until each
// has, 3 s at least), which a client stuck on the struck member never does.
//
// How long the calls took is printed, not asserted: beside the longest hold
// call, the cluster's own outage (etcd-cluster's `outage` command) and what
// the client added to it. On a shared, loaded machine etcd elects late and
// the holders run late, whatever the client does; a call stuck for good
// still fails the test, as the driver's own bound on a call fails it
// `Timeout`, and a grant slower than the holder's deadline is `Lost`.
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

// When the fault comes, how long it lasts at least, and how long the holders
// go on after it ended (ms).
const FAULT_AT = 2500
const FAULT_FOR = 3000
const AFTER = 1500
// How long the fault may last while some holder completes no hold on the
// live members (ms): a hang (a client stuck on the struck member), not a speed.
const HANG = 30_000
const HOLDERS = 6
const WORK = 10

/**
 * One hold call: its holder and key, when it began and how long it took
 * (performance.now(), ms), and its fence and block's start and end, or its error.
 * @typedef {{ holder: number, key: string, began: number, took: number, fence: bigint, start: number, end: number, error: any }} Hold
 */

/**
 * The fault's instants (performance.now(), ms): when it was sent, when it
 * had struck (the member dead or stopped), and when it was ended.
 * @typedef {{ sent: number, struck: number, mended: number }} Times
 */

/**
 * @param {number} index
 * @param {import('leasehold').Lock} lock
 * @param {string[]} keys
 * @param {{ stopped: boolean }} stop
 * @param {Hold[]} holds
 */
async function holder(index, lock, keys, stop, holds) {
  for (let turn = 0; !stop.stopped; turn++) {
    /** @type {Hold} */
    const hold = {
      holder: index,
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
 * The holders that completed no hold begun at `since` or later.
 * @param {Hold[]} holds
 * @param {number} since
 */
function notServedSince(holds, since) {
  const served = new Set(
    holds.filter((h) => h.began >= since && h.error === null).map((h) => h.holder),
  )
  return [...Array(HOLDERS).keys()].filter((i) => !served.has(i))
}

/**
 * Moves the leadership to member `lead`, starts the holders, sends `fault`
 * at 2.5 s and `mend` once every holder completed a hold on the live members
 * (3 s at least), and checks every hold.
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
    const stop = { stopped: false }
    const start = performance.now()
    const holders = stores.flatMap((store, i) =>
      [0, 1].map((j) =>
        holder(
          2 * i + j,
          store.lock('jobs', { ttl: '5s' }),
          (i + j) % 2 === 0 ? ['a', 'b'] : ['b', 'a'],
          stop,
          holds,
        ),
      ),
    )
    /** @type {Times} */
    const times = { sent: 0, struck: 0, mended: 0 }
    try {
      await sleep(start + FAULT_AT - performance.now())
      times.sent = performance.now()
      assert.equal(await cluster.command(fault), 'ok')
      times.struck = performance.now()
      // The fault lasts until every holder completed a hold begun after it
      // struck: its calls were retried on the live members.
      await sleep(FAULT_FOR)
      for (let waiting; (waiting = notServedSince(holds, times.struck)).length > 0;) {
        assert.ok(
          performance.now() - times.struck < HANG,
          `${name}: holders ${waiting} completed no hold in ${HANG} ms while the member was out: ` +
            'their calls were not retried on the live members',
        )
        await sleep(50)
      }
      times.mended = performance.now()
      assert.equal(await cluster.command(mend), 'ok')
      await sleep(AFTER)
    } finally {
      stop.stopped = true
      await Promise.all(holders)
      await Promise.all(stores.map((store) => store.close()))
    }
    const outage = /^outage (\d+)ms$/.exec(await cluster.command('outage'))
    assert.ok(outage, "etcd-cluster's outage")
    check(name, Math.max(2 * cluster.electionTimeoutMs, Number(outage[1])), times, holds)
  } finally {
    await cluster.stop()
  }
}

/**
 * Checks every hold; `election` is two election timeouts, or the cluster's
 * own outage when it was longer (ms), for the print.
 * @param {string} name
 * @param {number} election
 * @param {Times} t
 * @param {Hold[]} holds
 */
function check(name, election, t, holds) {
  const failed = holds
    .filter((h) => h.error !== null)
    .map(
      (h) =>
        `${h.key}: ${h.error?.code} ${h.error?.message} after ${h.took.toFixed(1)} ms, ` +
        `begun ${(h.began - t.sent).toFixed(1)} ms from the fault`,
    )
  // The calls the fault caught in flight, and those the live members served
  // while the struck one was out.
  const caught = holds.filter((h) => h.began <= t.sent && h.began + h.took >= t.struck)
  const served = holds.filter((h) => h.began >= t.struck && h.began + h.took <= t.mended).length
  const longest = Math.max(...holds.map((h) => h.took))
  const longestCaught = Math.max(0, ...caught.map((h) => h.took))
  console.log(
    `${name}: ${holds.length} holds, ${failed.length} failed, ${caught.length} caught in flight by the fault ` +
      `(the longest ${longestCaught.toFixed(1)} ms), ${served} served while the member was out ` +
      `(${(t.mended - t.struck).toFixed(1)} ms); longest hold call ${longest.toFixed(1)} ms, ` +
      `the election ${election} ms, the client's cost beyond it ${Math.max(0, longest - election).toFixed(1)} ms ` +
      "(DIST-09's 'an election plus about a second': printed, not asserted)",
  )
  assert.deepEqual(failed, [], `${name}: holds failed`)
  assert.ok(caught.length > 0, `${name}: no hold call was in flight when the fault struck`)
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
}

// DIST-09: kill -9 of the leader (member 1) while the clients' calls go to a
// follower (member 0) that forwards them to it; restarted once every holder
// was served by the live members.
test('DIST-09 killing the leader under load fails no hold', { timeout: 60_000 }, async () => {
  await run('kill-leader', 1, 'kill 1', 'restart 1')
})

// DIST-09: the clients' own member frozen (SIGSTOP) while it leads, thawed
// once every holder was served by the live members: their calls and their
// watch stream move to another member.
test(
  "DIST-09 freezing the clients' leader under load fails no hold",
  { timeout: 60_000 },
  async () => {
    await run('freeze-leader', 0, 'freeze 0', 'thaw 0')
  },
)
