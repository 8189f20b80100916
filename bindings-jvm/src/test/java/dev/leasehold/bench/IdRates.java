package dev.leasehold.bench;

import dev.leasehold.IdLayout;
import dev.leasehold.java.IdGenerator;
import dev.leasehold.java.IdsOptions;
import dev.leasehold.java.Leasehold;
import dev.leasehold.java.Store;
import java.util.concurrent.TimeUnit;
import me.ahoo.cosid.snowflake.MillisecondSnowflakeId;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Time an ID, for {@code make bench-jvm}: Leasehold's {@code nextNow()}
 * and {@code take(4096)} from Java and Kotlin (the embedded store) against
 * CosId's {@code MillisecondSnowflakeId.generate()}, all on one layout of
 * 39 bits of milliseconds, 2 of node and 22 of sequence, wide enough that
 * neither reaches its cap of IDs a millisecond (4,194,304): what is timed
 * is the call, not the clock.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class IdRates {
    /** How many IDs a batch takes. */
    public static final int BATCH = 4096;

    private static final int TIME_BITS = 39;
    private static final int NODE_BITS = 2;
    private static final int SEQUENCE_BITS = 22;

    private Store store;
    private dev.leasehold.Store kotlinStore;
    private IdGenerator java;
    private dev.leasehold.IdGenerator kotlin;
    private MillisecondSnowflakeId cosid;

    /** Opens a generator through each API and CosId's. */
    @Setup(Level.Trial)
    public void open() {
        store = Leasehold.memory();
        IdLayout layout = IdLayout.custom(TIME_BITS, NODE_BITS, SEQUENCE_BITS);
        IdsOptions options = IdsOptions.defaults().withLayout(layout).withLimit(4);
        java = store.ids("bench", options).join();
        kotlinStore = dev.leasehold.Leasehold.memory();
        kotlin = KotlinCycles.ids(kotlinStore, "bench", layout, 4);
        cosid = new MillisecondSnowflakeId(layout.getEpochMs(), TIME_BITS, NODE_BITS, SEQUENCE_BITS, 3);
    }

    /** Closes them. */
    @TearDown(Level.Trial)
    public void close() {
        java.close().join();
        store.close().join();
        KotlinCycles.close(kotlinStore);
    }

    /** One ID from Java. */
    @Benchmark
    public long javaNextNow() {
        return java.nextNow();
    }

    /** One ID from Kotlin. */
    @Benchmark
    public long kotlinNextNow() {
        return kotlin.nextNow();
    }

    /** One ID from CosId. */
    @Benchmark
    public long cosidGenerate() {
        return cosid.generate();
    }

    /** A batch from Java ({@code take}, its future completed at once). */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long[] javaTake() {
        return java.take(BATCH).join();
    }

    /** A batch from Kotlin ({@code takeNow}). */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long[] kotlinTakeNow() {
        return kotlin.takeNow(BATCH);
    }

    /** As many from CosId, one call each (it has no batch call). */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long[] cosidGenerateBatch() {
        long[] ids = new long[BATCH];
        for (int i = 0; i < BATCH; i++) {
            ids[i] = cosid.generate();
        }
        return ids;
    }
}
