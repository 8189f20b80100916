package dev.leasehold.slots;

import java.util.Optional;

/** The answer to {@link SlotLeaseStore#acquire}: a lease, or {@link #EXHAUSTED}. */
public sealed interface AcquireResult permits AcquireResult.Leased, AcquireResult.Exhausted {
    /** Every slot is held: an outcome, not a failure (SLOT-01). */
    AcquireResult EXHAUSTED = new Exhausted();

    /**
     * A slot is the owner's.
     *
     * @param lease its lease
     */
    record Leased(SlotLease lease) implements AcquireResult {}

    /** Every slot is held. */
    record Exhausted() implements AcquireResult {}

    /**
     * The lease, if there is one.
     *
     * @return the lease, or empty when every slot is held
     */
    default Optional<SlotLease> optionalLease() {
        return this instanceof Leased leased ? Optional.of(leased.lease()) : Optional.empty();
    }
}
