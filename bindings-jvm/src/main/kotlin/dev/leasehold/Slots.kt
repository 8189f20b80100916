package dev.leasehold

import dev.leasehold.slots.Owner
import dev.leasehold.slots.SlotLease
import dev.leasehold.uniffi.NativeOwner
import dev.leasehold.uniffi.NativeSlotLease
import dev.leasehold.uniffi.NativeSlots
import java.lang.ref.Reference.reachabilityFence
import kotlin.time.Duration

/**
 * A slot namespace, opened by [Store.slots]: slots `[0, limit)`
 * leased to owners, each lease with a floor and a ceiling that the IDs
 * issued under it stay between. Which slot an acquire takes, and what a
 * renewal or a release changes, is the store's.
 */
class Slots internal constructor(
    private val native: NativeSlots,
) {
    private val handle = native.handle().also { freeWhenCollected(this, it, Natives::freeSlots) }

    /** The namespace's name. */
    val name: String = native.name()

    /** The slots are `[0, limit)`. */
    val limit: Int get() = native.limit().toInt()

    /** How far a lease's ceiling lies beyond its expiry. */
    val tolerance: Duration get() = native.tolerance().nanos()

    /** What a node number adds to the slot. */
    val offset: Int get() = native.offset().toInt()

    /** The ttl of this handle's leases. */
    val ttl: Duration get() = native.ttl().nanos()

    /** How long before a held slot's expiry its holder declares it lost. */
    val margin: Duration get() = native.margin().nanos()

    /**
     * Acquires a slot for [owner] (SLOT-01): the one it holds already, else
     * [preferred] if free, else the one its key held last if free, else the
     * lowest free slot; `null` when every slot is held. A store that does
     * not answer in time fails [Timeout] (SLOT-07), and repeating the call is
     * safe.
     */
    suspend fun acquire(
        owner: Owner,
        preferred: Int? = null,
    ): SlotLease? = native { native.acquire(owner.toNative(), preferred?.let { unsigned("preferred slot", it) }) }?.toLease()

    /** Renews [lease] for this handle's ttl (SLOT-04); `null` when its owner or fence no longer match. */
    suspend fun renew(lease: SlotLease): SlotLease? {
        val owner = lease.owner()
        val numbers =
            awaitNativeObject { Natives.slotRenew(handle, lease.namespace(), owner.key(), owner.instance(), lease.numbers(), it) }
        reachabilityFence(this)
        return if (numbers.isEmpty()) null else slotLease(lease.namespace(), owner, numbers)
    }

    /**
     * Releases [lease], having issued timestamps up to [lastIssued] (ms): the
     * next holder's floor becomes `max(floor, min(lastIssued, ceiling))`
     * (SLOT-05). `false` when its owner or fence no longer match. It runs on
     * to its end even if the calling coroutine is cancelled.
     */
    suspend fun release(
        lease: SlotLease,
        lastIssued: Long,
    ): Boolean = native { native.release(lease.toNative(), unsignedLong("last issued timestamp", lastIssued)) }

    /**
     * Acquires a slot for [owner] as [acquire] does and runs [block] while
     * holding it, renewed in the background; then releases it with the
     * largest timestamp the block recorded ([HeldSlot.issued]). `null`, and
     * nothing runs, when every slot is held. A lost slot cancels the block,
     * and `hold` then throws [LeaseLost].
     */
    suspend fun <T : Any> hold(
        owner: Owner,
        preferred: Int? = null,
        block: suspend (HeldSlot) -> T,
    ): T? {
        val slot = preferred?.let { unsigned("preferred slot", it).toInt() } ?: NO_PREFERENCE
        val handle = awaitNative(::unwanted) { Natives.slotBegin(handle, owner.key(), owner.instance(), slot, it) }
        reachabilityFence(this)
        if (handle == EXHAUSTED) return null
        val holding = SlotHolding(handle, name, owner)
        return runHeld(holding) { block(HeldSlot(holding)) }
    }

    private companion object {
        /** What `slotBegin` is given for no preferred slot. */
        const val NO_PREFERENCE = -1

        /** What `slotBegin` answers when every slot is held. */
        const val EXHAUSTED = 0L

        /** A slot held for a call given up meanwhile: freed, so released. */
        fun unwanted(handle: Any?) {
            if (handle != EXHAUSTED) Natives.freeSlotHolding(handle as Long)
        }
    }
}

/**
 * A held slot in the native library (`natives/slots.rs`): its reads, its
 * loss, its end; freed when collected (a slot still held is then released
 * in the background).
 */
internal class SlotHolding(
    private val handle: Long,
    private val namespace: String,
    private val owner: Owner,
) : Held {
    init {
        freeWhenCollected(this, handle, Natives::freeSlotHolding)
    }

    val lease: SlotLease get() = slotLease(namespace, owner, Natives.slotLease(handle)).also { reachabilityFence(this) }

    fun issued(ms: Long) = Natives.slotIssued(handle, ms).also { reachabilityFence(this) }

    val lastIssued: Long get() = Natives.slotLastIssued(handle).also { reachabilityFence(this) }

    val lost: Boolean get() = Natives.slotLost(handle).also { reachabilityFence(this) }

    val lossReason: String? get() = Natives.slotLossReason(handle).also { reachabilityFence(this) }

    val remaining: Long get() = Natives.slotRemaining(handle).also { reachabilityFence(this) }

    override suspend fun lostSignal(): String = awaitNativeObject { Natives.slotLostSignal(handle, it) }.also { reachabilityFence(this) }

    override suspend fun end() {
        endNative { Natives.slotEnd(handle, it) }
        reachabilityFence(this)
    }
}

/** A held slot, as the block running under it sees it. */
class HeldSlot internal constructor(
    private val holding: SlotHolding,
) {
    /** The lease as last renewed. */
    val lease: SlotLease get() = holding.lease

    /** The slot, in `[0, limit)`. */
    val slot: Int get() = lease.slot()

    /** The node number for IDs: the slot plus the namespace's offset. */
    val node: Int get() = lease.node()

    /** The fence (SLOT-08); renewals keep it. */
    val fence: Long get() = lease.fence()

    /** Issue only timestamps above this one (SLOT-05, SLOT-06). */
    val floor: Long get() = lease.floor()

    /** Issue no timestamp past this one; renewals move it on. */
    val ceiling: Long get() = lease.ceiling()

    /**
     * Records that timestamps up to [ms] were issued: the release hands the
     * largest recorded to the slot's next holder (SLOT-05). Fails
     * [LeaseLost] once the slot was lost or released.
     */
    fun issued(ms: Long) = holding.issued(ms)

    /** The largest timestamp recorded (0: none). */
    val lastIssued: Long get() = holding.lastIssued

    /** Whether the slot was lost. */
    val lost: Boolean get() = holding.lost

    /** Why it was lost (`expired`, `unknown`), once it was. */
    val lossReason: String? get() = holding.lossReason

    /** The time left before the holder's deadline, zero once lost. */
    val remaining: Duration get() = holding.remaining.nanos()
}

internal fun Owner.toNative() = NativeOwner(key(), instance())

internal fun SlotLease.toNative() =
    NativeSlotLease(
        namespace = namespace(),
        owner = owner().toNative(),
        slot = unsigned("slot", slot()),
        offset = unsigned("slot offset", slotOffset()),
        fence = fence().toULong(),
        floor = unsignedLong("floor", floor()),
        expiresAt = unsignedLong("expiry", expiresAt()),
        ceiling = unsignedLong("ceiling", ceiling()),
    )

/** A lease's numbers as the natives take them: slot, offset, fence, floor, expiry, ceiling. */
internal fun SlotLease.numbers() = longArrayOf(slot().toLong(), slotOffset().toLong(), fence(), floor(), expiresAt(), ceiling())

/** The lease of [namespace] and [owner] with these [numbers] (as [numbers] writes them). */
internal fun slotLease(
    namespace: String,
    owner: Owner,
    numbers: LongArray,
) = SlotLease(namespace, owner, numbers[0].toInt(), numbers[1].toInt(), numbers[2], numbers[3], numbers[4], numbers[5])

internal fun NativeSlotLease.toLease() =
    SlotLease(
        namespace,
        Owner(owner.key, owner.instance),
        slot.toInt(),
        offset.toInt(),
        fence.toLong(),
        floor.toLong(),
        expiresAt.toLong(),
        ceiling.toLong(),
    )
