package dev.leasehold.bench;

import dev.leasehold.java.Lock;
import dev.leasehold.java.Store;
import java.util.concurrent.CompletableFuture;

/** The hold cycle through the Java API, for {@code make bench-jvm}. */
public final class JavaHoldCycle {
    private JavaHoldCycle() {}

    /**
     * Microseconds per {@code lock.hold(key, fn).join()} with a function whose
     * future is already complete, after a warm-up of a tenth as many.
     *
     * @param store the store
     * @param cycles how many cycles to time
     * @return microseconds per cycle
     */
    public static double cycle(Store store, int cycles) {
        Lock lock = store.lock("bench-java");
        CompletableFuture<Void> done = CompletableFuture.completedFuture(null);
        for (int i = 0; i < cycles / 10; i++) {
            lock.hold("k", lease -> done).join();
        }
        long started = System.nanoTime();
        for (int i = 0; i < cycles; i++) {
            lock.hold("k", lease -> done).join();
        }
        return (System.nanoTime() - started) / 1e3 / cycles;
    }
}
