package dev.leasehold

import dev.leasehold.slots.SlotLeaseStore
import dev.leasehold.uniffi.NativeIdsOptions
import dev.leasehold.uniffi.NativeSlotsOptions
import dev.leasehold.uniffi.NativeStore
import java.util.concurrent.ConcurrentHashMap
import kotlin.time.Duration

/**
 * A store of leases: the embedded one ([Leasehold.memory]) or one over a
 * connection ([Leasehold.connect]). Close it with [close], which ends what
 * it holds.
 */
class Store internal constructor(
    internal val native: NativeStore,
) {
    init {
        Callbacks.ready()
    }

    /**
     * Opens the lock [name]: keys held while a block runs. Nothing
     * is sent; options out of range fail [InvalidTtl] at once (LOCK-13).
     * [ttl] defaults to 10 s; [maxHold] bounds a hold whatever its renewals
     * (LOCK-12); [wait] bounds waiting in line; [margin] is how long before
     * the store's expiry a holder declares its lease lost.
     */
    fun lock(
        name: String,
        ttl: Duration? = null,
        maxHold: Duration? = null,
        wait: Duration? = null,
        margin: Duration? = null,
    ): Lock =
        Lock(
            native {
                native.lock(name, ttl.toOptionalNanos(), maxHold.toOptionalNanos(), wait.toOptionalNanos(), margin.toOptionalNanos())
            },
        )

    /**
     * Takes the manual lease [name] for [ttl] (default 10 s) if it is free;
     * `null` when it is held (MANUAL-01). Cancelling the calling coroutine
     * stops waiting for the store's answer; a lease that answers later is
     * released at once.
     */
    suspend fun tryAcquire(
        name: String,
        ttl: Duration? = null,
    ): ManualLease? = native { native.tryAcquire(name, ttl.toOptionalNanos()) }?.let(::ManualLease)

    /**
     * Waits for the manual lease [name] (MANUAL-02), at most [wait] (else
     * until it comes). Cancelling the calling coroutine leaves the line (LOCK-18).
     */
    suspend fun acquire(
        name: String,
        ttl: Duration? = null,
        wait: Duration? = null,
    ): ManualLease = ManualLease(native { native.acquire(name, ttl.toOptionalNanos(), wait.toOptionalNanos()) })

    /**
     * Opens the slot namespace [name]: slots `[0, limit)` leased
     * to owners, each lease with a floor and a ceiling for the IDs issued
     * under it. The namespace's first use fixes [limit], [tolerance],
     * [offset] and [layout] (SLOT-02). Nothing is sent.
     */
    fun slots(
        name: String,
        limit: Int? = null,
        ttl: Duration? = null,
        tolerance: Duration? = null,
        offset: Int? = null,
        margin: Duration? = null,
        timeout: Duration? = null,
        layout: IdLayout? = null,
    ): Slots {
        val options =
            NativeSlotsOptions(
                limit = limit?.let { unsigned("limit", it) },
                ttl = ttl.toOptionalNanos(),
                tolerance = tolerance.toOptionalNanos(),
                offset = offset?.let { unsigned("offset", it) },
                margin = margin.toOptionalNanos(),
                timeout = timeout.toOptionalNanos(),
                layout = layout?.toNative(),
            )
        return Slots(native { native.slots(name, options) })
    }

    /**
     * Opens an ID generator on a slot of namespace [name] (IDGEN): 64-bit IDs
     * of timestamp, node and sequence in [layout] (default 41/10/12 in ms),
     * unique across every generator of the namespace. Fails [NotReady] when
     * every slot is held. [maxLead] bounds how far ahead of the store's clock
     * IDs may be issued (default 1 s); [ownerKey] is the owner key its slot
     * is leased under (each generator gets a fresh instance).
     */
    suspend fun ids(
        name: String,
        layout: IdLayout? = null,
        limit: Int? = null,
        offset: Int? = null,
        ttl: Duration? = null,
        tolerance: Duration? = null,
        timeout: Duration? = null,
        maxLead: Duration? = null,
        ownerKey: String? = null,
        preferred: Int? = null,
    ): IdGenerator {
        val options =
            NativeIdsOptions(
                layout = layout?.toNative(),
                limit = limit?.let { unsigned("limit", it) },
                offset = offset?.let { unsigned("offset", it) },
                ttl = ttl.toOptionalNanos(),
                tolerance = tolerance.toOptionalNanos(),
                timeout = timeout.toOptionalNanos(),
                maxLead = maxLead.toOptionalNanos(),
                ownerKey = ownerKey,
                preferred = preferred?.let { unsigned("preferred slot", it) },
            )
        return IdGenerator(native { native.ids(name, options) })
    }

    /**
     * The slot store SPI ([SlotLeaseStore]) on this store, synchronous as that
     * interface is: a service written against that SPI uses Leasehold as its
     * store through it. [timeout] bounds each call's wait for the store
     * (default 5 s); past it, the call throws a `StoreTimeoutException`.
     */
    @JvmOverloads
    fun slotLeaseStore(timeout: Duration? = null): SlotLeaseStore = SlotStore(this, timeout)

    /** The tolerance each slot namespace was used with through the SPI ([SlotStore]). */
    internal val slotTolerances = ConcurrentHashMap<String, java.time.Duration>()

    /**
     * Closes the store: its leases end, its waiting calls fail [Closed]. It
     * runs on to its end even if the calling coroutine is cancelled.
     */
    suspend fun close() {
        native { native.closeStore() }
    }
}

/** [value] as the native library's unsigned count; a negative one fails [InvalidArgument]. */
internal fun unsigned(
    what: String,
    value: Int,
): UInt {
    if (value < 0) throw InvalidArgument("the $what must not be negative, got $value")
    return value.toUInt()
}

/** [value] as an unsigned 64-bit number; a negative one fails [InvalidArgument]. */
internal fun unsignedLong(
    what: String,
    value: Long,
): ULong {
    if (value < 0) throw InvalidArgument("the $what must not be negative, got $value")
    return value.toULong()
}
