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
 * - A renewal's `tolerance` is the namespace's, fixed by its first use
 *   (SLOT-02): the one a renewal passes does not change it.
 */
internal class SlotStore(
    private val store: Store,
    private val timeout: Duration?,
) : SlotLeaseStore {
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
            val slots =
                store.slots(
                    namespace,
                    limit = limit,
                    ttl = ttl.toKotlinDuration(),
                    tolerance = tolerance.toKotlinDuration(),
                    offset = slotOffset,
                    timeout = timeout,
                )
            val preferred = if (preferredSlot.isPresent) preferredSlot.asInt else null
            slots.acquire(owner, preferred)?.let(AcquireResult::Leased) ?: AcquireResult.EXHAUSTED
        }

    override fun renew(
        lease: SlotLease,
        ttl: JavaDuration,
        tolerance: JavaDuration,
    ): Optional<SlotLease> =
        answer {
            val slots =
                store.slots(
                    lease.namespace(),
                    ttl = ttl.toKotlinDuration(),
                    tolerance = tolerance.toKotlinDuration(),
                    offset = lease.slotOffset(),
                    timeout = timeout,
                )
            Optional.ofNullable(slots.renew(lease))
        }

    override fun release(
        lease: SlotLease,
        lastIssued: Long,
    ): Boolean = answer { store.slots(lease.namespace(), offset = lease.slotOffset(), timeout = timeout).release(lease, lastIssued) }

    /** The answer of [call], its failures as the SPI names them. */
    private fun <T> answer(call: suspend () -> T): T =
        try {
            runBlocking { call() }
        } catch (e: NamespaceMismatch) {
            throw NamespaceMismatchException(e.message ?: "namespace mismatch", e)
        } catch (e: Timeout) {
            throw StoreTimeoutException(e.message ?: "the store did not answer in time", e)
        }
}
