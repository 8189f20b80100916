package dev.leasehold.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.leasehold.InvalidArgument;
import dev.leasehold.LeaseLost;
import dev.leasehold.WaitTimeout;
import dev.leasehold.support.ServerFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Many keys held at once through the Java API (LOCK-22), on the embedded store and a real server store process. */
class JavaHoldManyTest {
    /** One server store process for the class; each test uses locks of its own. */
    @RegisterExtension
    static final ServerFixture FIXTURE = new ServerFixture();

    /** What a test checks on two stores of one store, asking for `many` keys. */
    interface Check {
        void run(Store a, Store b, int many) throws Exception;
    }

    /**
     * Runs `check` on the embedded store (the same store twice) and on two
     * connections to the server store, where more keys than one HoldMany
     * frame carries (511) are asked for.
     */
    private static void onEveryStore(Check check) throws Exception {
        Store memory = Leasehold.memory();
        try {
            check.run(memory, memory, 300);
        } finally {
            memory.close().get(10, TimeUnit.SECONDS);
        }
        Store a = Leasehold.connect(FIXTURE.getServer().getUrl()).get(10, TimeUnit.SECONDS);
        Store b = Leasehold.connect(FIXTURE.getServer().getUrl()).get(10, TimeUnit.SECONDS);
        try {
            check.run(a, b, 1000);
        } finally {
            a.close().get(10, TimeUnit.SECONDS);
            b.close().get(10, TimeUnit.SECONDS);
        }
    }

    private static List<String> keys(int n) {
        List<String> keys = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            keys.add(String.format("shard-%04d", i));
        }
        return keys;
    }

    /** A lock of its own whose leases are revoked 1.2 s after their grant. */
    private static Lock revokedSoon(Store store) {
        return store.lock(
                lockName(), LockOptions.defaults().withTtl(Duration.ofSeconds(1)).withMaxHold(Duration.ofMillis(1200)));
    }

    private static String lockName() {
        return "java-many-" + UUID.randomUUID();
    }

    /** The failure of a future that completed exceptionally, unwrapped. */
    private static Throwable failure(CompletableFuture<?> future) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> future.get(15, TimeUnit.SECONDS));
        return e.getCause();
    }

    // LOCK-22: every key held at once, each its own lease and fence, in the
    // order asked; another holder takes each at once after.
    @Test
    void holdManyHoldsEveryKeyInOrder() throws Exception {
        onEveryStore(
                (a, b, many) -> {
                    String name = lockName();
                    Lock lock = a.lock(name);
                    Lock rival = b.lock(name);
                    List<String> keys = keys(many);
                    List<Long> fences =
                            lock.holdMany(
                                            keys,
                                            leases -> {
                                                List<String> held = new ArrayList<>();
                                                List<Long> got = new ArrayList<>();
                                                for (Lease lease : leases) {
                                                    held.add(lease.key());
                                                    got.add(lease.fence());
                                                }
                                                assertEquals(keys, held);
                                                return rival.tryHold(keys.get(0), other -> CompletableFuture.completedFuture("ran"))
                                                        .thenApply(
                                                                answer -> {
                                                                    assertEquals(Attempt.refused(), answer);
                                                                    return got;
                                                                });
                                            })
                                    .get(30, TimeUnit.SECONDS);
                    Set<Long> distinct = new HashSet<>(fences);
                    assertEquals(fences.size(), distinct.size(), "every lease has a fence of its own");
                    assertTrue(fences.stream().allMatch(f -> f > 0));
                    for (String key : keys) {
                        assertEquals(
                                Attempt.of(key),
                                rival.tryHold(key, lease -> CompletableFuture.completedFuture(key)).get(10, TimeUnit.SECONDS));
                    }
                });
    }

    // LOCK-22: all or none, and a key named twice. One key held elsewhere:
    // a short wait fails WaitTimeout, the function is not called, and the
    // other keys are free right after; a repeated key fails InvalidArgument.
    @Test
    void holdManyIsAllOrNone() throws Exception {
        onEveryStore(
                (a, b, many) -> {
                    String name = lockName();
                    Lock lock = a.lock(name);
                    Lock rival = b.lock(name);
                    List<String> keys = keys(many);
                    String blocked = keys.get(many / 2);
                    CompletableFuture<Void> release = new CompletableFuture<>();
                    CompletableFuture<Void> held = new CompletableFuture<>();
                    CompletableFuture<Void> holder =
                            rival.hold(
                                    blocked,
                                    lease -> {
                                        held.complete(null);
                                        return release;
                                    });
                    held.get(10, TimeUnit.SECONDS);
                    AtomicBoolean called = new AtomicBoolean();
                    CompletableFuture<Object> refused =
                            lock.holdMany(
                                    keys,
                                    Duration.ofMillis(200),
                                    leases -> {
                                        called.set(true);
                                        return CompletableFuture.completedFuture(null);
                                    });
                    assertInstanceOf(WaitTimeout.class, failure(refused));
                    assertTrue(!called.get(), "the function was called without every key");
                    List<String> others = new ArrayList<>(keys);
                    others.remove(blocked);
                    rival.holdMany(others, Duration.ofSeconds(5), leases -> CompletableFuture.completedFuture(null))
                            .get(10, TimeUnit.SECONDS);
                    release.complete(null);
                    holder.get(10, TimeUnit.SECONDS);
                    assertInstanceOf(
                            InvalidArgument.class,
                            failure(lock.holdMany(List.of("s1", "s2", "s1"), leases -> CompletableFuture.completedFuture(null))));
                });
    }

    // LOCK-22, LOCK-09, LOCK-10: leases revoked at their maxHold cancel the
    // function's future, and holdMany's future fails LeaseLost.
    @Test
    void aLostLeaseCancelsTheFunctionsFuture() throws Exception {
        onEveryStore(
                (a, b, many) -> {
                    Lock lock = revokedSoon(a);
                    CompletableFuture<String> work = new CompletableFuture<>();
                    Throwable lost = failure(lock.holdMany(keys(5), leases -> work));
                    assertInstanceOf(LeaseLost.class, lost);
                    assertEquals("revoked", ((LeaseLost) lost).getLossReason());
                    assertTrue(work.isCancelled(), "the loss cancelled the function's future");
                });
    }

    // LOCK-22, LOCK-09, LOCK-10: holdManyBlocking runs the function on the
    // calling thread with the leases in order and returns its value; the
    // loss of the leases (revoked at their maxHold) interrupts it, and
    // holdManyBlocking throws LeaseLost with the function's own failure as
    // its cause, the thread's interrupt cleared.
    @Test
    void holdManyBlockingRunsOnTheCallingThreadAndALossInterruptsIt() throws Exception {
        onEveryStore(
                (a, b, many) -> {
                    Lock lock = revokedSoon(a);
                    Thread caller = Thread.currentThread();
                    List<String> keys = keys(many);
                    List<String> held =
                            lock.holdManyBlocking(
                                    keys,
                                    leases -> {
                                        assertSame(caller, Thread.currentThread());
                                        return leases.stream().map(Lease::key).toList();
                                    });
                    assertEquals(keys, held);
                    long started = System.nanoTime();
                    LeaseLost lost =
                            assertThrows(
                                    LeaseLost.class,
                                    () ->
                                            lock.holdManyBlocking(
                                                    keys(5), leases -> Interrupted.sleepUntilInterrupted()));
                    assertEquals("revoked", lost.getLossReason());
                    Interrupted.checkCutShort(started, lost);
                });
    }

    // LOCK-22, LOCK-18: cancelling holdMany's future while it waits in line
    // for one key leaves every line: once that key's holder ends, nobody is
    // granted it, and the keys granted meanwhile are let go.
    @Test
    void cancellingAWaitingHoldManyLeavesEveryLine() throws Exception {
        onEveryStore(
                (a, b, many) -> {
                    String name = lockName();
                    Lock lock = a.lock(name);
                    Lock rival = b.lock(name);
                    List<String> keys = keys(many);
                    CompletableFuture<Void> release = new CompletableFuture<>();
                    CompletableFuture<Void> held = new CompletableFuture<>();
                    CompletableFuture<Void> holder =
                            rival.hold(
                                    keys.get(0),
                                    lease -> {
                                        held.complete(null);
                                        return release;
                                    });
                    held.get(10, TimeUnit.SECONDS);
                    AtomicBoolean called = new AtomicBoolean();
                    CompletableFuture<Object> waiting =
                            lock.holdMany(
                                    keys,
                                    leases -> {
                                        called.set(true);
                                        return CompletableFuture.completedFuture(null);
                                    });
                    Thread.sleep(200);
                    assertTrue(waiting.cancel(true));
                    assertThrows(CancellationException.class, waiting::join);
                    // The give-up reaches the server store before the key is let go.
                    Thread.sleep(200);
                    release.complete(null);
                    holder.get(10, TimeUnit.SECONDS);
                    assertEquals(
                            Attempt.of("free"),
                            rival.tryHold(keys.get(0), lease -> CompletableFuture.completedFuture("free")).get(10, TimeUnit.SECONDS));
                    rival.holdMany(keys, Duration.ofSeconds(5), leases -> CompletableFuture.completedFuture(null))
                            .get(10, TimeUnit.SECONDS);
                    assertTrue(!called.get(), "the cancelled function was called");
                });
    }

    // LOCK-22, LOCK-10: the function's own failure, after a loss, is the cause of LeaseLost.
    @Test
    void theFunctionsOwnFailureIsTheCauseOfTheLoss() throws Exception {
        Store store = Leasehold.memory();
        try {
            Lock lock = store.lock(lockName(), LockOptions.defaults().withTtl(Duration.ofSeconds(1)).withMaxHold(Duration.ofMillis(1200)));
            IllegalStateException own = new IllegalStateException("write failed");
            Throwable lost =
                    failure(
                            lock.holdMany(
                                    keys(3),
                                    leases -> {
                                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                                        while (leases.stream().noneMatch(Lease::lost) && System.nanoTime() < until) {
                                            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                                        }
                                        return CompletableFuture.failedFuture(own);
                                    }));
            assertInstanceOf(LeaseLost.class, lost);
            assertSame(own, lost.getCause());
        } finally {
            store.close().get(10, TimeUnit.SECONDS);
        }
    }
}
