package dev.leasehold.slots;

/**
 * The store did not answer a slot call in time (SLOT-07): the call's outcome
 * is unknown, and repeating it is safe (an acquire repeated by the same owner
 * returns the same lease). Its cause is the store's own
 * {@code dev.leasehold.Timeout}.
 */
public class StoreTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A timeout.
     *
     * @param message which call and how long it waited
     * @param cause the store's failure
     */
    public StoreTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * Whether {@code error} is a store timeout: a {@code StoreTimeoutException},
     * or an error with one in its cause chain. Failures that are outcomes (a
     * namespace mismatch, a lost lease) are not.
     *
     * @param error any throwable, or null
     * @return whether it is, or was caused by, a store timeout
     */
    public static boolean isTimeout(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
            if (e instanceof StoreTimeoutException) {
                return true;
            }
        }
        return false;
    }
}
