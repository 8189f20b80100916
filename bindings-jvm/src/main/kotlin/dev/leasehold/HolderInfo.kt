package dev.leasehold

import dev.leasehold.uniffi.NativeHolderInfo
import kotlin.time.Duration

/**
 * Who holds a key (WHO-02), as [Lock.holder] answers it: the [identity] of
 * the store handle that took the lease (WHO-01; `identity` at connect, by
 * default `hostname:pid`), its [fence], how long it has been held, how
 * long the store keeps it unless renewed (`null`: not by time), and how
 * many wait in the key's line.
 */
data class HolderInfo(
    val identity: String,
    val fence: Long,
    val heldFor: Duration,
    val expiresIn: Duration?,
    val waiting: Int,
) {
    internal constructor(native: NativeHolderInfo) : this(
        identity = native.identity,
        fence = native.fence.toLong(),
        heldFor = native.heldFor.nanos(),
        expiresIn = native.expiresIn?.nanos(),
        waiting = native.waiting.coerceAtMost(Int.MAX_VALUE.toULong()).toInt(),
    )
}
