package dev.leasehold.support

import dev.leasehold.Leasehold
import dev.leasehold.Store
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import kotlin.time.Duration.Companion.seconds

/**
 * What every remote store (etcd, PostgreSQL) does, run on two stores of one
 * (DIST-01, PG-01): a held key that the other store's tryHold finds held, a
 * manual lease, a slot and 100 IDs, with fences growing throughout.
 */
suspend fun checkRemoteStore(
    store: Store,
    other: Store,
) {
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
    grew(lease.fence)
    assertTrue(slots.release(lease, lease.floor() + 1))
    val ids = other.ids("order-ids", limit = 4)
    val taken = ids.take(100)
    assertEquals(taken.sorted().distinct(), taken.toList())
    ids.close()
}
