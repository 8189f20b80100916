package dev.leasehold

import dev.leasehold.uniffi.NativeManualLease
import kotlin.time.Duration

/**
 * A manual lease, from [Store.tryAcquire] or [Store.acquire]:
 * it lasts until its ttl runs out unless the caller extends it.
 */
class ManualLease internal constructor(
    private val native: NativeManualLease,
) {
    /** The lease's name. */
    val name: String get() = native.name()

    /** The fence (MANUAL-07). */
    val fence: Long get() = native.fence().toLong()

    /**
     * Sets the expiry to now + [d] (MANUAL-03); fails [LeaseLost] if the
     * lease ran out or was released. Cancelling the calling coroutine stops
     * waiting for the store's answer.
     */
    suspend fun extend(d: Duration) = native { native.extend(d.toNanos()) }

    /**
     * Releases the lease if it still owns its name (MANUAL-04). It runs on to
     * its end even if the calling coroutine is cancelled.
     */
    suspend fun release() = native { native.release() }
}
