package dev.leasehold.slots;

import java.util.Objects;

/**
 * A lease on one slot, as the store last returned it. Times are
 * milliseconds since the Unix epoch on the store's clock. Issue only
 * timestamps above {@link #floor()} and at most {@link #ceiling()}: the
 * previous holder may have issued up to the floor, and the next holder's
 * floor may be the ceiling.
 *
 * <p>A plain value: the store checks the owner and the fence of whatever
 * lease it is given, so a lease kept, serialised and read back renews and
 * releases as the original does.
 *
 * @param namespace the namespace
 * @param owner the owner
 * @param slot the slot, in {@code [0, limit)}
 * @param slotOffset the namespace's offset: the node number is {@code slot + slotOffset}
 * @param fence larger than every fence the store gave before (SLOT-08); renewals keep it
 * @param floor issue only timestamps above this one
 * @param expiresAt when the lease expires unless renewed
 * @param ceiling issue no timestamp past this one
 */
public record SlotLease(
        String namespace,
        Owner owner,
        int slot,
        int slotOffset,
        long fence,
        long floor,
        long expiresAt,
        long ceiling) {
    /** A lease; neither the namespace nor the owner may be null. */
    public SlotLease {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(owner, "owner");
    }

    /**
     * The node number for IDs: the slot plus the namespace's offset.
     *
     * @return {@code slot + slotOffset}
     */
    public int node() {
        return slot + slotOffset;
    }
}
