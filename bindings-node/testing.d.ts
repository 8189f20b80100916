// Types of `leasehold/testing`: test hooks for the shared scenarios.

import type { Duration, Store } from './index'

/** A clock that stands still until `advance` moves it. */
export class VirtualClock {
  constructor()
  /** Milliseconds since the clock's origin. */
  readonly now: number
  /** Moves the clock by `by`, firing each timer due meanwhile in order. */
  advance(by: Duration): Promise<void>
}

/** Options of a test store. */
export interface TestStoreOptions {
  /** The store's clock; the real clock when not given. */
  clock?: VirtualClock
  /** Whether leases run out unless renewed, as on the server store (default false). */
  renewal?: boolean
  /** Whether grants are pushed to waiters (default true); without, waiting polls. */
  push?: boolean
}

/** An embedded store with test options. */
export function memory(options?: TestStoreOptions): Store

/** A duration string in milliseconds, as every call reads it. */
export function parseDuration(text: string): number

/** Panics in Rust at once: throws `INTERNAL`. */
export function panicNow(message: string): never

/** Panics in Rust on the runtime: rejects `INTERNAL`. */
export function panicLater(message: string): Promise<void>
