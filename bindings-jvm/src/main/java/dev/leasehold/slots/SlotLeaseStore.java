package dev.leasehold.slots;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Leases time windows on machine slots (SPI, in Leasehold's own
 * package): every state change is an atomic conditional update of one slot,
 * stamped by the store's clock. {@code dev.leasehold.java.Store#slotLeaseStore()}
 * is Leasehold's implementation, on any of its stores; it is synchronous, as
 * this interface is.
 *
 * <p>Failures: an operation that fails for another reason than its outcome
 * throws a {@link RuntimeException} (Leasehold's {@code LeaseholdException}
 * with its stable code). A timeout is recognised with
 * {@link StoreTimeoutException#isTimeout(Throwable)}.
 */
public interface SlotLeaseStore extends AutoCloseable {
    /**
     * Acquires a slot, trying in order: one this owner already holds,
     * {@code preferredSlot}, the slot this owner key held last, the lowest
     * free slot.
     *
     * @param namespace the namespace
     * @param owner the owner
     * @param limit the slots are {@code [0, limit)}
     * @param ttl the lease expires this long after the write
     * @param tolerance the ceiling lies this far beyond the expiry
     * @param slotOffset what the clients add to the slot to get the node of
     *     their IDs; recorded with the limit and the tolerance, it does not
     *     change which slot is chosen
     * @param preferredSlot the slot to try before the others
     * @return the lease, or {@link AcquireResult#EXHAUSTED}
     * @throws NamespaceMismatchException if the namespace was first used with
     *     another limit, tolerance or slot offset
     */
    AcquireResult acquire(
            String namespace,
            Owner owner,
            int limit,
            Duration ttl,
            Duration tolerance,
            int slotOffset,
            OptionalInt preferredSlot);

    /**
     * Renews a lease; idempotent, the fence stays.
     *
     * @param lease the lease, as last returned
     * @param ttl the lease expires this long after the write, never earlier than before
     * @param tolerance the ceiling lies this far beyond the expiry
     * @return the renewed lease, or empty if the owner or fence no longer match
     */
    Optional<SlotLease> renew(SlotLease lease, Duration ttl, Duration tolerance);

    /**
     * Releases a lease; the next holder's floor becomes
     * {@code max(floor, min(lastIssued, ceiling))}.
     *
     * @param lease the lease, as last returned
     * @param lastIssued the largest timestamp issued under the lease, in milliseconds
     * @return whether the lease was released; false if the owner or fence no longer match
     */
    boolean release(SlotLease lease, long lastIssued);

    @Override
    default void close() {}
}
