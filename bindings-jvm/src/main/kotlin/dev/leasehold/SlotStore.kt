package dev.leasehold

import dev.leasehold.slots.AcquireResult
import dev.leasehold.slots.NamespaceMismatchException
import dev.leasehold.slots.Owner
import dev.leasehold.slots.SlotLease
import dev.leasehold.slots.SlotLeaseStore
import dev.leasehold.slots.StoreTimeoutException
import kotlinx.coroutines.runBlocking
import java.util.Optional
import java.util.OptionalInt
import java.util.concurrent.ConcurrentHashMap
import kotlin.time.Duration
import kotlin.time.toKotlinDuration
import java.time.Duration as JavaDuration

/**
 * The [SlotLeaseStore] SPI on a Leasehold store ([Store.slotLeaseStore]):
 * each call opens the namespace with the parameters it passes ([Store.slots],
 * which sends nothing) and waits for the store's answer on the calling
 * thread, bounded by the slot calls' timeout (default 5 s).
 *
 * - [NamespaceMismatch] becomes [NamespaceMismatchException], and [Timeout]
 *   a [StoreTimeoutException], each with the store's failure as its cause;
 *   every other failure is the store's own [LeaseholdException].
 * - A renewal's `tolerance` must be the namespace's, fixed by its first use
 *   (SLOT-02): one that differs from the tolerance the namespace was used
 *   with through this store's SPI (by an acquire, or else a first
 *   renewal) throws [NamespaceMismatchException], as an acquire with
 *   another one does. The store's renew request carries no tolerance, so
 *   a process that renews a namespace it never used otherwise is checked
 *   only against its own first renewal; the namespace's recorded tolerance
 *   is what sets the ceiling either way.
 * - The namespace handles a call opens are kept for the next call with the
 *   same parameters (at most [KEPT] of them).
 */
internal class SlotStore(
    private val store: Store,
    private val timeout: Duration?,
) : SlotLeaseStore {
    /** The namespace handles opened, by what opened them. */
    private val opened = ConcurrentHashMap<Opened, Slots>()

    /** What a namespace handle was opened with. */
    private data class Opened(
        val namespace: String,
        val limit: Int?,
        val ttl: JavaDuration?,
        val tolerance: JavaDuration?,
        val offset: Int,
    )

    private fun slots(
        namespace: String,
        limit: Int? = null,
        ttl: JavaDuration? = null,
        tolerance: JavaDuration? = null,
        offset: Int,
    ): Slots {
        if (opened.size >= KEPT) opened.clear()
        return opened.computeIfAbsent(Opened(namespace, limit, ttl, tolerance, offset)) {
            store.slots(
                namespace,
                limit = limit,
                ttl = ttl?.toKotlinDuration(),
                tolerance = tolerance?.toKotlinDuration(),
                offset = offset,
                timeout = timeout,
            )
        }
    }
    override fun acquire(
        namespace: String,
        owner: Owner,
        limit: Int,
        ttl: JavaDuration,
        tolerance: JavaDuration,
        slotOffset: Int,
        preferredSlot: OptionalInt,
    ): AcquireResult =
        answer {
            val slots = slots(namespace, limit, ttl, tolerance, slotOffset)
            val preferred = if (preferredSlot.isPresent) preferredSlot.asInt else null
            val got = slots.acquire(owner, preferred)?.let(AcquireResult::Leased) ?: AcquireResult.EXHAUSTED
            store.slotTolerances[namespace] = tolerance
            got
        }

    override fun renew(
        lease: SlotLease,
        ttl: JavaDuration,
        tolerance: JavaDuration,
    ): Optional<SlotLease> =
        answer {
            val namespace = lease.namespace()
            val known = store.slotTolerances.putIfAbsent(namespace, tolerance)
            if (known != null && known != tolerance) {
                throw NamespaceMismatch("the slot namespace $namespace is used with tolerance $known, a renewal passed $tolerance")
            }
            Optional.ofNullable(slots(namespace, ttl = ttl, tolerance = tolerance, offset = lease.slotOffset()).renew(lease))
        }

    override fun release(
        lease: SlotLease,
        lastIssued: Long,
    ): Boolean = answer { slots(lease.namespace(), offset = lease.slotOffset()).release(lease, lastIssued) }

    /** The answer of [call], its failures as the SPI names them. */
    private fun <T> answer(call: suspend () -> T): T =
        try {
            runBlocking { call() }
        } catch (e: NamespaceMismatch) {
            throw NamespaceMismatchException(e.message ?: "namespace mismatch", e)
        } catch (e: Timeout) {
            throw StoreTimeoutException(e.message ?: "the store did not answer in time", e)
        }

    private companion object {
        /** The most namespace handles kept; past it, they are opened afresh. */
        const val KEPT = 64
    }
}
