package dev.leasehold.slots;

/**
 * A namespace was first used with another limit, tolerance or slot offset
 * (SLOT-02): thrown by {@link SlotLeaseStore#acquire}. Its cause is the
 * store's own {@code dev.leasehold.NamespaceMismatch}.
 */
public class NamespaceMismatchException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A mismatch.
     *
     * @param message what the namespace was first used with, and what was asked
     * @param cause the store's failure
     */
    public NamespaceMismatchException(String message, Throwable cause) {
        super(message, cause);
    }
}
