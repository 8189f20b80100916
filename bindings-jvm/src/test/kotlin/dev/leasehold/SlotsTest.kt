package dev.leasehold

import dev.leasehold.slots.Owner
import dev.leasehold.support.ServerFixture
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.extension.RegisterExtension
import org.junit.jupiter.api.assertThrows
import java.util.UUID
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/** Slot leases through the Kotlin API on a real server store process. */
class SlotsTest {
    private val server get() = fixture.server

    /** One server store process for the class. */
    companion object {
        @JvmField
        @RegisterExtension
        val fixture = ServerFixture()
    }

    private fun namespace(what: String) = "jvm-$what-${UUID.randomUUID()}"

    // SLOT-01: the owner's own slot, then the preferred one, then its key's
    // last one, then the lowest free; none free: null, not a failure.
    @Test
    fun `SLOT-01 acquire takes the slots in the contract's order`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            val slots = store.slots(namespace("slot-01"), limit = 3, ttl = 10.seconds, offset = 100)
            val a = Owner("a", "1")
            val first = slots.acquire(a)!!
            assertEquals(0, first.slot())
            assertEquals(100, first.node())
            val again = slots.acquire(a, preferred = 2)!!
            assertEquals(first.slot() to first.fence(), again.slot() to again.fence(), "the owner's own slot, renewed, same fence")
            val b = slots.acquire(Owner("b", "1"), preferred = 2)!!
            assertEquals(2, b.slot())
            assertTrue(slots.release(b, 0))
            val c = slots.acquire(Owner("c", "1"))!!
            assertEquals(1, c.slot(), "the lowest free slot")
            val bAgain = slots.acquire(Owner("b", "2"))!!
            assertEquals(2, bAgain.slot(), "the slot its key held last")
            assertNull(slots.acquire(Owner("d", "1")), "exhausted")
            assertNotEquals(b.fence(), bAgain.fence())
            store.close()
        }

    // SLOT-05: a release passes max(floor, min(lastIssued, ceiling)) on as
    // the next holder's floor; a stale lease does not release.
    @Test
    fun `SLOT-05 a release sets the next holder's floor`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            val slots = store.slots(namespace("slot-05"), limit = 1, ttl = 10.seconds)
            val a = slots.acquire(Owner("a", "1"))!!
            val issued = a.floor() + 1234
            assertTrue(slots.release(a, issued))
            val b = slots.acquire(Owner("b", "1"))!!
            assertEquals(issued, b.floor())
            assertFalse(slots.release(a, issued + 5), "a's lease no longer matches")
            assertTrue(slots.release(b, Long.MAX_VALUE))
            val c = slots.acquire(Owner("c", "1"))!!
            assertEquals(b.ceiling(), c.floor(), "issued past the ceiling: the floor stops at it")
            assertNull(slots.renew(a))
            assertNotNull(slots.renew(c))
            assertThrows<InvalidArgument> { runBlocking { slots.release(c, -1) } }
            store.close()
        }

    // SLOT-05: a slot held with background renewal is released with the
    // largest timestamp its block recorded.
    @Test
    fun `SLOT-05 hold releases with the largest timestamp recorded`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            val slots = store.slots(namespace("slot-hold"), limit = 1, ttl = 3.seconds)
            val recorded =
                slots.hold(Leasehold.newOwner("ids")) { held ->
                    held.issued(held.floor + 10)
                    held.issued(held.floor + 20)
                    assertEquals(held.floor + 20, held.lastIssued)
                    held.lastIssued
                }
            val next = slots.acquire(Leasehold.newOwner("ids"))!!
            assertEquals(recorded, next.floor())
            assertNull(slots.hold(Leasehold.newOwner("other")) { error("ran with every slot held") })
            store.close()
        }

    // SLOT-07: a store that does not answer in time fails Timeout, which
    // isTimeout recognises, unlike failures that are outcomes.
    @Test
    fun `SLOT-07 a frozen store's timeout is recognisable`() =
        runBlocking<Unit> {
            val name = namespace("slot-07")
            val store = Leasehold.connect(server.url)
            val slots = store.slots(name, limit = 2, timeout = 300.milliseconds)
            assertNotNull(slots.acquire(Owner("m", "1")), "the first use fixes the limit, 2")
            val mismatch = runCatching { store.slots(name, limit = 3).acquire(Owner("n", "1")) }.exceptionOrNull()
            assertTrue(mismatch is NamespaceMismatch, "got $mismatch")
            server.freeze()
            val frozen =
                try {
                    runCatching { slots.acquire(Owner("a", "1")) }.exceptionOrNull()
                } finally {
                    server.thaw()
                }
            assertTrue(frozen is Timeout, "got $frozen")
            assertTrue(Leasehold.isTimeout(frozen))
            assertTrue(Leasehold.isTimeout(RuntimeException("wrapped", frozen)))
            assertFalse(Leasehold.isTimeout(mismatch))
            assertFalse(Leasehold.isTimeout(LeaseLost("lost")))
            store.close()
        }
}
