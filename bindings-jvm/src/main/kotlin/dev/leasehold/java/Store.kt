package dev.leasehold.java

import dev.leasehold.slots.SlotLeaseStore
import java.time.Duration
import java.util.Optional
import java.util.concurrent.CompletableFuture
import dev.leasehold.Store as KotlinStore

/**
 * A store of leases, for Java ([Leasehold.memory], [Leasehold.connect]):
 * the Kotlin [dev.leasehold.Store] with futures. Close it with [close].
 */
class Store internal constructor(
    private val store: KotlinStore,
) {
    /** Opens the lock [name] with the core's defaults; nothing is sent. */
    fun lock(name: String): Lock = lock(name, LockOptions.defaults())

    /** Opens the lock [name] whose leases last [ttl]; nothing is sent. */
    fun lock(
        name: String,
        ttl: Duration,
    ): Lock = lock(name, LockOptions.defaults().withTtl(ttl))

    /** Opens the lock [name] with [options]; out of range, they fail `InvalidTtl` at once (LOCK-13). */
    fun lock(
        name: String,
        options: LockOptions,
    ): Lock =
        Lock(
            store.lock(
                name,
                ttl = options.ttl.toOptionalKotlin(),
                maxHold = options.maxHold.toOptionalKotlin(),
                wait = options.wait.toOptionalKotlin(),
                margin = options.margin.toOptionalKotlin(),
            ),
        )

    /** Takes the manual lease [name] for [ttl] if it is free; empty when it is held (MANUAL-01). */
    fun tryAcquire(
        name: String,
        ttl: Duration,
    ): CompletableFuture<Optional<ManualLease>> = futureOf { Optional.ofNullable(store.tryAcquire(name, ttl.toKotlin())?.let(::ManualLease)) }

    /**
     * Waits for the manual lease [name] (MANUAL-02), at most [wait] if given;
     * cancelling the future leaves the line (LOCK-18).
     */
    @JvmOverloads
    fun acquire(
        name: String,
        ttl: Duration,
        wait: Duration? = null,
    ): CompletableFuture<ManualLease> = futureOf { ManualLease(store.acquire(name, ttl.toKotlin(), wait.toOptionalKotlin())) }

    /** Opens an ID generator on a slot of namespace [name] (IDGEN); fails `NotReady` when every slot is held. */
    @JvmOverloads
    fun ids(
        name: String,
        options: IdsOptions = IdsOptions.defaults(),
    ): CompletableFuture<IdGenerator> =
        futureOf {
            IdGenerator(
                store.ids(
                    name,
                    layout = options.layout,
                    limit = options.limit,
                    offset = options.offset,
                    ttl = options.ttl.toOptionalKotlin(),
                    tolerance = options.tolerance.toOptionalKotlin(),
                    timeout = options.timeout.toOptionalKotlin(),
                    maxLead = options.maxLead.toOptionalKotlin(),
                    ownerKey = options.ownerKey,
                    preferred = options.preferred,
                ),
            )
        }

    /** Opens the slot namespace [name] with [options] (SLOT-02); nothing is sent. */
    @JvmOverloads
    fun slots(
        name: String,
        options: SlotsOptions = SlotsOptions.defaults(),
    ): Slots =
        Slots(
            store.slots(
                name,
                limit = options.limit,
                ttl = options.ttl.toOptionalKotlin(),
                tolerance = options.tolerance.toOptionalKotlin(),
                offset = options.offset,
                margin = options.margin.toOptionalKotlin(),
                timeout = options.timeout.toOptionalKotlin(),
                layout = options.layout,
            ),
        )

    /**
     * The slot store SPI ([SlotLeaseStore]) on this store: slot leases for Java,
     * synchronous as that interface is. [timeout] bounds each call's
     * wait for the store (default 5 s); past it, the call throws a
     * `StoreTimeoutException`.
     */
    @JvmOverloads
    fun slotLeaseStore(timeout: Duration? = null): SlotLeaseStore = store.slotLeaseStore(timeout.toOptionalKotlin())

    /** Closes the store: its leases end, its waiting calls fail `Closed`. */
    fun close(): CompletableFuture<Void?> = futureOf { store.close() }.thenApply { null }
}
