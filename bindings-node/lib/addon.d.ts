// The exports of the native addon (lib/native.js loads it) (src/*.rs), as the JS layer uses them.
// Internal: the public API is ../index.d.ts.

/** A duration as the addon takes it: milliseconds, or a string such as '30s'. */
export type NativeDuration = number | string | null

export class Canceller {
  constructor()
  cancel(): void
}

export class NativeStore {
  lock(
    name: string,
    ttl: NativeDuration,
    maxHold: NativeDuration,
    wait: NativeDuration,
    margin: NativeDuration,
  ): NativeLock
  tryAcquire(name: string, ttl: NativeDuration): Promise<NativeManualLease | null>
  acquire(
    name: string,
    ttl: NativeDuration,
    wait: NativeDuration,
    cancel: Canceller | null,
  ): Promise<NativeManualLease>
  holders(lock: string | null): Promise<NativeHolderInfo[]>
  close(): Promise<void>
}

export interface NativeHolderInfo {
  lock: string
  key: string
  fence: bigint
  heldFor: number
  expiresIn: number | null
}

export class NativeLock {
  readonly name: string
  readonly ttl: number
  readonly maxHold: number | null
  readonly wait: number | null
  readonly margin: number
  begin(key: string, wait: NativeDuration, cancel: Canceller | null): Promise<NativeHolding>
  tryBegin(key: string): Promise<NativeHolding | null>
}

export class NativeHolding {
  readonly fence: bigint
  readonly key: string
  readonly lockName: string
  readonly lost: boolean
  readonly lossReason: string | null
  readonly remaining: number | null
  watch(onLost: (reason: string) => void): void
  end(): Promise<void>
}

export class NativeManualLease {
  readonly name: string
  readonly fence: bigint
  extend(d: NativeDuration): Promise<void>
  release(): Promise<void>
}

export class NativeVirtualClock {
  constructor()
  readonly now: number
  advance(by: NativeDuration, pauseMs: number): Promise<void>
}

export interface Native {
  Canceller: typeof Canceller
  NativeVirtualClock: typeof NativeVirtualClock
  memory(): NativeStore
  connect(
    url: string,
    token: string | null,
    caPem: string | null,
    connectTimeout: NativeDuration,
  ): Promise<NativeStore>
  errorCodes(): string[]
  memoryWith(clock: NativeVirtualClock | null, renewal: boolean, push: boolean): NativeStore
  parseDuration(text: string): number
  panicNow(message: string): void
  panicLater(message: string): Promise<void>
}
