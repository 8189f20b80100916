// A typed usage of the whole public API, checked by `tsc --noEmit` (make node-test).
import {
  codes,
  connect,
  LeaseholdError,
  LostError,
  memory,
  type ErrorCode,
  type HolderInfo,
  type Lease,
  type Lock,
  type LossReason,
  type ManualLease,
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
  const ran: string | null = await summaries.tryHold('chat-1', () => 'ran')
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
  const manual: ManualLease | null = await store.tryAcquire('nightly', { ttl: '1m' })
  if (manual !== null) {
    await manual.extend('1m')
    console.log(manual.name, manual.fence)
    await manual.release()
  }
  const waited: ManualLease = await store.acquire('nightly', {
    ttl: 60_000,
    wait: '2s',
    signal: controller.signal,
  })
  await waited.release()
  const holders: HolderInfo[] = await store.holders('summaries')
  await store.close()

  const remote: Store = await connect(url, { token, tls: { ca }, connectTimeout: '2s' })
  await remote.close()

  const clock = new VirtualClock()
  const test = testMemory({ clock, renewal: true, push: false })
  await clock.advance('1s')
  const now: number = clock.now + parseDuration('1m')
  await test.close()
  return Number(fence) + ttl + (maxHold ?? 0) + (ran?.length ?? 0) + holders.length + now
}
