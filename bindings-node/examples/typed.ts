// A typed usage of the whole public API, checked by `tsc --noEmit` (make node-test).
import {
  codes,
  connect,
  isTimeout,
  LeaseholdError,
  LostError,
  memory,
  Owner,
  type ErrorCode,
  type HeldSlot,
  type HolderInfo,
  type Lease,
  type Lock,
  type LossReason,
  type ManualLease,
  type SlotLease,
  type Slots,
  type Store,
} from 'leasehold'
import { memory as testMemory, parseDuration, VirtualClock } from 'leasehold/testing'

async function saveSummary(chatId: string, text: string, fence: bigint): Promise<void> {
  console.log(chatId, text, fence)
}

async function summarize(signal: AbortSignal): Promise<string> {
  signal.throwIfAborted()
  return 'summary'
}

export async function main(url: string, token: string, ca: string): Promise<number> {
  const store: Store = memory()
  const summaries: Lock = store.lock('summaries', {
    ttl: '30s',
    maxHold: 600_000,
    wait: '5s',
    margin: '1s',
  })
  const ttl: number = summaries.ttl
  const maxHold: number | null = summaries.maxHold
  const controller = new AbortController()
  const fence: bigint = await summaries.hold(
    'chat-1',
    async (lease: Lease) => {
      const text = await summarize(lease.signal)
      await saveSummary(lease.key, text, lease.fence)
      const left: number | null = lease.remaining
      const why: LossReason | null = lease.lossReason
      console.log(lease.lockName, lease.lost, left, why)
      return lease.fence
    },
    { signal: controller.signal, wait: 1000 },
  )
  const ran: string | null = await summaries.tryHold('chat-1', () => 'ran', {
    signal: controller.signal,
  })
  const shards: readonly string[] = ['shard-0', 'shard-1', 'shard-2']
  const fences: bigint[] = await summaries.holdMany(
    shards,
    async (leases: Lease[]) => {
      await summarize(leases[0].signal)
      return leases.map((lease) => lease.fence)
    },
    { signal: controller.signal, wait: '5s' },
  )
  try {
    await summaries.hold('chat-2', async () => 'late')
  } catch (error) {
    if (error instanceof LostError) {
      const reason: LossReason | null = error.lossReason
      console.log(reason, error.result, error.cause)
    } else if (error instanceof LeaseholdError) {
      const code: ErrorCode = error.code
      console.log(code === codes.WAIT_TIMEOUT)
    }
  }
  const manual: ManualLease | null = await store.tryAcquire('nightly', {
    ttl: '1m',
    signal: controller.signal,
  })
  if (manual !== null) {
    await manual.extend('1m', { signal: controller.signal })
    console.log(manual.name, manual.fence)
    await manual.release({ signal: controller.signal })
  }
  const waited: ManualLease = await store.acquire('nightly', {
    ttl: 60_000,
    wait: '2s',
    signal: controller.signal,
  })
  await waited.release()
  const holders: HolderInfo[] = await store.holders('summaries', { signal: controller.signal })

  const orderIds: Slots = store.slots('order-ids', {
    limit: 1024,
    ttl: '30s',
    tolerance: 2_000,
    offset: 0,
    margin: '3s',
    timeout: '5s',
  })
  const limit: number =
    orderIds.limit + orderIds.offset + orderIds.ttl + orderIds.tolerance + orderIds.margin
  const owner = new Owner('order-service')
  const pinned = new Owner('order-service', 'pod-7')
  const instance: string = owner.instance + pinned.key
  let node = 0
  try {
    const lease: SlotLease | null = await orderIds.acquire(owner, {
      preferred: 3,
      signal: controller.signal,
    })
    if (lease !== null) {
      node = lease.node + lease.slot
      const slotFence: bigint = lease.fence
      const window: number = lease.ceiling - Math.max(lease.floor, lease.expiresAt)
      console.log(lease.namespace, lease.owner.key, slotFence, window)
      const renewed: SlotLease | null = await orderIds.renew(lease, { signal: controller.signal })
      const released: boolean = await orderIds.release(renewed ?? lease, Date.now(), {
        signal: controller.signal,
      })
      console.log(released, await orderIds.release(lease, BigInt(lease.floor)))
    }
  } catch (error) {
    if (isTimeout(error)) console.log('the store did not answer in time; the outcome is unknown')
  }
  try {
    const issuedOn: number | null = await orderIds.hold(
      owner,
      async (held: HeldSlot) => {
        held.signal.throwIfAborted()
        const ts: number = Math.max(held.floor + 1, Date.now())
        if (ts <= held.ceiling) held.issued(ts)
        const current: SlotLease = held.lease
        const left: number = held.remaining
        const why: LossReason | null = held.lossReason
        console.log(held.slot, held.fence, current.expiresAt, left, why, held.lost, held.lastIssued)
        return held.node
      },
      { preferred: 3, signal: controller.signal },
    )
    node += issuedOn ?? -1
  } catch (error) {
    if (error instanceof LostError) console.log('the slot was lost', error.result, error.cause)
  }
  await store.close()

  const remote: Store = await connect(url, {
    token,
    tls: { ca },
    connectTimeout: '2s',
    signal: controller.signal,
  })
  await remote.close()

  const clock = new VirtualClock()
  const test = testMemory({ clock, renewal: true, push: false })
  await clock.advance('1s')
  const now: number = clock.now + parseDuration('1m')
  await test.close()
  return (
    Number(fence) +
    ttl +
    (maxHold ?? 0) +
    (ran?.length ?? 0) +
    fences.length +
    holders.length +
    now +
    limit +
    instance.length +
    node
  )
}
