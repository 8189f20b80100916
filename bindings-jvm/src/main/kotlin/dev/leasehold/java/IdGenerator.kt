package dev.leasehold.java

import dev.leasehold.IdLayout
import dev.leasehold.slots.SlotLease
import java.util.Optional
import java.util.concurrent.CompletableFuture
import dev.leasehold.IdGenerator as KotlinIdGenerator

/** An ID generator for Java ([Store.ids]): the Kotlin [dev.leasehold.IdGenerator] with futures. */
class IdGenerator internal constructor(
    private val ids: KotlinIdGenerator,
) {
    /** The next ID without waiting: fails `NotReady`, `Overflow` or `LeaseLost` (IDGEN-04). */
    fun nextNow(): Long = ids.nextNow()

    /** The next ID, waiting while none can be issued yet. */
    fun next(): CompletableFuture<Long> = futureOf { ids.next() }

    /** As many IDs as can be issued now, 1 to [n]; fails as [nextNow] when none can. */
    fun takeNow(n: Int): LongArray = ids.takeNow(n)

    /** [n] IDs, waiting while they cannot be issued yet. */
    fun take(n: Int): CompletableFuture<LongArray> = futureOf { ids.take(n) }

    /** Seals the generator and releases its slot with the largest tick issued (IDGEN-02). */
    fun close(): CompletableFuture<Void?> = futureOf { ids.close() }.thenApply { null }

    /** The layout. */
    fun layout(): IdLayout = ids.layout

    /** The node number every ID carries. */
    fun node(): Int = ids.node

    /** The slot lease as last renewed. */
    fun lease(): SlotLease = ids.lease

    /** The start of the largest tick issued (ms since the Unix epoch; 0: none). */
    fun lastIssued(): Long = ids.lastIssued

    /** Whether the slot was lost. */
    fun lost(): Boolean = ids.lost

    /** Why the slot was lost, once it was. */
    fun lossReason(): Optional<String> = Optional.ofNullable(ids.lossReason)
}
