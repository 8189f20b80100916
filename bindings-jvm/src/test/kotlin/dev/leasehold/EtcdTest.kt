package dev.leasehold

import dev.leasehold.support.EtcdMember
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import java.util.UUID
import kotlin.time.Duration.Companion.seconds

/** The etcd store through the Kotlin API (DIST-01), on a real etcd member. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EtcdTest {
    private lateinit var etcd: EtcdMember

    @BeforeAll
    fun start() {
        etcd = EtcdMember.start()
    }

    @AfterAll
    fun stop() {
        if (::etcd.isInitialized) etcd.close()
    }

    // DIST-01: an etcd:// URL opens a store with the same lock, manual, slot and ID APIs.
    @Test
    fun `DIST-01 connect(etcd) holds keys, manual leases, slots and IDs`() =
        runBlocking<Unit> {
            val url = etcd.url("dist01-jvm-${UUID.randomUUID()}")
            val store = Leasehold.connect(url)
            val other = Leasehold.connect(url)
            val fences = mutableListOf<Long>()
            fun grew(fence: Long) {
                assertTrue(fence > 0 && (fences.isEmpty() || fence > fences.last()), "$fence after $fences")
                fences += fence
            }
            val lock = store.lock("summaries", ttl = 2.seconds)
            val rival = other.lock("summaries", ttl = 2.seconds)
            val ran =
                lock.hold("chat-1") { lease ->
                    grew(lease.fence)
                    assertNull(rival.tryHold("chat-1") { error("tryHold ran on a held key") })
                    "ran"
                }
            assertEquals("ran", ran)
            assertEquals("mine", rival.tryHold("chat-1") { lease -> grew(lease.fence).let { "mine" } })

            val manual = store.tryAcquire("batch", 2.seconds)!!
            grew(manual.fence)
            assertNull(other.tryAcquire("batch", 2.seconds))
            manual.release()

            val slots = store.slots("ids", limit = 2)
            val lease = slots.acquire(Leasehold.newOwner("svc"))!!
            assertTrue(slots.release(lease, lease.floor() + 1))
            val ids = other.ids("order-ids", limit = 4)
            val taken = ids.take(100)
            assertEquals(100, taken.toSet().size)
            ids.close()
            store.close()
            other.close()
        }
}
