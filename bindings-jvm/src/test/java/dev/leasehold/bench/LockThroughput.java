package dev.leasehold.bench;

import dev.leasehold.java.Leasehold;
import dev.leasehold.java.Lock;
import dev.leasehold.java.Store;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Lock and unlock cycles a second from Java, each thread on a key of its
 * own, for {@code make bench-jvm} (run at 1 and 16 threads): Leasehold's
 * server store ({@code lock.hold(key, fn).join()} and
 * {@code lock.holdBlocking(key, fn)}, one store for all
 * threads, as a service would have) against Redisson's {@code RLock}
 * ({@code lock(); unlock()}, its watchdog renewing as Leasehold renews) on
 * the Redis at {@code leasehold.bench.redis}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class LockThroughput {
    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

    /** The clients every thread shares. */
    @State(Scope.Benchmark)
    public static class Clients {
        Store leasehold;
        Lock lock;
        RedissonClient redisson;

        /** Connects both. */
        @Setup(Level.Trial)
        public void open() {
            leasehold = Leasehold.connect(HoldCycles.Stores.serverUrl()).join();
            lock = leasehold.lock("bench-threads", Duration.ofSeconds(30));
            Config config = new Config();
            config.useSingleServer().setAddress(System.getProperty("leasehold.bench.redis"));
            redisson = Redisson.create(config);
        }

        /** Closes both. */
        @TearDown(Level.Trial)
        public void close() {
            leasehold.close().join();
            redisson.shutdown();
        }
    }

    /** One thread's key. */
    @State(Scope.Thread)
    public static class Key {
        private static final AtomicInteger NEXT = new AtomicInteger();
        final String name = "k-" + NEXT.incrementAndGet();
        RLock redisson;

        /** Its Redisson lock. */
        @Setup(Level.Trial)
        public void open(Clients clients) {
            redisson = clients.redisson.getLock("bench-threads-" + name);
        }
    }

    /** One Leasehold cycle. */
    @Benchmark
    public void leasehold(Clients clients, Key key) {
        clients.lock.hold(key.name, lease -> DONE).join();
    }

    /**
     * One Leasehold cycle, blocking ({@code holdBlocking}).
     *
     * @param clients the clients
     * @param key this thread's key
     * @return the function's value
     * @throws InterruptedException never: nothing interrupts the benchmark
     */
    @Benchmark
    public Object leaseholdBlocking(Clients clients, Key key) throws InterruptedException {
        return clients.lock.holdBlocking(key.name, lease -> null);
    }

    /** One Redisson cycle. */
    @Benchmark
    public void redisson(Key key) {
        key.redisson.lock();
        key.redisson.unlock();
    }
}
