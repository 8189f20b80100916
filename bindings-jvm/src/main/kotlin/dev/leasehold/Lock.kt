package dev.leasehold

import dev.leasehold.uniffi.NativeLock
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.withContext
import java.lang.ref.Reference.reachabilityFence
import java.util.concurrent.atomic.AtomicInteger
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
    val name: String = native.name()

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
        val holding = Holding(if (began == Natives.PENDING) call.await() as Long else began, key, name)
        return runHeld(holding) { block(Lease(holding)) }
    }

    /**
     * Who holds [key] now, from a linearizable read of the store (WHO-02):
     * its holder's identity, fence, times and how many wait, or `null` when
     * nobody does. A connection admitted only to read may ask. Cancelling
     * the calling coroutine stops waiting for the store's answer.
     */
    suspend fun holder(key: String): HolderInfo? = native { native.holder(key) }?.let(::HolderInfo)

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
        val holding = Holding(handle, key, name)
        return runHeld(holding) { block(Lease(holding)) }
    }

    /**
     * Waits in line for every key of [keys] at once (at most [wait], else the
     * lock's own), then runs [block] while holding them all, each a lease of
     * its own with its own fence, renewal and loss, in the order of [keys]
     * (LOCK-22); on the server store hundreds of keys go in one frame. All
     * or none: when one key cannot be had, `holdMany` throws (`WaitTimeout`
     * past the wait), the block does not run, every lease taken is released
     * and every line left; cancelling the calling coroutine while it waits
     * leaves every line (LOCK-18). A key named twice throws
     * `InvalidArgument`, an empty one `EmptyName`. Every key is released
     * when the block ends, all at once (LOCK-11). A lost lease, any of them,
     * cancels the block's coroutine, and `holdMany` then throws [LeaseLost],
     * the block's own failure kept as its cause (LOCK-10).
     */
    suspend fun <T> holdMany(
        keys: List<String>,
        wait: Duration? = null,
        block: suspend (List<Lease>) -> T,
    ): T {
        val asked = keys.toTypedArray()
        val call = NativeCall(::unwantedMany)
        val began =
            if (wait == null) {
                Natives.beginMany(handle, asked, call)
            } else {
                Natives.beginManyWithin(handle, asked, wait.toNanos(), call)
            }
        reachabilityFence(this)
        val handles = began ?: call.await() as LongArray
        val holdings = handles.mapIndexed { at, holding -> Holding(holding, asked[at], name) }
        return runHeld(HeldMany(holdings)) { block(holdings.map(::Lease)) }
    }

    private companion object {
        /** What `tryBegin` answers when the key is held. */
        const val HELD = 0L

        /** A holding granted to a call given up meanwhile: freed, so released. */
        fun unwanted(handle: Any?) {
            if (handle != HELD) Natives.freeHolding(handle as Long)
        }

        /** The holdings granted to a `holdMany` given up meanwhile: freed, so released. */
        fun unwantedMany(handles: Any?) {
            (handles as LongArray).forEach(Natives::freeHolding)
        }
    }
}

/**
 * A held key in the native library (`natives/holds.rs`): the lease's
 * reads, its loss, its end. The handle is freed on the thread that ends
 * the hold, once its end answered and no read is in flight (no cleaner, no
 * other thread); a read after the end answers what the core's lease said
 * then (no time left; lost, and why, if it was lost while held).
 */
internal class Holding(
    private val handle: Long,
    val key: String,
    val lockName: String,
) : Held {
    /** 1 until the end, plus one per read in flight: the handle is freed when it drops to 0. */
    private val users = AtomicInteger(1)

    /** The lease as it ended, once it did. */
    @Volatile private var ended: Ended? = null

    val fence: Long get() = read({ Natives.fence(it) }) { it.fence }

    val lost: Boolean get() = read({ Natives.lost(it) }) { it.lossReason != null }

    val lossReason: String? get() = read({ Natives.lossReason(it) }) { it.lossReason }

    /** Nanoseconds before the holder's deadline, or -1 without one. */
    val remaining: Long get() = read({ Natives.remaining(it) }) { it.remaining }

    override suspend fun lostSignal(): String {
        val call = NativeCall()
        val reason = read({ Natives.lostSignal(it, call) }) { it.lossReason ?: awaitCancellation() }
        return reason ?: call.await() as String
    }

    /** Releases the key (LOCK-11); a release that waits runs on to its end even if the caller is cancelled. */
    override suspend fun end() {
        val call = NativeCall()
        try {
            if (Natives.end(handle, call) == Natives.PENDING) withContext(NonCancellable) { call.await() }
        } finally {
            markEnded()
        }
    }

    /** Keeps what the lease says once its end answered, and gives up the hold's use of the handle. */
    private fun markEnded() {
        ended = Ended(Natives.fence(handle), Natives.lossReason(handle), Natives.remaining(handle))
        unpin()
    }

    /**
     * Runs [block] on this thread, interrupting the thread if the lease is
     * lost meanwhile (the Java API's blocking hold). An interrupt of ours
     * still pending when [block] ends is cleared; the hold's end then fails
     * `Lost`.
     */
    fun <T> interruptingOnLoss(block: () -> T): T =
        interruptingOn({ call -> read({ Natives.lostSignal(it, call) }) { it.lossReason } != null }, block)

    private inline fun <T> read(
        live: (Long) -> T,
        after: (Ended) -> T,
    ): T {
        if (!pin()) return after(ended!!)
        try {
            return live(handle)
        } finally {
            unpin()
        }
    }

    /** Takes a use of the handle for a native call: false once the hold ended. */
    private fun pin(): Boolean {
        while (true) {
            val n = users.get()
            if (n == 0) return false
            if (users.compareAndSet(n, n + 1)) return true
        }
    }

    /** Gives a use of the handle back; the last one frees it. */
    private fun unpin() {
        if (users.decrementAndGet() == 0) Natives.freeHolding(handle)
    }

    companion object {
        /** The loss reason of the first of [holdings] to be lost (LOCK-09); a hold that ended is not watched. */
        suspend fun anyLost(holdings: List<Holding>): String {
            val call = NativeCall()
            return watchAny(holdings, call) ?: call.await() as String
        }

        /** [interruptingOnLoss] for the holdings of one holdMany: the loss of any interrupts. */
        fun <T> interruptingOnAnyLoss(
            holdings: List<Holding>,
            block: () -> T,
        ): T = interruptingOn({ call -> watchAny(holdings, call) != null }, block)

        /**
         * Answers [call] with the loss reason of the first of [holdings] to be
         * lost, or returns it if one was lost already; a hold that ended is
         * not watched (none left: no answer comes).
         */
        private fun watchAny(
            holdings: List<Holding>,
            call: NativeCall,
        ): String? {
            val used = holdings.filter { it.pin() }
            if (used.isEmpty()) return null
            try {
                return Natives.anyLostSignal(LongArray(used.size) { used[it].handle }, call)
            } finally {
                used.forEach { it.unpin() }
            }
        }

        /**
         * Runs [block] on this thread, interrupting the thread once the call
         * [watch] registers is answered (a loss), or at once if [watch] says
         * one came already. An interrupt of ours still pending when [block]
         * ends is cleared.
         */
        private fun <T> interruptingOn(
            watch: (NativeCall) -> Boolean,
            block: () -> T,
        ): T {
            val thread = Thread.currentThread()
            val guard = Any()
            var done = false
            var interrupted = false
            val interrupt = {
                synchronized(guard) {
                    if (!done) {
                        interrupted = true
                        thread.interrupt()
                    }
                }
            }
            val call = NativeCall()
            if (watch(call)) interrupt() else call.whenAnswered(interrupt)
            try {
                return block()
            } finally {
                call.cancel()
                synchronized(guard) { done = true }
                if (interrupted) Thread.interrupted()
            }
        }

        /**
         * Releases every key of [holdings] at once (LOCK-22): fails `Lost` if
         * any was lost while held; a release that waits runs on to its end
         * even if the caller is cancelled.
         */
        suspend fun endAll(holdings: List<Holding>) {
            val call = NativeCall()
            try {
                val handles = LongArray(holdings.size) { holdings[it].handle }
                if (Natives.endAll(handles, call) == Natives.PENDING) withContext(NonCancellable) { call.await() }
            } finally {
                holdings.forEach { it.markEnded() }
            }
        }
    }

    /** What a lease said once its hold's end answered. */
    private class Ended(
        val fence: Long,
        val lossReason: String?,
        val remaining: Long,
    )
}

/** The holdings of one [Lock.holdMany], in the order of its keys: lost when any is lost, ended together. */
internal class HeldMany(
    private val holdings: List<Holding>,
) : Held {
    override suspend fun lostSignal(): String = Holding.anyLost(holdings)

    override suspend fun end() = Holding.endAll(holdings)
}

/** The lease of a held key, as the block running under it sees it. */
class Lease internal constructor(
    internal val holding: Holding,
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
