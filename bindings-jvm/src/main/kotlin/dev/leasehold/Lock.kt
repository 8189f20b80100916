package dev.leasehold

import dev.leasehold.uniffi.NativeLock
import java.lang.ref.Reference.reachabilityFence
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
    private val handle = native.handle().also { freeWhenCollected(this, it, Natives::freeLock) }

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
        val call = NativeCall(::unwanted)
        val began = if (wait == null) Natives.begin(handle, key, call) else Natives.beginWithin(handle, key, wait.toNanos(), call)
        reachabilityFence(this)
        val holding = Holding(if (began == Natives.PENDING) call.await() as Long else began)
        return runHeld(holding) { block(Lease(holding)) }
    }

    /**
     * Runs [block] while holding [key] if it is free now, as [hold] does;
     * `null`, and nothing runs, when it is held (LOCK-17).
     */
    suspend fun <T : Any> tryHold(
        key: String,
        block: suspend (Lease) -> T,
    ): T? {
        val call = NativeCall(::unwanted)
        val began = Natives.tryBegin(handle, key, call)
        reachabilityFence(this)
        val handle = if (began == Natives.PENDING) call.await() as Long else began
        if (handle == HELD) return null
        val holding = Holding(handle)
        return runHeld(holding) { block(Lease(holding)) }
    }

    private companion object {
        /** What `tryBegin` answers when the key is held. */
        const val HELD = 0L

        /** A holding granted to a call given up meanwhile: freed, so released. */
        fun unwanted(handle: Any?) {
            if (handle != HELD) Natives.freeHolding(handle as Long)
        }
    }
}

/**
 * A held key in the native library (`natives/holds.rs`): the lease's
 * reads, its loss, its end. Collected without its end, the key is released
 * in the background.
 */
internal class Holding(
    private val handle: Long,
) : Held {
    init {
        freeWhenCollected(this, handle, Natives::freeHolding)
    }

    val fence: Long get() = Natives.fence(handle).also { reachabilityFence(this) }

    val key: String get() = Natives.key(handle).also { reachabilityFence(this) }

    val lockName: String get() = Natives.lockName(handle).also { reachabilityFence(this) }

    val lost: Boolean get() = Natives.lost(handle).also { reachabilityFence(this) }

    val lossReason: String? get() = Natives.lossReason(handle).also { reachabilityFence(this) }

    val remaining: Long get() = Natives.remaining(handle).also { reachabilityFence(this) }

    override suspend fun lostSignal(): String {
        val call = NativeCall()
        val reason = Natives.lostSignal(handle, call)
        reachabilityFence(this)
        return reason ?: call.await() as String
    }

    override suspend fun end() {
        val call = NativeCall()
        val ended = Natives.end(handle, call)
        reachabilityFence(this)
        if (ended == Natives.PENDING) call.await()
    }
}

/** The lease of a held key, as the block running under it sees it. */
class Lease internal constructor(
    private val holding: Holding,
) {
    /**
     * The fence: larger than every fence the key's lock gave before
     * (LOCK-02). Pass it to the system you write to, so that it refuses a
     * late writer. Signed: fences stay far below 2^63.
     */
    val fence: Long get() = holding.fence

    /** The key held. */
    val key: String get() = holding.key

    /** The name of the key's lock. */
    val lockName: String get() = holding.lockName

    /** Whether the lease was lost (LOCK-09). */
    val lost: Boolean get() = holding.lost

    /** Why it was lost (`expired`, `revoked`, `unknown`, `restarted`, `closed`), once it was. */
    val lossReason: String? get() = holding.lossReason

    /** The time left before the holder's deadline (LOCK-04); `null` without one (the embedded store). */
    val remaining: Duration? get() = holding.remaining.takeIf { it >= 0 }?.nanos()

    /** Waits until the lease is lost; the loss reason. */
    suspend fun lostSignal(): String = holding.lostSignal()
}
