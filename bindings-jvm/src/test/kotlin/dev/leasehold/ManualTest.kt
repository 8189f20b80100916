package dev.leasehold

import dev.leasehold.support.ServerFixture
import dev.leasehold.support.within
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.extension.RegisterExtension
import org.junit.jupiter.api.assertThrows
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/** Manual leases through the Kotlin API on a real server store process. */
class ManualTest {
    private val server get() = fixture.server

    /** One server store process for the class. */
    companion object {
        @JvmField
        @RegisterExtension
        val fixture = ServerFixture()
    }

    // MANUAL-01: tryAcquire answers at once: a lease, or null when held.
    @Test
    fun `MANUAL-01 tryAcquire answers a lease or null at once`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            val lease = checkNotNull(store.tryAcquire("jvm-manual-01", 10.seconds))
            assertEquals("jvm-manual-01", lease.name)
            assertNull(store.tryAcquire("jvm-manual-01", 10.seconds))
            lease.release()
            checkNotNull(store.tryAcquire("jvm-manual-01", 10.seconds)).release()
            store.close()
        }

    // MANUAL-02, MANUAL-07: acquire waits and is woken by the release; its
    // fence is larger; its wait bound fails WaitTimeout.
    @Test
    fun `MANUAL-02 acquire waits for the release`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            val first = store.tryAcquire("jvm-manual-02", 10.seconds)!!
            assertThrows<WaitTimeout> { runBlocking { store.acquire("jvm-manual-02", 10.seconds, wait = 200.milliseconds) } }
            coroutineScope {
                val second = async { store.acquire("jvm-manual-02", 10.seconds) }
                delay(200.milliseconds)
                assertTrue(second.isActive)
                first.release()
                val lease = within("the woken acquire") { second.await() }
                assertTrue(lease.fence > first.fence)
                lease.release()
            }
            store.close()
        }

    // MANUAL-03: extend sets now + d; a lease that ran out fails Lost; a bad
    // d fails InvalidTtl.
    @Test
    fun `MANUAL-03 extend keeps the lease and fails once it ran out`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            val lease = store.tryAcquire("jvm-manual-03", 1.seconds)!!
            delay(600.milliseconds)
            lease.extend(2.seconds)
            delay(900.milliseconds)
            assertNull(store.tryAcquire("jvm-manual-03", 1.seconds), "extended: still held past the first ttl")
            assertThrows<InvalidTtl> { runBlocking { lease.extend((-1).seconds) } }
            delay(1500.milliseconds)
            assertThrows<LeaseLost> { runBlocking { lease.extend(2.seconds) } }
            store.close()
        }

    // MANUAL-04: release only by the owner: a lost lease's first release
    // fails Lost and leaves the newer holder alone; later ones succeed.
    @Test
    fun `MANUAL-04 release removes only the lease that owns the name`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            val old = store.tryAcquire("jvm-manual-04", 1.seconds)!!
            delay(1300.milliseconds)
            val newer = store.tryAcquire("jvm-manual-04", 10.seconds)!!
            assertThrows<LeaseLost> { runBlocking { old.release() } }
            old.release()
            assertNull(store.tryAcquire("jvm-manual-04", 10.seconds), "the newer holder keeps the name")
            newer.release()
            newer.release()
            store.close()
        }

    // MANUAL-05: empty names fail EmptyName, bad durations InvalidTtl, and
    // acquisition is not reentrant.
    @Test
    fun `MANUAL-05 bad input fails with its code and acquiring is not reentrant`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            assertThrows<EmptyName> { runBlocking { store.tryAcquire("", 10.seconds) } }
            assertThrows<InvalidTtl> { runBlocking { store.tryAcquire("x", 10.milliseconds) } }
            assertThrows<InvalidTtl> { runBlocking { store.acquire("x", 10.seconds, wait = (-5).seconds) } }
            val lease = store.tryAcquire("jvm-manual-05", 10.seconds)!!
            assertNull(store.tryAcquire("jvm-manual-05", 10.seconds), "a second acquire by the same caller contends")
            lease.release()
            store.close()
        }

    // MANUAL-06: one lease used from many coroutines at once.
    @Test
    fun `MANUAL-06 one lease is safe to use from many coroutines`() =
        runBlocking<Unit> {
            val store = Leasehold.connect(server.url)
            val lease = store.tryAcquire("jvm-manual-06", 10.seconds)!!
            coroutineScope { (1..16).map { async { lease.extend(5.seconds) } }.awaitAll() }
            coroutineScope { (1..8).map { async { runCatching { lease.release() } } }.awaitAll() }.forEach {
                assertTrue(it.isSuccess, "every release of a released lease succeeds: $it")
            }
            assertNotNull(store.tryAcquire("jvm-manual-06", 10.seconds))
            store.close()
        }
}
