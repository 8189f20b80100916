package dev.leasehold.java

import java.time.Duration
import java.util.Optional
import kotlin.time.toJavaDuration
import dev.leasehold.HolderInfo as KotlinHolderInfo

/**
 * Who holds a key (WHO-02), as [Lock.holder] answers it: the identity of
 * the store handle that took the lease (WHO-01), its fence, how long it has
 * been held, how long the store keeps it unless renewed (empty: not by
 * time), and how many wait in the key's line.
 */
class HolderInfo internal constructor(
    private val info: KotlinHolderInfo,
) {
    /** The identity of the store handle that took the lease. */
    fun identity(): String = info.identity

    /** The lease's fence (LOCK-02). */
    fun fence(): Long = info.fence

    /** How long ago the lease was granted. */
    fun heldFor(): Duration = info.heldFor.toJavaDuration()

    /** How long the store keeps the lease unless renewed; empty: not by time. */
    fun expiresIn(): Optional<Duration> = Optional.ofNullable(info.expiresIn?.toJavaDuration())

    /** How many requests wait in the key's line. */
    fun waiting(): Int = info.waiting

    override fun toString(): String = info.toString()
}
