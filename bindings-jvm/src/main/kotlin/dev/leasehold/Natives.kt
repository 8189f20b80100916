package dev.leasehold

import com.sun.jna.NativeLibrary
import java.lang.ref.Cleaner

/**
 * The hot path into the native library, through JNI (`natives/` in the
 * crate): a hold's begin and end, a lease's reads, its loss, IDs. The
 * library registers these natives when the JVM loads it; the first use of
 * this object loads it with `System.load` from where JNA found it for the
 * uniffi-generated plumbing (the test's library folder, or the jar's
 * resources), so both reach the same library.
 *
 * Native objects are `Long` handles, each owned by one Kotlin object that
 * frees it once through [cleaner] and keeps itself reachable during each
 * call that passes it. A native that may wait is given a [NativeCall]:
 * it returns its answer when it has it at once, else [PENDING] (or null),
 * and the call is answered later.
 */
internal object Natives {
    init {
        System.load(NativeLibrary.getInstance("leasehold_jvm").file.absolutePath)
    }

    /** What a native that may wait returns while it waits. */
    const val PENDING = -1L

    /** Frees the handles of collected objects. */
    val cleaner: Cleaner = Cleaner.create { work -> Thread(work, "leasehold-cleaner") }

    /** The exception of an ERR-01 code, for the library's failures. */
    @JvmStatic
    fun exception(
        code: String,
        message: String,
        lossReason: String?,
    ): Throwable = exceptionOf(code, message, lossReason)

    /** Waits in line for [key]; a holding's handle, or [PENDING]. */
    @JvmStatic external fun begin(lock: Long, key: String, call: NativeCall): Long

    /** [begin], waiting in line at most [waitNanos]. */
    @JvmStatic external fun beginWithin(lock: Long, key: String, waitNanos: Long, call: NativeCall): Long

    /** Holds [key] if it is free: a holding's handle, 0 when it is held, or [PENDING]. */
    @JvmStatic external fun tryBegin(lock: Long, key: String, call: NativeCall): Long

    /** A holding's fence. */
    @JvmStatic external fun fence(holding: Long): Long

    /** The key held. */
    @JvmStatic external fun key(holding: Long): String

    /** The name of the key's lock. */
    @JvmStatic external fun lockName(holding: Long): String

    /** Whether the lease was lost. */
    @JvmStatic external fun lost(holding: Long): Boolean

    /** Why it was lost, or null. */
    @JvmStatic external fun lossReason(holding: Long): String?

    /** Nanoseconds before the holder's deadline, or -1 without one. */
    @JvmStatic external fun remaining(holding: Long): Long

    /** The loss reason once the lease is lost, or null while it waits. */
    @JvmStatic external fun lostSignal(holding: Long, call: NativeCall): String?

    /** Releases the key: 0, or [PENDING]. */
    @JvmStatic external fun end(holding: Long, call: NativeCall): Long

    /** Frees a holding's handle; a key still held is released in the background. */
    @JvmStatic external fun freeHolding(holding: Long)

    /** Frees a lock's handle. */
    @JvmStatic external fun freeLock(lock: Long)

    /** The next ID without waiting. */
    @JvmStatic external fun nextNow(ids: Long): Long

    /** The next ID, or [PENDING] while none can be issued yet. */
    @JvmStatic external fun next(ids: Long, call: NativeCall): Long

    /** As many IDs as can be issued now, 1 to [n]. */
    @JvmStatic external fun takeNow(ids: Long, n: Int): LongArray

    /** [n] IDs, or null while they cannot be issued yet. */
    @JvmStatic external fun take(ids: Long, n: Int, call: NativeCall): LongArray?

    /** Frees an ID generator's handle. */
    @JvmStatic external fun freeIds(ids: Long)

    /** Cancels a waiting call's task and frees it. */
    @JvmStatic external fun callCancel(task: Long)

    /** Frees an answered call's task. */
    @JvmStatic external fun callEnded(task: Long)
}

/** Frees [handle] with [free] once [owner] is collected. */
internal fun freeWhenCollected(
    owner: Any,
    handle: Long,
    free: (Long) -> Unit,
) {
    Natives.cleaner.register(owner) { free(handle) }
}
