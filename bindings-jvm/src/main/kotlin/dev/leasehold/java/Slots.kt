package dev.leasehold.java

import dev.leasehold.slots.Owner
import dev.leasehold.slots.SlotLease
import kotlinx.coroutines.future.await
import java.time.Duration
import java.util.Optional
import java.util.OptionalInt
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CompletionStage
import java.util.function.Function
import kotlin.time.toJavaDuration
import dev.leasehold.HeldSlot as KotlinHeldSlot
import dev.leasehold.Slots as KotlinSlots

/**
 * A slot namespace for Java ([Store.slots]): slots `[0, limit)` leased to
 * owners, the Kotlin [dev.leasehold.Slots] with futures. A slot held with
 * [hold] is renewed in the background, as a key is.
 */
class Slots internal constructor(
    private val slots: KotlinSlots,
) {
    /** The namespace's name. */
    fun name(): String = slots.name

    /** The slots are `[0, limit)`. */
    fun limit(): Int = slots.limit

    /** How far a lease's ceiling lies beyond its expiry. */
    fun tolerance(): Duration = slots.tolerance.toJavaDuration()

    /** What a node number adds to the slot. */
    fun offset(): Int = slots.offset

    /** The ttl of this handle's leases. */
    fun ttl(): Duration = slots.ttl.toJavaDuration()

    /** How long before a held slot's expiry its holder declares it lost. */
    fun margin(): Duration = slots.margin.toJavaDuration()

    /**
     * Acquires a slot for [owner] (SLOT-01): the one it holds already, else
     * [preferred] if free, else the one its key held last if free, else the
     * lowest free slot; empty when every slot is held.
     */
    @JvmOverloads
    fun acquire(
        owner: Owner,
        preferred: OptionalInt = OptionalInt.empty(),
    ): CompletableFuture<Optional<SlotLease>> = futureOf { Optional.ofNullable(slots.acquire(owner, preferred.orNull())) }

    /** Renews [lease] for this handle's ttl (SLOT-04); empty when its owner or fence no longer match. */
    fun renew(lease: SlotLease): CompletableFuture<Optional<SlotLease>> = futureOf { Optional.ofNullable(slots.renew(lease)) }

    /**
     * Releases [lease], having issued timestamps up to [lastIssued] (ms)
     * (SLOT-05); false when its owner or fence no longer match.
     */
    fun release(
        lease: SlotLease,
        lastIssued: Long,
    ): CompletableFuture<Boolean> = futureOf { slots.release(lease, lastIssued) }

    /**
     * Acquires a slot for [owner] as [acquire] does and holds it while
     * [fn]'s future runs, renewed in the background; then releases it with
     * the largest timestamp recorded ([HeldSlot.issued]). [Attempt.Ran]
     * with the future's value, or [Attempt.Refused], and [fn] is not called,
     * when every slot is held. A lost slot cancels [fn]'s future, and the
     * returned one then fails `dev.leasehold.LeaseLost`.
     */
    @JvmOverloads
    fun <T> hold(
        owner: Owner,
        preferred: OptionalInt = OptionalInt.empty(),
        fn: Function<HeldSlot, out CompletionStage<T>>,
    ): CompletableFuture<Attempt<T>> =
        futureOf { slots.hold(owner, preferred.orNull()) { Attempt.of(fn.apply(HeldSlot(it)).await()) } ?: Attempt.refused() }
}

private fun OptionalInt.orNull(): Int? = if (isPresent) asInt else null

/** A held slot, as the function running under it sees it ([Slots.hold]). */
class HeldSlot internal constructor(
    private val held: KotlinHeldSlot,
) {
    /** The lease as last renewed. */
    fun lease(): SlotLease = held.lease

    /** The slot, in `[0, limit)`. */
    fun slot(): Int = held.slot

    /** The node number for IDs: the slot plus the namespace's offset. */
    fun node(): Int = held.node

    /** The fence (SLOT-08); renewals keep it. */
    fun fence(): Long = held.fence

    /** Issue only timestamps above this one (SLOT-05, SLOT-06). */
    fun floor(): Long = held.floor

    /** Issue no timestamp past this one; renewals move it on. */
    fun ceiling(): Long = held.ceiling

    /**
     * Records that timestamps up to [ms] were issued: the release hands the
     * largest recorded to the slot's next holder (SLOT-05).
     */
    fun issued(ms: Long) = held.issued(ms)

    /** The largest timestamp recorded (0: none). */
    fun lastIssued(): Long = held.lastIssued

    /** Whether the slot was lost. */
    fun lost(): Boolean = held.lost

    /** Why it was lost, once it was. */
    fun lossReason(): Optional<String> = Optional.ofNullable(held.lossReason)

    /** The time left before the holder's deadline, zero once lost. */
    fun remaining(): Duration = held.remaining.toJavaDuration()
}
