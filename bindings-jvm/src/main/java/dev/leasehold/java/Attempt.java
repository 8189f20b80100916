package dev.leasehold.java;

/**
 * What a call that holds only if it can did ({@code lock.tryHold}, a slot
 * namespace's {@code hold}): it {@link Ran} the function, with the value the
 * function's stage completed with (null is a value like any other), or it
 * was {@link Refused} (the key was held, or every slot was) and the function
 * was not called.
 *
 * @param <T> the function's value
 */
public sealed interface Attempt<T> permits Attempt.Ran, Attempt.Refused {
    /**
     * The function ran under the lease.
     *
     * @param value what its stage completed with, possibly null
     * @param <T> the function's value
     */
    record Ran<T>(T value) implements Attempt<T> {}

    /**
     * Nothing was held and the function was not called: the key is held by
     * another holder (LOCK-17), or every slot is held (SLOT-01).
     *
     * @param <T> the function's value
     */
    record Refused<T>() implements Attempt<T> {}

    /**
     * An attempt that ran and got {@code value}.
     *
     * @param value the function's value, possibly null
     * @param <T> its type
     * @return the attempt
     */
    static <T> Attempt<T> of(T value) {
        return new Ran<>(value);
    }

    /**
     * An attempt that was refused.
     *
     * @param <T> the function's value
     * @return the attempt
     */
    static <T> Attempt<T> refused() {
        return new Refused<>();
    }

    /**
     * Whether the function ran.
     *
     * @return true for {@link Ran}
     */
    default boolean ran() {
        return this instanceof Ran;
    }
}
