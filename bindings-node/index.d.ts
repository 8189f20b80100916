// Types of the npm package `leasehold`: leases and fenced locks over one
// Rust core (the embedded store, or the server store `leasehold serve`).
// Contract IDs (LOCK-05, MANUAL-03, SLOT-01, …) refer to the project's contracts.

/** A duration: a number of milliseconds, or a string such as `'250ms'`, `'30s'`, `'1m'`, `'1m30s'`, `'1h'`. */
export type Duration = number | string

/** Every failure's stable code (ERR-01), as `err.code` writes it. */
export type ErrorCode =
  | 'LOST'
  | 'INVALID_TTL'
  | 'EMPTY_NAME'
  | 'PERMISSION_DENIED'
  | 'UNAUTHENTICATED'
  | 'WAIT_TIMEOUT'
  | 'CANCELLED'
  | 'UNAVAILABLE'
  | 'TIMEOUT'
  | 'NAMESPACE_MISMATCH'
  | 'PROTOCOL'
  | 'INTERNAL'
  | 'INVALID_ARGUMENT'
  | 'CLOSED'
  | 'NOT_READY'
  | 'OVERFLOW'

/** Why a lease was lost. */
export type LossReason = 'expired' | 'revoked' | 'unknown' | 'restarted' | 'closed'

/** Every code, keyed by itself: `codes.LOST === 'LOST'`. */
export const codes: Readonly<{ [C in ErrorCode]: C }>

/** A Leasehold failure; `code` says which (ERR-01). */
export class LeaseholdError extends Error {
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown })
  code: ErrorCode
}

/**
 * The lease, or a held slot, is gone (code `'LOST'`). From `hold`: the held
 * function's own error is `cause`, or its value `result` when it resolved (LOCK-10).
 */
export class LostError extends LeaseholdError {
  constructor(
    message: string,
    options?: { lossReason?: LossReason | null; cause?: unknown; result?: unknown },
  )
  code: 'LOST'
  /** Why the lease was lost, when known. */
  lossReason: LossReason | null
  /** The held function's value, when it resolved although the lease was lost. */
  result?: unknown
}

/**
 * Whether `error` is a store timeout (SLOT-07): a `LeaseholdError` with code
 * `'TIMEOUT'` (the store did not answer in time and the call's outcome is
 * unknown), or an error whose `cause` chain holds one. Failures that are
 * outcomes (`NAMESPACE_MISMATCH`, `LOST`, …) are not timeouts.
 */
export function isTimeout(error: unknown): boolean

/** Options of a lock (LOCK-13). */
export interface LockOptions {
  /** How long a lease lasts without renewal: 1 s to 1 h, 10 s by default. */
  ttl?: Duration
  /** The store revokes a lease this long after its grant, whatever its renewals (LOCK-12). */
  maxHold?: Duration
  /** The longest time a `hold` waits in line (LOCK-18); unbounded by default. */
  wait?: Duration
  /** How long before the store's expiry the holder declares a loss (LOCK-04); ttl/10 by default. */
  margin?: Duration
}

/** Options of one `hold` or `holdMany`. */
export interface HoldOptions {
  /** Aborting it gives up waiting (`CANCELLED`, LOCK-18); while the function runs, it aborts `lease.signal`. */
  signal?: AbortSignal
  /** A bound on waiting in line for this call, over the lock's own. */
  wait?: Duration
}

/** Options of `tryHold`. */
export interface TryHoldOptions {
  /**
   * Aborting it stops waiting for the store's answer (`CANCELLED`; a grant
   * that answers later is released at once, LOCK-18); while the function
   * runs, it aborts `lease.signal` and `tryHold` rejects `CANCELLED` once
   * the function settles.
   */
  signal?: AbortSignal
}

/** Options of a call that only waits for the store's answer (a renewal, a release, a listing). */
export interface SignalOptions {
  /** Aborting it stops waiting for the store's answer (`CANCELLED`); what the call asked may have been done. */
  signal?: AbortSignal
}

/** How to reach a server store. */
export interface ConnectOptions {
  /** The token the server's tokens file gives a role (LOCK-14). */
  token?: string
  /** For `leaseholds://` and `etcds://`: the PEM certificates to trust (the server's or the etcd cluster's CA). */
  tls?: { ca: string | Uint8Array }
  /** The etcd user (etcd's authentication; the server store ignores it). */
  user?: string
  /** The etcd user's password. */
  password?: string
  /** For `etcds://` with client certificate authentication: the PEM client certificate. */
  clientCert?: string | Uint8Array
  /** The PEM private key of `clientCert`. */
  clientKey?: string | Uint8Array
  /** Opens an etcd older than the releases that fixed the bugs DIST-08 names (refused by default). */
  acceptOldEtcd?: boolean
  /** How long one connection attempt may take (5 s by default). */
  connectTimeout?: Duration
  /** Who this client is (WHO-01): recorded with every lease it takes and shown wherever a holder is (`lock.holder`, `leasehold ls`, the live page); at most 256 bytes, no control characters, by default `hostname:pid`. */
  identity?: string
  /** Aborting it gives up connecting (`CANCELLED`; a store that connects later is closed at once). */
  signal?: AbortSignal
}

/** Options of `tryAcquire`. */
export interface TryAcquireOptions {
  /** The lease's ttl: 1 s to 1 h, 10 s by default. */
  ttl?: Duration
  /** Aborting it stops waiting for the store's answer (`CANCELLED`; a lease that answers later is released at once). */
  signal?: AbortSignal
}

/** Options of `acquire`. */
export interface AcquireOptions {
  /** The lease's ttl, from the grant: 1 s to 1 h, 10 s by default. */
  ttl?: Duration
  /** The longest time to wait (`WAIT_TIMEOUT`). */
  wait?: Duration
  /** Aborting it gives up waiting (`CANCELLED`). */
  signal?: AbortSignal
}

/** Options of a slot namespace. */
export interface SlotsOptions {
  /** The slots are `[0, limit)`: 1 to 65536, 1024 by default. */
  limit?: number
  /** A lease expires this long after the store's now unless renewed: 1 s to 1 h, 10 s by default. */
  ttl?: Duration
  /** A lease's ceiling lies this far beyond its expiry: at most 1 h, 1 s by default. */
  tolerance?: Duration
  /** What a node number adds to the slot: 0 by default. */
  offset?: number
  /** How long before a held slot's expiry its holder declares it lost (`slots.hold`): ttl/10 by default, below ttl/2. */
  margin?: Duration
  /** How long one acquire, renew or release may take before it fails `TIMEOUT`: 5 s by default. */
  timeout?: Duration
}

/** Options of `slots.acquire`. */
export interface SlotAcquireOptions {
  /** The slot to try after one the owner holds already, in `[0, limit)`. */
  preferred?: number
  /** Aborting it stops waiting for the store's answer (`CANCELLED`). */
  signal?: AbortSignal
}

/** Options of `slots.hold`. */
export interface SlotHoldOptions {
  /** The slot to try after one the owner holds already, in `[0, limit)`. */
  preferred?: number
  /**
   * Aborting it stops waiting for the store's answer (`CANCELLED`); while
   * the function runs, it aborts `held.signal` and `hold` rejects
   * `CANCELLED` once the function settles.
   */
  signal?: AbortSignal
}

/** One holder, as `store.holders()` lists it and `lock.holder(key)` answers it (WHO-02). */
export interface HolderInfo {
  /** The lock's name (empty for manual leases). */
  lock: string
  /** The key, or the manual lease's name. */
  key: string
  fence: bigint
  /** Milliseconds since the grant. */
  heldFor: number
  /** Milliseconds before the store lets the lease go unless renewed; `null`: not by time. */
  expiresIn: number | null
  /** The identity of the store handle that took the lease (WHO-01). */
  identity: string
  /** How many requests wait in the key's line. */
  waiting: number
}

/** A store of leases: `memory()` or `await connect(url)`. */
export class Store {
  private constructor()
  /** The lock `name` with its options; nothing is sent to the store. Throws `INVALID_TTL`, `EMPTY_NAME`. */
  lock(name: string, options?: LockOptions): Lock
  /** The manual lease `name` if nobody holds it, else `null` (MANUAL-01). */
  tryAcquire(name: string, options?: TryAcquireOptions): Promise<ManualLease | null>
  /** Waits for the manual lease `name` (MANUAL-02). */
  acquire(name: string, options?: AcquireOptions): Promise<ManualLease>
  /**
   * The slot namespace `name` with its options; nothing is sent to the
   * store. Throws `EMPTY_NAME`, `INVALID_TTL`, `INVALID_ARGUMENT`.
   */
  slots(name: string, options?: SlotsOptions): Slots
  /**
   * An ID generator on the namespace `name` (IDGEN): leases a slot (a fresh
   * owner instance under `ownerKey`) and issues IDs above its floor.
   * Rejects `NOT_READY` when every slot is held, `NAMESPACE_MISMATCH` when
   * the namespace was first used with another layout, limit, tolerance or
   * offset, `INVALID_ARGUMENT` when the node numbers do not fit the layout.
   */
  ids(name: string, options?: IdsOptions): Promise<IdGenerator>
  /** The holders of lock `lock`, or of every lock. */
  holders(lock?: string, options?: SignalOptions): Promise<HolderInfo[]>
  /** Ends every lease the store gave and fails its waiting calls `CLOSED`. */
  close(): Promise<void>
}

/** A named family of keys with its options. */
export class Lock {
  private constructor()
  readonly name: string
  /** Milliseconds. */
  readonly ttl: number
  /** Milliseconds, or `null`. */
  readonly maxHold: number | null
  /** Milliseconds, or `null`. */
  readonly wait: number | null
  /** Milliseconds. */
  readonly margin: number
  /**
   * Waits in line for `key`, runs `fn(lease)` holding it (renewed in the
   * background where the store needs it), and releases it when `fn`
   * settles. Rejects with a `LostError` if the lease was lost meanwhile,
   * even if `fn` resolved (LOCK-10).
   */
  hold<T>(key: string, fn: (lease: Lease) => T | PromiseLike<T>, options?: HoldOptions): Promise<T>
  /**
   * Who holds `key` now, from a linearizable read of the store (WHO-02):
   * its holder's identity, fence, times and how many wait, or `null` when
   * nobody does. A connection admitted only to read may ask.
   */
  holder(key: string, options?: SignalOptions): Promise<HolderInfo | null>
  /**
   * Waits in line for every key of `keys` at once, runs `fn(leases)` holding
   * them all, and releases them all when `fn` settles (LOCK-22). Each lease
   * is a lease of its own (its fence, deadline and loss), in the order of
   * `keys`. All or none: when one key cannot be had (`WAIT_TIMEOUT`,
   * `CANCELLED`), every lease taken is released and every line left; a key
   * named twice rejects `INVALID_ARGUMENT`. The leases share one `signal`,
   * aborted when any of them is lost; then `holdMany` rejects with a
   * `LostError`, even if `fn` resolved (LOCK-10).
   */
  holdMany<T>(
    keys: readonly string[],
    fn: (leases: Lease[]) => T | PromiseLike<T>,
    options?: HoldOptions,
  ): Promise<T>
  /** As `hold`, but never waits: resolves `null` and runs nothing when the key is held (LOCK-17). */
  tryHold<T>(
    key: string,
    fn: (lease: Lease) => T | PromiseLike<T>,
    options?: TryHoldOptions,
  ): Promise<T | null>
}

/** A held lease, as the held function sees it. */
export class Lease {
  private constructor()
  /** Larger than every fence the store granted before (LOCK-02). */
  readonly fence: bigint
  readonly key: string
  readonly lockName: string
  /** Whether the lease was lost; once true, stays true. */
  readonly lost: boolean
  readonly lossReason: LossReason | null
  /** Milliseconds before the holder's deadline (0 once lost, and once its hold ended); `null` when it has none. */
  readonly remaining: number | null
  /**
   * Aborted with a `LostError` when the lease is lost (LOCK-09); from
   * `holdMany`, the signal its leases share, aborted when any of them is lost.
   */
  readonly signal: AbortSignal
}

/** A lease the caller extends and releases itself. */
export class ManualLease {
  private constructor()
  readonly name: string
  /** With LOCK-02's guarantee (MANUAL-07). */
  readonly fence: bigint
  /** Sets the expiry to now + `d` (MANUAL-03). */
  extend(d: Duration, options?: SignalOptions): Promise<void>
  /** Releases the lease if it still owns its name (MANUAL-04). */
  release(options?: SignalOptions): Promise<void>
}

/** Who leases a slot: a stable key and the instance id of one process. */
export class Owner {
  /**
   * An owner with key `key` and instance id `instance`, or a fresh random
   * instance id when not given. Throws `EMPTY_NAME`, `INVALID_ARGUMENT`.
   */
  constructor(key: string, instance?: string)
  /** The stable key: a new process of it prefers the slot its key held last. */
  readonly key: string
  /** This process's instance id. */
  readonly instance: string
}

/** A slot namespace opened on a store. */
export class Slots {
  private constructor()
  readonly name: string
  readonly limit: number
  /** Milliseconds. */
  readonly ttl: number
  /** Milliseconds. */
  readonly tolerance: number
  readonly offset: number
  /** Milliseconds: how long before a held slot's expiry its holder declares it lost. */
  readonly margin: number
  /**
   * Acquires a slot (SLOT-01): the one `owner` holds already, else
   * `preferred` if free, else the one its key held last if free, else the
   * lowest free slot; `null` when every slot is held.
   */
  acquire(owner: Owner, options?: SlotAcquireOptions): Promise<SlotLease | null>
  /** Renews `lease`, keeping its fence (SLOT-04); `null` when the owner or fence no longer match. */
  renew(lease: SlotLease, options?: SignalOptions): Promise<SlotLease | null>
  /**
   * Releases `lease`, having issued timestamps up to `lastIssued` ms: the
   * next holder's floor is `max(floor, min(lastIssued, ceiling))` (SLOT-05).
   * `false` when the owner or fence no longer match.
   */
  release(lease: SlotLease, lastIssued: number | bigint, options?: SignalOptions): Promise<boolean>
  /**
   * Acquires a slot as `acquire` does, runs `fn(held)` holding it (renewed
   * in the background every ttl/3), and releases it when `fn` settles with
   * the largest timestamp `held.issued` recorded (SLOT-05). Resolves `null`
   * and runs nothing when every slot is held (SLOT-01). Rejects with a
   * `LostError` if the slot was lost meanwhile, even if `fn` resolved: its
   * value is the error's `result`, its error the `cause`.
   */
  hold<T>(
    owner: Owner,
    fn: (held: HeldSlot) => T | PromiseLike<T>,
    options?: SlotHoldOptions,
  ): Promise<T | null>
}

/** A slot held while a function runs, as the function sees it; times are ms on the store's clock. */
export class HeldSlot {
  private constructor()
  /** In `[0, limit)`. */
  readonly slot: number
  /** The node number for IDs: the slot plus the namespace's offset. */
  readonly node: number
  /** Larger than every fence the store gave before (SLOT-08); renewals keep it. */
  readonly fence: bigint
  /** Issue only timestamps above this one. */
  readonly floor: number
  /** Issue no timestamp past this one; renewals move it on. */
  readonly ceiling: number
  /** The lease as last renewed. */
  readonly lease: SlotLease
  /** Records that timestamps up to `ms` were issued: the release hands the largest on (SLOT-05). */
  issued(ms: number | bigint): void
  /** The largest timestamp recorded by `issued` (0: none). */
  readonly lastIssued: number
  /** Whether the slot was lost; once true, stays true. */
  readonly lost: boolean
  readonly lossReason: LossReason | null
  /** Milliseconds before the holder's deadline (0 once lost). */
  readonly remaining: number
  /** Aborted with a `LostError` when the slot is lost. */
  readonly signal: AbortSignal
}

/** A lease on one slot, as last returned by the store; times are ms since the Unix epoch on the store's clock. */
export class SlotLease {
  private constructor()
  readonly namespace: string
  readonly owner: Owner
  /** In `[0, limit)`. */
  readonly slot: number
  /** The node number for IDs: the slot plus the namespace's offset. */
  readonly node: number
  /** Larger than every fence the store gave before (SLOT-08). */
  readonly fence: bigint
  /** Issue only timestamps above this one. */
  readonly floor: number
  /** When the lease expires unless renewed. */
  readonly expiresAt: number
  /** Issue no timestamp past this one. */
  readonly ceiling: number
}

/** Options of `store.ids`. */
export interface IdsOptions {
  /** The bit layout of the IDs, fixed by the namespace's first use: `IdLayout.DEFAULT` by default. */
  layout?: IdLayout
  /** The namespace's slots are `[0, limit)`: as many as the layout's node bits hold above `offset` (at most 65536) by default. */
  limit?: number
  /** What a node number adds to the slot: 0 by default. */
  offset?: number
  /** The slot lease's ttl: 1 s to 1 h, 10 s by default. */
  ttl?: Duration
  /** How far the lease's ceiling lies beyond its expiry: at most 1 h, 1 s by default. */
  tolerance?: Duration
  /** How long one slot call may take before it fails `TIMEOUT`: 5 s by default. */
  timeout?: Duration
  /** How far ahead of the store's clock IDs may be issued: 1 s by default; 0: never ahead. */
  maxLead?: Duration
  /** The owner key the slot is leased under (`'leasehold-ids'` by default); every generator gets a fresh instance id. */
  ownerKey?: string
  /** The slot to try first, in `[0, limit)`. */
  preferred?: number
  /** Aborting it stops waiting for the store's answer (`CANCELLED`; a generator that opens later is closed). */
  signal?: AbortSignal
}

/** Options of `IdLayout.custom`. */
export interface IdLayoutOptions {
  /** The length of one tick in milliseconds: 1 ms to 1 h, 1 by default. */
  tickMs?: number
  /** The time of tick 0 in milliseconds since the Unix epoch: 2026-01-01 by default. */
  epochMs?: number | bigint
}

/** An ID taken apart by `layout.parts(id)`. */
export interface IdParts {
  /** Ticks since the layout's epoch. */
  tick: bigint
  /** The tick's start in milliseconds since the Unix epoch. */
  timestampMs: number
  /** The node number. */
  node: number
  /** The sequence within the tick. */
  sequence: bigint
}

/**
 * How an ID's bits are split, high bits to low: `timeBits` of ticks since
 * `epochMs`, `nodeBits` of node number, `sequenceBits` of sequence. IDs use
 * at most 63 bits.
 */
export class IdLayout {
  private constructor()
  /** 41 bits of milliseconds from 2026-01-01 (69 years), 10 of node (1024 nodes), 12 of sequence (4,096 IDs per ms per node). */
  static readonly DEFAULT: IdLayout
  /** IDs below 2^53, exact as JS numbers: 41/6/6 in milliseconds (64 nodes, 64 IDs per ms per node). */
  static jsSafe(): IdLayout
  /** 31 bits of seconds (68 years), 10 of node, 22 of sequence (4,194,304 IDs per s per node). */
  static seconds(): IdLayout
  /**
   * A layout of these splits; throws `INVALID_ARGUMENT` unless each part
   * has a bit, the three at most 63, and a tick lies from 1 ms to 1 h.
   */
  static custom(
    timeBits: number,
    nodeBits: number,
    sequenceBits: number,
    options?: IdLayoutOptions,
  ): IdLayout
  readonly timeBits: number
  readonly nodeBits: number
  readonly sequenceBits: number
  /** Milliseconds. */
  readonly tickMs: number
  /** Milliseconds since the Unix epoch. */
  readonly epochMs: number
  /** Takes an ID apart (a bigint, or a whole number up to 2^53 - 1). */
  parts(id: bigint | number): IdParts
  /** As errors and benchmarks name a layout: `'41/10/12 ms'`. */
  toString(): string
}

/**
 * Issues unique IDs on one slot lease of a namespace (IDGEN): unique across
 * every generator of the namespace (IDGEN-01), strictly increasing for one
 * generator (IDGEN-03), with timestamps only inside the lease (IDGEN-02).
 * A generator never closed is sealed and its slot released once it is
 * garbage collected.
 */
export class IdGenerator {
  private constructor()
  /**
   * The next ID, without waiting: throws `NOT_READY` when none can be
   * issued yet (retryable), `OVERFLOW` when the layout's time range is used
   * up, `LOST` once the slot was lost or the generator closed (IDGEN-04).
   */
  nextNow(): bigint
  /** The next ID, waiting while none can be issued yet; `signal` gives up waiting (`CANCELLED`). */
  next(options?: SignalOptions): Promise<bigint>
  /** As many IDs as can be issued now, up to `n` (1 to 16,777,216), at least 1; throws as `nextNow` when none can. */
  takeNow(n: number): BigUint64Array
  /** `n` IDs (1 to 16,777,216), waiting while they cannot be issued yet; `signal` gives up waiting (`CANCELLED`). */
  take(n: number, options?: SignalOptions): Promise<BigUint64Array>
  /**
   * Seals the generator and releases its slot, passing the last issued tick
   * on as the next holder's floor (IDGEN-02). Rejects with a `LostError` if
   * the slot was lost meanwhile; a second close does nothing. Later calls
   * fail `LOST`.
   */
  close(): Promise<void>
  /** The node number every ID carries: the slot plus the namespace's offset. */
  readonly node: number
  readonly layout: IdLayout
  /** The slot lease as last renewed. */
  readonly lease: SlotLease
  /** The start of the largest tick issued so far (ms since the Unix epoch; 0: none). */
  readonly lastIssued: number
  /** Whether the slot was lost; once true, nothing more is issued. */
  readonly lost: boolean
}

/** An embedded store in this process (LOCK-19). */
export function memory(): Store

/**
 * Connects to the store at `url`: the server store (`leasehold://host:port`, or `leaseholds://`
 * for TLS) or etcd (`etcd://h1:2379,h2:2379/PREFIX`, or `etcds://`; DIST-01, docs/etcd.md).
 */
export function connect(url: string, options?: ConnectOptions): Promise<Store>
