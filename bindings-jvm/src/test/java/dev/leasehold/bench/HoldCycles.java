package dev.leasehold.bench;

import dev.leasehold.java.Leasehold;
import dev.leasehold.java.Lock;
import dev.leasehold.java.Store;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The hold cycle through Java and Kotlin, one key, uncontended, for
 * {@code make bench-jvm} (JvmBench runs it beside Rust's cycle): Java
 * {@code lock.hold(key, lease -> done).join()}; Kotlin
 * {@code lock.hold(key) {}} from a coroutine, {@link KotlinCycles#BATCH}
 * cycles an invocation. On the embedded store, or on the server store at
 * the system property {@code leasehold.bench.server}. Java blocking:
 * {@code lock.holdBlocking(key, lease -> null)}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class HoldCycles {
    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

    /** {@code embedded} or {@code server}. */
    @Param({"embedded", "server"})
    public String store;

    private Store javaStore;
    private Lock javaLock;
    private dev.leasehold.Store kotlinStore;
    private dev.leasehold.Lock kotlinLock;

    /** Opens a store of each API. */
    @Setup(Level.Trial)
    public void open() {
        javaStore = Stores.java(store);
        javaLock = javaStore.lock("bench-java", Duration.ofSeconds(30));
        kotlinStore = Stores.kotlin(store);
        kotlinLock = KotlinCycles.lock(kotlinStore, "bench-kotlin");
    }

    /** Closes them. */
    @TearDown(Level.Trial)
    public void close() {
        javaStore.close().join();
        KotlinCycles.close(kotlinStore);
    }

    /** One Java hold cycle. */
    @Benchmark
    public void java() {
        javaLock.hold("k", lease -> DONE).join();
    }

    /**
     * One Java blocking hold cycle.
     *
     * @return the function's value
     * @throws InterruptedException never: nothing interrupts the benchmark
     */
    @Benchmark
    public Object javaBlocking() throws InterruptedException {
        return javaLock.holdBlocking("k", lease -> null);
    }

    /** Kotlin hold cycles, {@link KotlinCycles#BATCH} an invocation. */
    @Benchmark
    @OperationsPerInvocation(KotlinCycles.BATCH)
    public void kotlin() {
        KotlinCycles.hold(kotlinLock, "k", KotlinCycles.BATCH);
    }

    /** The stores the benchmarks open. */
    static final class Stores {
        private Stores() {}

        static String serverUrl() {
            String url = System.getProperty("leasehold.bench.server");
            if (url == null) {
                throw new IllegalStateException("leasehold.bench.server is not set");
            }
            return url;
        }

        static Store java(String kind) {
            return kind.equals("embedded") ? Leasehold.memory() : Leasehold.connect(serverUrl()).join();
        }

        static dev.leasehold.Store kotlin(String kind) {
            return kind.equals("embedded") ? dev.leasehold.Leasehold.memory() : KotlinCycles.connect(serverUrl());
        }
    }
}
