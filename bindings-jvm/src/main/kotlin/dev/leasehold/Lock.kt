package dev.leasehold

import dev.leasehold.uniffi.NativeHolding
import dev.leasehold.uniffi.NativeLock
import kotlin.time.Duration

/**
 * A lock: a named family of keys, each held by one holder at a time while
 * a block runs, opened by [Store.lock]. Waiting is FIFO per key
 * (LOCK-01); a held key is renewed in the background (LOCK-06) and its loss
 * cancels the block (LOCK-09).
 */
class Lock internal constructor(
    private val native: NativeLock,
) {
    /** The lock's name. */
    val name: String get() = native.name()

    /** The ttl of its leases. */
    val ttl: Duration get() = native.ttl().nanos()

    /** Its maxHold, if set (LOCK-12). */
    val maxHold: Duration? get() = native.maxHold()?.nanos()

    /** Its bound on waiting in line, if set. */
    val wait: Duration? get() = native.wait()?.nanos()

    /** How long before the store's expiry a holder declares its lease lost. */
    val margin: Duration get() = native.margin().nanos()

    /**
     * Waits in line for [key] (at most [wait], else the lock's own), then runs
     * [block] while holding it and releases it (LOCK-11). A lost lease
     * cancels the block's coroutine, and `hold` then throws [LeaseLost], the
     * block's own failure kept as its cause (LOCK-10). Cancelling the calling
     * coroutine while it waits leaves the line (LOCK-18).
     */
    suspend fun <T> hold(
        key: String,
        wait: Duration? = null,
        block: suspend (Lease) -> T,
    ): T {
        val holding = native { if (wait == null) native.begin(key) else native.beginWithin(key, wait.toNanos()) }
        return runHeld(HeldKey(holding)) { block(Lease(holding)) }
    }

    /**
     * Runs [block] while holding [key] if it is free now, as [hold] does;
     * `null`, and nothing runs, when it is held (LOCK-17).
     */
    suspend fun <T : Any> tryHold(
        key: String,
        block: suspend (Lease) -> T,
    ): T? {
        val holding = native { native.tryBegin(key) } ?: return null
        return runHeld(HeldKey(holding)) { block(Lease(holding)) }
    }
}

/** A held key as [runHeld] runs a block under it. */
private class HeldKey(
    private val holding: NativeHolding,
) : Held {
    override suspend fun lostSignal() = holding.lostSignal()

    override suspend fun end() = holding.end()
}

/** The lease of a held key, as the block running under it sees it. */
class Lease internal constructor(
    private val holding: NativeHolding,
) {
    /**
     * The fence: larger than every fence the key's lock gave before
     * (LOCK-02). Pass it to the system you write to, so that it refuses a
     * late writer. Signed: fences stay far below 2^63.
     */
    val fence: Long get() = holding.fence().toLong()

    /** The key held. */
    val key: String get() = holding.key()

    /** The name of the key's lock. */
    val lockName: String get() = holding.lockName()

    /** Whether the lease was lost (LOCK-09). */
    val lost: Boolean get() = holding.lost()

    /** Why it was lost (`expired`, `revoked`, `unknown`, `restarted`, `closed`), once it was. */
    val lossReason: String? get() = holding.lossReason()

    /** The time left before the holder's deadline (LOCK-04); `null` without one (the embedded store). */
    val remaining: Duration? get() = holding.remaining()?.nanos()

    /** Waits until the lease is lost; the loss reason. */
    suspend fun lostSignal(): String = native { holding.lostSignal() }
}
