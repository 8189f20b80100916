package dev.leasehold.java

import java.time.Duration
import java.util.concurrent.CompletableFuture
import dev.leasehold.ManualLease as KotlinManualLease

/** A manual lease for Java ([Store.tryAcquire], [Store.acquire]). */
class ManualLease internal constructor(
    private val lease: KotlinManualLease,
) {
    /** The lease's name. */
    fun name(): String = lease.name

    /** The fence (MANUAL-07). */
    fun fence(): Long = lease.fence

    /** Sets the expiry to now + [d] (MANUAL-03); fails `LeaseLost` if it ran out or was released. */
    fun extend(d: Duration): CompletableFuture<Void?> = futureOf { lease.extend(d.toKotlin()) }.thenApply { null }

    /** Releases the lease if it still owns its name (MANUAL-04). */
    fun release(): CompletableFuture<Void?> = futureOf { lease.release() }.thenApply { null }
}
