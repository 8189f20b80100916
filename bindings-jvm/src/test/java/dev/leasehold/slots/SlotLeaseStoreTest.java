package dev.leasehold.slots;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.leasehold.LeaseLost;
import dev.leasehold.NamespaceMismatch;
import dev.leasehold.Timeout;
import dev.leasehold.java.Leasehold;
import dev.leasehold.java.Store;
import dev.leasehold.support.ServerFixture;
import dev.leasehold.support.ServerProcess;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The SlotLeaseStore SPI, written against as a CosId-shaped service
 * would, on Leasehold's server store: synchronous calls, leases as values.
 */
class SlotLeaseStoreTest {
    private static final Duration TTL = Duration.ofSeconds(10);
    private static final Duration TOLERANCE = Duration.ofSeconds(2);

    /** A fresh server store process for each test. */
    @RegisterExtension
    final ServerFixture fixture = new ServerFixture(true);

    private ServerProcess server;
    private Store store;
    private SlotLeaseStore slots;
    private String namespace;

    @BeforeEach
    void start() throws Exception {
        server = fixture.getServer();
        store = Leasehold.connect(server.getUrl()).get(10, TimeUnit.SECONDS);
        slots = store.slotLeaseStore(Duration.ofMillis(500));
        namespace = "cosid-" + UUID.randomUUID();
    }

    @AfterEach
    void stop() throws Exception {
        slots.close();
        if (store != null) {
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    private SlotLease acquire(Owner owner, int limit, OptionalInt preferred) {
        AcquireResult result = slots.acquire(namespace, owner, limit, TTL, TOLERANCE, 10, preferred);
        return assertInstanceOf(AcquireResult.Leased.class, result, "a lease for " + owner).lease();
    }

    // SLOT-01: the owner's own slot, then the preferred one, then its key's
    // last one, then the lowest free; none free: EXHAUSTED, not a failure.
    @Test
    void slot01AcquireTakesSlotsInTheContractsOrder() {
        Owner a = new Owner("orders", "a-1");
        SlotLease first = acquire(a, 3, OptionalInt.empty());
        assertEquals(0, first.slot());
        assertEquals(10, first.node());
        assertEquals(TOLERANCE.toMillis(), first.ceiling() - first.expiresAt());
        assertEquals(first.fence(), acquire(a, 3, OptionalInt.of(1)).fence(), "the owner's own slot, same fence");
        SlotLease b = acquire(new Owner("billing", "b-1"), 3, OptionalInt.of(2));
        assertEquals(2, b.slot(), "the preferred slot");
        assertTrue(slots.release(b, b.floor()));
        assertEquals(2, acquire(new Owner("billing", "b-2"), 3, OptionalInt.empty()).slot(), "its key's last slot, not the lowest free");
        assertEquals(1, acquire(new Owner("c", "1"), 3, OptionalInt.empty()).slot(), "the lowest free slot");
        AcquireResult none = slots.acquire(namespace, new Owner("d", "1"), 3, TTL, TOLERANCE, 10, OptionalInt.empty());
        assertSame(AcquireResult.EXHAUSTED, none);
        assertEquals(Optional.empty(), none.optionalLease());
    }

    // SLOT-05: the next holder's floor is max(floor, min(lastIssued,
    // ceiling)); a stale lease neither renews nor releases.
    @Test
    void slot05ReleasePassesTheFloorOn() {
        SlotLease a = acquire(new Owner("a", "1"), 1, OptionalInt.empty());
        SlotLease renewed = slots.renew(a, TTL, TOLERANCE).orElseThrow();
        assertEquals(a.fence(), renewed.fence());
        long issued = a.floor() + 777;
        assertTrue(slots.release(renewed, issued));
        SlotLease b = acquire(new Owner("b", "1"), 1, OptionalInt.empty());
        assertEquals(issued, b.floor());
        assertFalse(slots.release(a, issued + 1), "a's lease no longer matches");
        assertEquals(Optional.empty(), slots.renew(a, TTL, TOLERANCE));
        SlotLease kept = new SlotLease(b.namespace(), b.owner(), b.slot(), b.slotOffset(), b.fence(), b.floor(), b.expiresAt(), b.ceiling());
        SlotLease keptRenewed = slots.renew(kept, TTL, TOLERANCE).orElseThrow(() -> new AssertionError("a lease kept as a value renews"));
        assertTrue(slots.release(kept, Long.MAX_VALUE));
        assertEquals(keptRenewed.ceiling(), acquire(new Owner("c", "1"), 1, OptionalInt.empty()).floor(), "the floor stops at the ceiling");
    }

    // SLOT-02: a renewal's tolerance is the namespace's: another one is
    // refused NamespaceMismatchException (the store's NamespaceMismatch as
    // its cause), as an acquire with it is, through any SPI of the store.
    @Test
    void slot02ARenewalWithAnotherToleranceIsRefused() {
        Owner a = new Owner("orders", "a-1");
        SlotLease lease = acquire(a, 3, OptionalInt.empty());
        assertTrue(slots.renew(lease, TTL, TOLERANCE).isPresent());
        Duration other = TOLERANCE.plusSeconds(1);
        NamespaceMismatchException refused = assertThrows(NamespaceMismatchException.class, () -> slots.renew(lease, TTL, other));
        assertInstanceOf(NamespaceMismatch.class, refused.getCause());
        assertThrows(NamespaceMismatchException.class, () -> slots.acquire(namespace, a, 3, TTL, other, 10, OptionalInt.empty()));
        SlotLeaseStore second = store.slotLeaseStore(Duration.ofMillis(500));
        assertThrows(NamespaceMismatchException.class, () -> second.renew(lease, TTL, other));
        assertTrue(second.renew(lease, TTL, TOLERANCE).isPresent());
    }

    // SLOT-02, SLOT-07: a namespace first used otherwise throws
    // NamespaceMismatchException, not a timeout; a frozen store's
    // StoreTimeoutException is recognised by isTimeout.
    @Test
    void slot07TimeoutsAreRecognisedApartFromOutcomes() {
        assertEquals(0, acquire(new Owner("a", "1"), 2, OptionalInt.empty()).slot());
        NamespaceMismatchException mismatch =
                assertThrows(
                        NamespaceMismatchException.class,
                        () -> slots.acquire(namespace, new Owner("b", "1"), 3, TTL, TOLERANCE, 10, OptionalInt.empty()));
        assertFalse(StoreTimeoutException.isTimeout(mismatch));
        assertFalse(StoreTimeoutException.isTimeout(new LeaseLost("lost", null, null)));
        server.freeze();
        try {
            StoreTimeoutException timeout =
                    assertThrows(
                            StoreTimeoutException.class,
                            () -> slots.acquire(namespace, new Owner("c", "1"), 2, TTL, TOLERANCE, 10, OptionalInt.empty()));
            assertTrue(StoreTimeoutException.isTimeout(timeout));
            assertTrue(StoreTimeoutException.isTimeout(new RuntimeException("wrapped", timeout)));
            assertInstanceOf(Timeout.class, timeout.getCause());
            assertTrue(Leasehold.isTimeout(timeout));
        } finally {
            server.thaw();
        }
        assertEquals(1, acquire(new Owner("c", "1"), 2, OptionalInt.empty()).slot(), "repeating the call is safe");
    }
}
