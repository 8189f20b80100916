package dev.leasehold.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.leasehold.slots.Owner;
import dev.leasehold.slots.SlotLease;
import dev.leasehold.support.ServerFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.OptionalInt;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Slot namespaces from Java (dev.leasehold.java.Slots) on a real server store process. */
class JavaSlotsTest {
    /** One server store process for the class. */
    @RegisterExtension
    static final ServerFixture FIXTURE = new ServerFixture();

    private static Slots slots(Store store, int limit) {
        return store.slots(
                "java-slots-" + UUID.randomUUID(),
                SlotsOptions.defaults().withLimit(limit).withTtl(Duration.ofSeconds(1)).withTolerance(Duration.ofSeconds(1)));
    }

    // SLOT-04: a slot held with hold is renewed in the background while the
    // function's future runs, past its 1 s ttl: never lost, its expiry moved
    // on, and the slot is released with the largest timestamp recorded
    // (SLOT-05): the next holder's floor.
    @Test
    void slot04AHeldSlotIsRenewedInTheBackground() throws Exception {
        Store store = Leasehold.connect(FIXTURE.getServer().getUrl()).get(10, TimeUnit.SECONDS);
        try {
            Slots slots = slots(store, 1);
            Owner owner = Leasehold.newOwner("orders");
            List<Long> expiries = Collections.synchronizedList(new ArrayList<>());
            Attempt<SlotLease> held =
                    slots.hold(
                                    owner,
                                    slot ->
                                            CompletableFuture.supplyAsync(
                                                    () -> {
                                                        for (int i = 0; i < 6; i++) {
                                                            expiries.add(slot.lease().expiresAt());
                                                            assertFalse(slot.lost(), "lost: " + slot.lossReason());
                                                            sleep(500);
                                                        }
                                                        slot.issued(slot.floor() + 1_000);
                                                        return slot.lease();
                                                    }))
                            .get(20, TimeUnit.SECONDS);
            SlotLease lease = assertInstanceOf(Attempt.Ran.class, held).value() instanceof SlotLease l ? l : null;
            assertTrue(lease != null && lease.owner().equals(owner), "the lease " + lease);
            assertTrue(expiries.get(expiries.size() - 1) >= expiries.get(0) + 2_000, "expiries " + expiries);
            SlotLease next = slots.acquire(Leasehold.newOwner("orders")).get(10, TimeUnit.SECONDS).orElseThrow();
            assertEquals(lease.slot(), next.slot());
            assertTrue(next.floor() >= lease.floor() + 1_000, "floor " + next.floor() + " after " + lease.floor());
        } finally {
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    // SLOT-01: with every slot held, hold is Refused and calls nothing; a
    // function whose future completes with null ran (Ran(null)).
    @Test
    void slot01HoldIsRefusedWhenEverySlotIsHeld() throws Exception {
        Store store = Leasehold.connect(FIXTURE.getServer().getUrl()).get(10, TimeUnit.SECONDS);
        try {
            Slots slots = slots(store, 1);
            SlotLease taken = slots.acquire(Leasehold.newOwner("orders"), OptionalInt.of(0)).get(10, TimeUnit.SECONDS).orElseThrow();
            List<String> called = Collections.synchronizedList(new ArrayList<>());
            Attempt<String> refused =
                    slots.hold(Leasehold.newOwner("orders"), slot -> {
                                called.add("ran");
                                return CompletableFuture.completedFuture("ran");
                            })
                            .get(10, TimeUnit.SECONDS);
            assertEquals(Attempt.refused(), refused);
            assertEquals(List.of(), called);
            assertTrue(slots.release(taken, 0).get(10, TimeUnit.SECONDS));
            assertEquals(
                    Attempt.of(null),
                    slots.hold(Leasehold.newOwner("orders"), slot -> CompletableFuture.completedFuture(null)).get(10, TimeUnit.SECONDS));
        } finally {
            store.close().get(10, TimeUnit.SECONDS);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
