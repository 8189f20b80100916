package dev.leasehold.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.leasehold.Closed;
import dev.leasehold.EmptyName;
import dev.leasehold.InvalidTtl;
import dev.leasehold.LeaseLost;
import dev.leasehold.LeaseholdException;
import dev.leasehold.NotReady;
import dev.leasehold.support.ServerFixture;
import dev.leasehold.support.ServerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The Java API: futures over the same core, on a real server store process and the embedded store. */
class JavaHoldTest {
    /** A fresh server store process for each test. */
    @RegisterExtension
    final ServerFixture fixture = new ServerFixture(true);

    private ServerProcess server;

    @BeforeEach
    void serverOfTheTest() {
        server = fixture.getServer();
    }

    /** The failure of a future that completed exceptionally, unwrapped. */
    private static Throwable failure(CompletableFuture<?> future) {
        java.util.concurrent.ExecutionException e =
                assertThrows(java.util.concurrent.ExecutionException.class, () -> future.get(15, TimeUnit.SECONDS));
        return e.getCause();
    }

    // LOCK-02, LOCK-11, LOCK-17: hold runs the function's future under the
    // key, tryHold answers Refused on a held key and Ran (null included)
    // when it ran, and the fence is a long.
    @Test
    void holdRunsTheFunctionsFutureAndTryHoldAnswersEmpty() throws Exception {
        Store store = Leasehold.connect(server.getUrl()).get(10, TimeUnit.SECONDS);
        try {
            Lock summaries = store.lock("java-summaries", Duration.ofSeconds(30));
            long fence =
                    summaries
                            .hold(
                                    "chat-1",
                                    lease ->
                                            summaries
                                                    .tryHold("chat-1", other -> CompletableFuture.completedFuture("ran"))
                                                    .thenApply(
                                                            answer -> {
                                                                assertEquals(Attempt.refused(), answer);
                                                                return lease.fence();
                                                            }))
                            .get(10, TimeUnit.SECONDS);
            assertTrue(fence > 0);
            Attempt<Long> next = summaries.tryHold("chat-1", lease -> CompletableFuture.completedFuture(lease.fence())).get(10, TimeUnit.SECONDS);
            assertTrue(next instanceof Attempt.Ran<Long> ran && ran.value() > fence, "next fence " + next + " after " + fence);
            // A function whose future completes with null ran: not the answer of a held key.
            assertEquals(Attempt.of(null), summaries.tryHold("chat-1", lease -> CompletableFuture.completedFuture(null)).get(10, TimeUnit.SECONDS));
        } finally {
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    // LOCK-09, LOCK-10: a lost lease cancels the function's future and the
    // lease's loss future completes; hold's future fails LeaseLost.
    @Test
    void aLostLeaseCancelsTheFunctionsFuture() throws Exception {
        Store store = Leasehold.connect(server.getUrl()).get(10, TimeUnit.SECONDS);
        try {
            Lock lock = store.lock("java-lock-09", Duration.ofSeconds(2));
            CompletableFuture<String> work = new CompletableFuture<>();
            List<CompletableFuture<String>> losses = Collections.synchronizedList(new ArrayList<>());
            CompletableFuture<String> held =
                    lock.hold(
                            "k",
                            lease -> {
                                losses.add(lease.lostSignal());
                                server.freeze();
                                return work;
                            });
            Throwable lost = failure(held);
            assertInstanceOf(LeaseLost.class, lost);
            assertEquals("Lost", ((LeaseholdException) lost).code());
            assertTrue(work.isCancelled(), "the loss cancelled the function's future");
            assertTrue(Set.of("expired", "unknown").contains(losses.get(0).get(1, TimeUnit.SECONDS)));
        } finally {
            server.thaw();
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    // LOCK-09, LOCK-10, LOCK-17: holdBlocking runs the function on the
    // calling thread and returns its value; tryHoldBlocking is Refused on a
    // held key; a loss interrupts the function, holdBlocking throws
    // LeaseLost with the function's own failure as its cause, and leaves
    // the thread's interrupt cleared.
    @Test
    void holdBlockingRunsOnTheCallingThreadAndALossInterruptsIt() throws Exception {
        Store store = Leasehold.connect(server.getUrl()).get(10, TimeUnit.SECONDS);
        try {
            Lock lock = store.lock("java-blocking", Duration.ofSeconds(2));
            Thread caller = Thread.currentThread();
            long fence =
                    lock.holdBlocking(
                            "k",
                            lease -> {
                                assertSame(caller, Thread.currentThread());
                                try {
                                    assertEquals(Attempt.refused(), lock.tryHoldBlocking("k", other -> "ran"));
                                } catch (InterruptedException e) {
                                    throw new IllegalStateException(e);
                                }
                                return lease.fence();
                            });
            assertTrue(fence > 0);
            assertEquals(Attempt.of("free"), lock.tryHoldBlocking("k", lease -> "free"));
            long started = System.nanoTime();
            LeaseLost lost =
                    assertThrows(
                            LeaseLost.class,
                            () ->
                                    lock.holdBlocking(
                                            "k",
                                            lease -> {
                                                server.freeze();
                                                return Interrupted.sleepUntilInterrupted();
                                            }));
            Interrupted.checkCutShort(started, lost);
        } finally {
            server.thaw();
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    // LOCK-18: interrupting a thread that waits in holdBlocking leaves the
    // line: it throws InterruptedException, its function never runs, and the
    // next waiter is granted when the holder ends.
    @Test
    void interruptingAWaitingHoldBlockingLeavesTheLine() throws Exception {
        Store store = Leasehold.connect(server.getUrl()).get(10, TimeUnit.SECONDS);
        try {
            Lock lock = store.lock("java-blocking-18", Duration.ofSeconds(10));
            CompletableFuture<Void> release = new CompletableFuture<>();
            CompletableFuture<Void> first = lock.hold("k", lease -> release);
            Thread.sleep(200);
            List<String> ran = Collections.synchronizedList(new ArrayList<>());
            CompletableFuture<Throwable> waiter = new CompletableFuture<>();
            Thread b =
                    new Thread(
                            () -> {
                                try {
                                    lock.holdBlocking("k", lease -> ran.add("b"));
                                    waiter.complete(null);
                                } catch (Throwable t) {
                                    waiter.complete(t);
                                }
                            });
            b.start();
            Thread.sleep(200);
            CompletableFuture<String> c = lock.hold("k", lease -> CompletableFuture.completedFuture(ran.add("c") ? "c" : ""));
            Thread.sleep(200);
            b.interrupt();
            assertInstanceOf(InterruptedException.class, waiter.get(10, TimeUnit.SECONDS));
            release.complete(null);
            first.get(10, TimeUnit.SECONDS);
            assertEquals("c", c.get(10, TimeUnit.SECONDS));
            assertEquals(List.of("c"), ran);
        } finally {
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    // LOCK-10: a function that fails after the loss (its stage already
    // failed when it returns) has its own failure kept as the cause of LeaseLost.
    @Test
    void theFunctionsOwnFailureIsTheCauseOfTheLoss() throws Exception {
        Store store = Leasehold.connect(server.getUrl()).get(10, TimeUnit.SECONDS);
        try {
            Lock lock = store.lock("java-lock-10", Duration.ofSeconds(2));
            IllegalStateException own = new IllegalStateException("write failed");
            CompletableFuture<String> held =
                    lock.hold(
                            "k",
                            lease -> {
                                server.freeze();
                                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                                while (!lease.lost() && System.nanoTime() < until) {
                                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                                }
                                assertTrue(lease.lost(), "the lease was not lost within 10 s");
                                return CompletableFuture.failedFuture(own);
                            });
            Throwable lost = failure(held);
            assertInstanceOf(LeaseLost.class, lost);
            assertSame(own, lost.getCause());
        } finally {
            server.thaw();
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    // LOCK-18: cancelling a waiting hold's future leaves the line: the next
    // waiter is granted when the holder ends, and the cancelled one never runs.
    @Test
    void cancellingAWaitingHoldLeavesTheLine() throws Exception {
        Store store = Leasehold.connect(server.getUrl()).get(10, TimeUnit.SECONDS);
        try {
            Lock lock = store.lock("java-lock-18", Duration.ofSeconds(10));
            CompletableFuture<Void> release = new CompletableFuture<>();
            List<String> ran = Collections.synchronizedList(new ArrayList<>());
            CompletableFuture<Void> first = lock.hold("k", lease -> release);
            Thread.sleep(200);
            CompletableFuture<String> b = lock.hold("k", lease -> CompletableFuture.completedFuture(ran.add("b") ? "b" : ""));
            Thread.sleep(150);
            CompletableFuture<String> c = lock.hold("k", lease -> CompletableFuture.completedFuture(ran.add("c") ? "c" : ""));
            Thread.sleep(150);
            assertTrue(b.cancel(true));
            assertThrows(CancellationException.class, b::join);
            Thread.sleep(200);
            release.complete(null);
            first.get(10, TimeUnit.SECONDS);
            assertEquals("c", c.get(10, TimeUnit.SECONDS));
            assertEquals(List.of("c"), ran);
            assertEquals(Attempt.of("free"), lock.tryHold("k", lease -> CompletableFuture.completedFuture("free")).get(10, TimeUnit.SECONDS));
        } finally {
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    // MANUAL-01, MANUAL-03, MANUAL-04: manual leases through futures.
    @Test
    void manualLeasesThroughFutures() throws Exception {
        Store store = Leasehold.connect(server.getUrl()).get(10, TimeUnit.SECONDS);
        try {
            ManualLease lease = store.tryAcquire("java-batch", Duration.ofSeconds(10)).get(10, TimeUnit.SECONDS).orElseThrow();
            assertEquals("java-batch", lease.name());
            assertEquals(Optional.empty(), store.tryAcquire("java-batch", Duration.ofSeconds(10)).get(10, TimeUnit.SECONDS));
            lease.extend(Duration.ofSeconds(20)).get(10, TimeUnit.SECONDS);
            assertInstanceOf(InvalidTtl.class, failure(lease.extend(Duration.ofSeconds(-1))));
            lease.release().get(10, TimeUnit.SECONDS);
            ManualLease next = store.acquire("java-batch", Duration.ofSeconds(10), Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
            assertTrue(next.fence() > lease.fence());
            next.release().get(10, TimeUnit.SECONDS);
        } finally {
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    // IDGEN-01, IDGEN-04: IDs through Java: unique and increasing; NotReady
    // when every slot is held.
    @Test
    void idsThroughJava() throws Exception {
        Store store = Leasehold.memory();
        IdGenerator ids = store.ids("java-ids", IdsOptions.defaults().withLimit(1)).get(10, TimeUnit.SECONDS);
        long first = ids.nextNow();
        long[] more = ids.take(1000).get(10, TimeUnit.SECONDS);
        assertTrue(more[0] > first);
        for (int i = 1; i < more.length; i++) {
            assertTrue(more[i] > more[i - 1]);
        }
        assertEquals(ids.node(), ids.layout().parts(first).getNode());
        assertInstanceOf(NotReady.class, failure(store.ids("java-ids", IdsOptions.defaults().withLimit(1))));
        ids.close().get(10, TimeUnit.SECONDS);
        store.close().get(10, TimeUnit.SECONDS);
    }

    // ERR-01, ERR-03: unchecked exceptions with their codes, from Java.
    @Test
    void failuresAreUncheckedWithTheirCodes() throws Exception {
        Store store = Leasehold.memory();
        EmptyName empty = assertThrows(EmptyName.class, () -> store.lock(""));
        assertEquals("EmptyName", empty.code());
        assertThrows(InvalidTtl.class, () -> store.lock("l", Duration.ofMillis(10)));
        assertInstanceOf(EmptyName.class, failure(store.lock("l").hold("", lease -> CompletableFuture.completedFuture(1))));
        Lock lock = store.lock("l");
        store.close().get(10, TimeUnit.SECONDS);
        assertInstanceOf(Closed.class, failure(lock.tryHold("k", lease -> CompletableFuture.completedFuture(1))));
    }
}
