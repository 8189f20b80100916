package dev.leasehold.java;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.leasehold.LeaseLost;
import java.util.concurrent.TimeUnit;

/** What the blocking holds' tests run under a lease that a loss interrupts. */
final class Interrupted {
    private Interrupted() {}

    /**
     * Sleeps 20 s unless interrupted first; the interrupt is thrown on as an
     * `IllegalStateException`, the function's own failure.
     */
    static String sleepUntilInterrupted() {
        try {
            Thread.sleep(20_000);
            return "slept";
        } catch (InterruptedException e) {
            throw new IllegalStateException("interrupted by the loss", e);
        }
    }

    /**
     * Checks that a hold started at `started` (System.nanoTime) was cut
     * short by its loss: `lost` has the interrupted sleep's failure as its
     * cause, and the thread's interrupt is cleared.
     */
    static void checkCutShort(long started, LeaseLost lost) {
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(15), "the loss did not interrupt the sleep");
        assertInstanceOf(IllegalStateException.class, lost.getCause());
        assertInstanceOf(InterruptedException.class, lost.getCause().getCause());
        assertTrue(!Thread.currentThread().isInterrupted(), "the interrupt was left set");
    }
}
