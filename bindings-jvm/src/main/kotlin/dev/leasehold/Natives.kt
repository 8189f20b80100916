package dev.leasehold

import com.sun.jna.Native
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.withContext
import java.io.File
import java.io.IOException
import java.lang.ref.Cleaner

/**
 * The hot path into the native library, through JNI (`natives/` in the
 * crate): a hold's begin and end (of a key, of many keys at once, or of a slot), a lease's reads and
 * its loss, a manual lease's extension and release, a slot renewal, IDs. The
 * library registers these natives when the JVM loads it, which the first use
 * of this object does, before any uniffi call (`Leasehold` and `IdLayout`
 * load it first), naming the same file to uniffi's JNA calls.
 *
 * Native objects are `Long` handles, each owned by one Kotlin object that
 * frees it once through [cleaner] and keeps itself reachable during each
 * call that passes it. A native that may wait is given a [NativeCall]:
 * it returns its answer when it has it at once, else [PENDING] (or null),
 * and the call is answered later.
 */
internal object Natives {
    /** The library's name, as JNA and uniffi name it. */
    private const val LIBRARY = "leasehold_jvm"

    /** uniffi's property naming the file its JNA calls load. */
    private const val OVERRIDE = "uniffi.component.$LIBRARY.libraryOverride"

    init {
        val file = libraryFile()
        if (file == null) {
            System.loadLibrary(LIBRARY)
        } else {
            System.setProperty(OVERRIDE, file.absolutePath)
            System.load(file.absolutePath)
        }
    }

    /**
     * The one file both paths load, so that the process has one copy of
     * the library (two copies would be two cores): uniffi's override if
     * set; else the library in `jna.library.path` (the tests, the bench);
     * else the jar's, extracted once (JNA's resource folders,
     * `linux-x86-64/` …), deleted when the JVM exits; else null, and the
     * system's library path. Its path becomes uniffi's override.
     */
    private fun libraryFile(): File? {
        System.getProperty(OVERRIDE)?.let { return File(it) }
        val name = System.mapLibraryName(LIBRARY)
        val found =
            System
                .getProperty("jna.library.path")
                .orEmpty()
                .split(File.pathSeparator)
                .filter { it.isNotEmpty() }
                .map { File(it, name) }
                .firstOrNull { it.isFile }
        if (found != null) return found
        return try {
            Native.extractFromResourcePath(LIBRARY, Natives::class.java.classLoader).also { it.deleteOnExit() }
        } catch (_: IOException) {
            null
        }
    }

    /** Loads the library, before anything else of it is used (`Leasehold`, `IdLayout`). */
    fun load() = Unit

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

    /** Waits in line for every key of [keys] at once, all or none: the holdings' handles in their order, or null while it waits. */
    @JvmStatic external fun beginMany(lock: Long, keys: Array<String>, call: NativeCall): LongArray?

    /** [beginMany], waiting in line at most [waitNanos]. */
    @JvmStatic external fun beginManyWithin(lock: Long, keys: Array<String>, waitNanos: Long, call: NativeCall): LongArray?

    /** The loss reason of the first of [holdings] to be lost, or null while none is. */
    @JvmStatic external fun anyLostSignal(holdings: LongArray, call: NativeCall): String?

    /** Releases every key of [holdings] at once: 0, or [PENDING]. */
    @JvmStatic external fun endAll(holdings: LongArray, call: NativeCall): Long

    /** A holding's fence. */
    @JvmStatic external fun fence(holding: Long): Long

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

    /** Holds a slot with background renewal ([preferred] -1: none): a handle, 0 when every slot is held, or [PENDING]. */
    @JvmStatic external fun slotBegin(slots: Long, ownerKey: String, ownerInstance: String, preferred: Int, call: NativeCall): Long

    /** Renews a lease given as its numbers: the new numbers, empty when it no longer matches, or null while it waits. */
    @JvmStatic external fun slotRenew(
        slots: Long,
        namespace: String,
        ownerKey: String,
        ownerInstance: String,
        lease: LongArray,
        call: NativeCall,
    ): LongArray?

    /** A held slot's lease numbers as last renewed. */
    @JvmStatic external fun slotLease(holding: Long): LongArray

    /** Records issued timestamps up to [ms]. */
    @JvmStatic external fun slotIssued(holding: Long, ms: Long)

    /** The largest timestamp recorded. */
    @JvmStatic external fun slotLastIssued(holding: Long): Long

    /** Nanoseconds before the holder's deadline, zero once lost. */
    @JvmStatic external fun slotRemaining(holding: Long): Long

    /** Whether the slot was lost. */
    @JvmStatic external fun slotLost(holding: Long): Boolean

    /** Why it was lost, or null. */
    @JvmStatic external fun slotLossReason(holding: Long): String?

    /** The loss reason once the slot is lost, or null while it waits. */
    @JvmStatic external fun slotLostSignal(holding: Long, call: NativeCall): String?

    /** Releases the slot with the largest timestamp recorded: 0, or [PENDING]. */
    @JvmStatic external fun slotEnd(holding: Long, call: NativeCall): Long

    /** Frees a held slot's handle; a slot still held is released in the background. */
    @JvmStatic external fun freeSlotHolding(holding: Long)

    /** Frees a slot namespace's handle. */
    @JvmStatic external fun freeSlots(slots: Long)

    /** A manual lease's name. */
    @JvmStatic external fun manualName(lease: Long): String

    /** A manual lease's fence. */
    @JvmStatic external fun manualFence(lease: Long): Long

    /** Extends a manual lease by [nanos] from now: 0, or [PENDING]. */
    @JvmStatic external fun manualExtend(lease: Long, nanos: Long, call: NativeCall): Long

    /** Releases a manual lease: 0, or [PENDING]. */
    @JvmStatic external fun manualRelease(lease: Long, call: NativeCall): Long

    /** Frees a manual lease's handle. */
    @JvmStatic external fun freeManual(lease: Long)

    /** Cancels a waiting call's task and frees it. */
    @JvmStatic external fun callCancel(task: Long)

    /** Frees an answered call's task. */
    @JvmStatic external fun callEnded(task: Long)
}

/**
 * Runs a native call that may wait: [start] returns its answer, or
 * [Natives.PENDING] while it waits, and then the answer comes to the call.
 */
internal suspend inline fun awaitNative(
    noinline unwanted: ((Any?) -> Unit)? = null,
    start: (NativeCall) -> Long,
): Long {
    val call = NativeCall(unwanted)
    val answer = start(call)
    return if (answer == Natives.PENDING) call.await() as Long else answer
}

/**
 * Runs a native call that ends something (a release) and may wait: a wait
 * runs on to its end even if the calling coroutine is cancelled.
 */
internal suspend inline fun endNative(start: (NativeCall) -> Long) {
    val call = NativeCall()
    if (start(call) == Natives.PENDING) withContext(NonCancellable) { call.await() }
}

/** Runs a native call that may wait and answers an object: null while it waits. */
internal suspend inline fun <T : Any> awaitNativeObject(start: (NativeCall) -> T?): T {
    val call = NativeCall()
    @Suppress("UNCHECKED_CAST")
    return start(call) ?: call.await() as T
}

/** Frees [handle] with [free] once [owner] is collected. */
internal fun freeWhenCollected(
    owner: Any,
    handle: Long,
    free: (Long) -> Unit,
) {
    Natives.cleaner.register(owner) { free(handle) }
}
