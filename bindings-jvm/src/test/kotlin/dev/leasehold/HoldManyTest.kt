package dev.leasehold

import dev.leasehold.support.ServerFixture
import dev.leasehold.support.within
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.extension.RegisterExtension
import org.junit.jupiter.api.assertThrows
import java.util.UUID
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/**
 * Many keys held at once through the Kotlin API (LOCK-22), each test on the
 * embedded store and on a real server store process.
 */
class HoldManyTest {
    companion object {
        @JvmField
        @RegisterExtension
        val fixture = ServerFixture()
    }

    /**
     * Runs [check] on the embedded store (the same store twice) and on two
     * connections to the server store, with the number of keys to ask for:
     * on the server store more than one `HoldMany` frame carries (511 keys).
     */
    private fun onEveryStore(check: suspend (a: Store, b: Store, many: Int) -> Unit) =
        runBlocking {
            val memory = Leasehold.memory()
            try {
                check(memory, memory, 300)
            } finally {
                memory.close()
            }
            val a = Leasehold.connect(fixture.server.url)
            val b = Leasehold.connect(fixture.server.url)
            try {
                check(a, b, 1000)
            } finally {
                a.close()
                b.close()
            }
        }

    /** A lock name of its own for each run, so that runs share no key. */
    private fun lockName() = "jvm-many-${UUID.randomUUID()}"

    private fun keys(n: Int) = List(n) { "shard-%04d".format(it) }

    // LOCK-22: every key held at once, each its own lease with its own
    // fence, in the order asked; another holder finds them held meanwhile,
    // and takes each at once after.
    @Test
    fun `LOCK-22 holdMany holds every key, each its own lease, in order`() =
        onEveryStore { a, b, many ->
            val name = lockName()
            val lock = a.lock(name)
            val rival = b.lock(name)
            val keys = keys(many)
            val fences =
                lock.holdMany(keys) { leases ->
                    assertEquals(keys, leases.map { it.key })
                    assertTrue(leases.all { !it.lost && it.lockName == name })
                    for (key in listOf(keys.first(), keys[many / 2], keys.last())) {
                        assertNull(rival.tryHold(key) { "ran" }, "tryHold of $key while held")
                    }
                    leases.map { it.fence }
                }
            assertTrue(fences.all { it > 0 })
            assertEquals(fences.size, fences.toSet().size, "every lease has a fence of its own")
            for (key in keys) assertEquals(key, rival.tryHold(key) { key }, "$key after holdMany")
            assertEquals(0, lock.holdMany(emptyList()) { it.size })
        }

    // LOCK-22: all or none. One key held elsewhere: a short wait fails
    // WaitTimeout, the block does not run, and the other keys are free right
    // after, long before a ttl could let them go.
    @Test
    fun `LOCK-22 holdMany is all or none`() =
        onEveryStore { a, b, many ->
            val name = lockName()
            val lock = a.lock(name)
            val rival = b.lock(name)
            val keys = keys(many)
            val blocked = keys[many / 2]
            val held = CompletableDeferred<Unit>()
            val release = CompletableDeferred<Unit>()
            coroutineScope {
                val holder = async { rival.hold(blocked) { held.complete(Unit).also { release.await() } } }
                held.await()
                assertThrows<WaitTimeout> {
                    runBlocking { lock.holdMany(keys, wait = 200.milliseconds) { error("the block ran without every key") } }
                }
                // Released at once: within half the default 10 s ttl (a lease
                // left to run out would hold its key the whole ttl), or the
                // hold fails WaitTimeout.
                rival.holdMany(keys - blocked, wait = 5.seconds) { }
                release.complete(Unit)
                holder.await()
            }
        }

    // LOCK-22, ERR-03: a key named twice fails InvalidArgument, an empty
    // one EmptyName, one that is not Unicode InvalidArgument; nothing is
    // held after any of them.
    @Test
    fun `LOCK-22 a key named twice fails InvalidArgument`() =
        onEveryStore { a, b, _ ->
            val name = lockName()
            val lock = a.lock(name)
            val rival = b.lock(name)
            assertThrows<InvalidArgument> {
                runBlocking { lock.holdMany(listOf("s1", "s2", "s1")) { error("the block ran") } }
            }
            assertThrows<EmptyName> {
                runBlocking { lock.holdMany(listOf("s1", "")) { error("the block ran") } }
            }
            assertThrows<InvalidArgument>("a lone surrogate is not a key") {
                runBlocking { lock.holdMany(listOf("s1", "\uD800")) { error("the block ran") } }
            }
            assertEquals("s1", rival.tryHold("s1") { "s1" })
            assertEquals("s2", rival.tryHold("s2") { "s2" })
        }

    // LOCK-22, LOCK-09, LOCK-10: the leases revoked at their maxHold while
    // the block waits: the block's coroutine is cancelled, and holdMany
    // throws LeaseLost with the block's own failure as its cause.
    @Test
    fun `LOCK-22 a lost lease cancels the block and holdMany throws LeaseLost`() =
        onEveryStore { a, _, _ ->
            val lock = a.lock(lockName(), ttl = 1.seconds, maxHold = 1200.milliseconds)
            val own = IllegalStateException("cleanup failed")
            var cancelledBy: Throwable? = null
            var held: List<Lease> = emptyList()
            val lost =
                assertThrows<LeaseLost> {
                    runBlocking<Unit> {
                        lock.holdMany(keys(5)) { leases ->
                            held = leases
                            try {
                                within("the loss reaching the block") { awaitCancellation() }
                            } catch (e: CancellationException) {
                                cancelledBy = e
                                throw own
                            }
                        }
                    }
                }
            assertInstanceOf(LostWhileHeld::class.java, cancelledBy)
            assertSame(own, lost.cause, "the block's own failure is the cause (LOCK-10)")
            assertEquals("revoked", lost.lossReason)
            assertTrue(held.any { it.lost }, "a lease tells its loss after the hold")
        }

    // LOCK-22, LOCK-18: cancelling the coroutine while holdMany waits in
    // line for one key leaves every line: once that key's holder ends,
    // nobody is granted it, and the keys granted meanwhile are let go.
    @Test
    fun `LOCK-22 a cancelled holdMany leaves every line`() =
        onEveryStore { a, b, many ->
            val name = lockName()
            val lock = a.lock(name)
            val rival = b.lock(name)
            val keys = keys(many)
            val held = CompletableDeferred<Unit>()
            val release = CompletableDeferred<Unit>()
            var ran = false
            coroutineScope {
                val holder = launch { rival.hold(keys.first()) { held.complete(Unit).also { release.await() } } }
                held.await()
                val waiting = launch { lock.holdMany(keys) { ran = true } }
                delay(200.milliseconds)
                waiting.cancel()
                waiting.join()
                // The give-up reaches the server store before the key is let go.
                delay(200.milliseconds)
                release.complete(Unit)
                holder.join()
            }
            assertFalse(ran, "the cancelled block ran")
            assertNotNull(rival.tryHold(keys.first()) { "free" }, "the key given up was granted on")
            rival.holdMany(keys, wait = 5.seconds) { }
        }
}
