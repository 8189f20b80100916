// The exports of the native addon (lib/native.js loads it) (src/*.rs), as the JS layer uses them.
// Internal: the public API is ../index.d.ts.

/** What an asynchronous export returns: the value when done at the call, else a promise. */
export type Eventually<T> = T | Promise<T>

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
  slots(name: string, options: NativeSlotsOptions): NativeSlots
  tryAcquire(
    name: string,
    ttl: NativeDuration,
    cancel: Canceller | null,
  ): Eventually<NativeManualLease | null>
  acquire(
    name: string,
    ttl: NativeDuration,
    wait: NativeDuration,
    cancel: Canceller | null,
  ): Eventually<NativeManualLease>
  holders(lock: string | null, cancel: Canceller | null): Eventually<NativeHolderInfo[]>
  ids(
    name: string,
    layout: NativeIdLayout | null,
    options: NativeIdsOptions,
    cancel: Canceller | null,
  ): Eventually<NativeIdGenerator>
  close(): Eventually<void>
}

/** An absent option is the core's default (`null` is not absent to Node-API). */
export interface NativeIdsOptions {
  limit?: number
  offset?: number
  ttl?: number | string
  tolerance?: number | string
  timeout?: number | string
  maxLead?: number | string
  ownerKey?: string
  preferred?: number
}

export class NativeIdLayout {
  readonly timeBits: number
  readonly nodeBits: number
  readonly sequenceBits: number
  readonly tickMs: number
  readonly epochMs: number
  describe(): string
  parts(id: bigint): NativeIdParts
}

export interface NativeIdParts {
  tick: bigint
  timestampMs: number
  node: number
  sequence: bigint
}

export class NativeIdGenerator {
  readonly node: number
  readonly layout: NativeIdLayout
  readonly lease: NativeSlotLease
  readonly lastIssued: number
  readonly lost: boolean
  bindNext(): () => bigint
  takeNow(n: number): BigUint64Array
  nextAsync(cancel: Canceller | null): Eventually<bigint>
  take(n: number, cancel: Canceller | null): Eventually<BigUint64Array>
  close(): Eventually<void>
}

/** An absent option is the core's default (`null` is not absent to Node-API). */
export interface NativeSlotsOptions {
  limit?: number
  ttl?: number | string
  tolerance?: number | string
  offset?: number
  margin?: number | string
  timeout?: number | string
}

export interface NativeHolderInfo {
  lock: string
  key: string
  fence: bigint
  heldFor: number
  expiresIn: number | null
  identity: string
  waiting: number
}

/**
 * A lock: an External of the addon's lock (src/lock.rs), opaque to JS;
 * lib/lock.js wraps it, and the `lock*` functions read it and begin holds.
 */
export type NativeLock = object & { readonly __nativeLock: never }

/**
 * A held key: the id of the addon's holding in its table of this thread's
 * holdings (src/holding.rs); lib/holding.js wraps it, and the `holding*`
 * functions read and end it (the end takes it out of the table).
 */
export type NativeHolding = number & { readonly __nativeHolding: never }

export class NativeManualLease {
  readonly name: string
  readonly fence: bigint
  extend(d: NativeDuration, cancel: Canceller | null): Eventually<void>
  release(cancel: Canceller | null): Eventually<void>
}

export class NativeOwner {
  readonly key: string
  readonly instance: string
}

export class NativeSlots {
  readonly name: string
  readonly limit: number
  readonly tolerance: number
  readonly offset: number
  readonly ttl: number
  readonly margin: number
  acquire(
    owner: NativeOwner,
    preferred: number | null,
    cancel: Canceller | null,
  ): Eventually<NativeSlotLease | null>
  begin(
    owner: NativeOwner,
    preferred: number | null,
    cancel: Canceller | null,
  ): Eventually<NativeSlotHolding | null>
  renew(lease: NativeSlotLease, cancel: Canceller | null): Eventually<NativeSlotLease | null>
  release(lease: NativeSlotLease, lastIssued: bigint, cancel: Canceller | null): Eventually<boolean>
}

export class NativeSlotLease {
  readonly namespace: string
  readonly ownerKey: string
  readonly ownerInstance: string
  readonly slot: number
  readonly node: number
  readonly fence: bigint
  readonly floor: number
  readonly expiresAt: number
  readonly ceiling: number
}

export class NativeSlotHolding {
  readonly lease: NativeSlotLease
  readonly slot: number
  readonly node: number
  readonly fence: bigint
  readonly floor: number
  readonly ceiling: number
  readonly lastIssued: number
  readonly lost: boolean
  readonly lossReason: string | null
  readonly remaining: number
  issued(ms: bigint): void
  watch(onLost: (reason: string) => void): void
  end(): Eventually<void>
}

export class NativeVirtualClock {
  constructor()
  readonly now: number
  advance(by: NativeDuration): Eventually<void>
}

/** The connect options as `connect` passes them (src/store.rs): absent, never null, when not given. */
export interface NativeConnectOptions {
  token?: string
  caPem?: string
  user?: string
  password?: string
  clientCertPem?: string
  clientKeyPem?: string
  acceptOldEtcd: boolean
  connectTimeout?: number | string
  identity?: string
}

export interface Native {
  Canceller: typeof Canceller
  NativeVirtualClock: typeof NativeVirtualClock
  memory(): NativeStore
  connect(
    url: string,
    options: NativeConnectOptions,
    cancel: Canceller | null,
  ): Eventually<NativeStore>
  errorCodes(): string[]
  lockName(lock: NativeLock): string
  lockTtl(lock: NativeLock): number
  lockMaxHold(lock: NativeLock): number | null
  lockWait(lock: NativeLock): number | null
  lockMargin(lock: NativeLock): number
  lockBegin(
    lock: NativeLock,
    key: string,
    wait: NativeDuration,
    cancel: Canceller | null,
  ): Eventually<NativeHolding>
  lockBeginMany(
    lock: NativeLock,
    keys: string[],
    wait: NativeDuration,
    cancel: Canceller | null,
  ): Eventually<NativeHolding[]>
  lockTryBegin(
    lock: NativeLock,
    key: string,
    cancel: Canceller | null,
  ): Eventually<NativeHolding | null>
  lockHolder(
    lock: NativeLock,
    key: string,
    cancel: Canceller | null,
  ): Eventually<NativeHolderInfo | null>
  holdingFence(holding: NativeHolding): bigint
  holdingLost(holding: NativeHolding): boolean
  holdingLossReason(holding: NativeHolding): string | null
  holdingRemaining(holding: NativeHolding): number | null
  holdingWatch(holding: NativeHolding, onLost: (reason: string) => void): void
  holdingEnd(holding: NativeHolding): Eventually<void>
  holdingEndAll(holdings: NativeHolding[]): Eventually<void>
  owner(key: string, instance: string | null): NativeOwner
  defaultIdLayout(): NativeIdLayout
  jsSafeIdLayout(): NativeIdLayout
  secondsIdLayout(): NativeIdLayout
  customIdLayout(
    timeBits: number,
    nodeBits: number,
    sequenceBits: number,
    tickMs: number | null,
    epochMs: bigint | null,
  ): NativeIdLayout
  memoryWith(clock: NativeVirtualClock | null, renewal: boolean, push: boolean): NativeStore
  parseDuration(text: string): number
  panicNow(message: string): void
  panicLater(message: string): Eventually<void>
}
