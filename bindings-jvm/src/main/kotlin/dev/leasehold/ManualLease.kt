package dev.leasehold

import dev.leasehold.uniffi.NativeManualLease
import java.lang.ref.Reference.reachabilityFence
import kotlin.time.Duration

/**
 * A manual lease, from [Store.tryAcquire] or [Store.acquire]:
 * it lasts until its ttl runs out unless the caller extends it.
 */
class ManualLease internal constructor(
    native: NativeManualLease,
) {
    private val handle = native.handle().also { freeWhenCollected(this, it, Natives::freeManual) }

    /** The lease's name. */
    val name: String = Natives.manualName(handle)

    /** The fence (MANUAL-07). */
    val fence: Long = Natives.manualFence(handle)

    /**
     * Sets the expiry to now + [d] (MANUAL-03); fails [LeaseLost] if the
     * lease ran out or was released. Cancelling the calling coroutine stops
     * waiting for the store's answer.
     */
    suspend fun extend(d: Duration) {
        awaitNative { Natives.manualExtend(handle, d.toNanos(), it) }
        reachabilityFence(this)
    }

    /**
     * Releases the lease if it still owns its name (MANUAL-04). It runs on to
     * its end even if the calling coroutine is cancelled.
     */
    suspend fun release() {
        endNative { Natives.manualRelease(handle, it) }
        reachabilityFence(this)
    }
}
