package dev.leasehold

import dev.leasehold.support.ServerFixture
import dev.leasehold.support.within
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.extension.RegisterExtension
import org.junit.jupiter.api.assertThrows
import java.util.UUID
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/** The ID generator (IDGEN) through the Kotlin API, on a real server store process and the embedded store. */
class IdsTest {
    private val server get() = fixture.server

    /** One server store process for the class. */
    companion object {
        @JvmField
        @RegisterExtension
        val fixture = ServerFixture()
    }

    private fun namespace(what: String) = "jvm-$what-${UUID.randomUUID()}"

    private fun assertIncreasing(ids: LongArray) {
        for (i in 1 until ids.size) assertTrue(ids[i] > ids[i - 1], "IDGEN-03: ${ids[i]} after ${ids[i - 1]}")
    }

    // IDGEN-01: generators of one namespace, on two connections, never issue
    // the same ID; the slot's next holder issues above the one that closed.
    @Test
    fun `IDGEN-01 generators of a namespace never repeat an ID`() =
        runBlocking<Unit> {
            val name = namespace("idgen-01")
            val one = Leasehold.connect(server.url)
            val two = Leasehold.connect(server.url)
            val a = one.ids(name, limit = 2)
            val b = two.ids(name, limit = 2)
            assertNotEquals(a.node, b.node)
            val issued =
                coroutineScope {
                    listOf(a, b).map { ids -> async { (1..20).flatMap { ids.take(500).also(::assertIncreasing).toList() } } }.awaitAll()
                }.flatten()
            assertEquals(issued.size, issued.toSet().size, "no ID twice")
            for (id in issued) assertTrue(id > 0, "IDs are positive longs: $id")
            val aLast = issued.filter { a.layout.parts(it).node == a.node }.max()
            a.close()
            val c = one.ids(name, limit = 2)
            assertEquals(a.node, c.node, "the freed slot")
            val next = c.nextNow()
            assertTrue(next > aLast, "the slot's next holder issues above the one before: $next after $aLast")
            assertEquals(c.layout.parts(next).node, c.node)
            for (ids in listOf(b, c)) ids.close()
            one.close()
            two.close()
        }

    // IDGEN-04: no slot free, a tick's sequence used up (lead 0): nextNow
    // fails NotReady and next waits; the layout's time used up: Overflow.
    @Test
    fun `IDGEN-04 NotReady while nothing can be issued, Overflow when time is used up`() =
        runBlocking<Unit> {
            val store = Leasehold.memory()
            val name = namespace("idgen-04")
            val held = store.ids(name, limit = 1)
            assertThrows<NotReady> { runBlocking { store.ids(name, limit = 1) } }
            held.close()

            // Four IDs a second, none ahead of the clock.
            val slow = IdLayout.custom(31, 10, 2, tickMs = 1000)
            val ids = store.ids(namespace("idgen-04-slow"), layout = slow, maxLead = Duration.ZERO)
            val refused =
                (1..5).firstNotNullOfOrNull {
                    ids.takeNow(100)
                    runCatching { ids.nextNow() }.exceptionOrNull()
                }
            assertTrue(refused is NotReady, "a used-up tick answers NotReady, got $refused")
            // The next tick is at most a second away; 30 s only stops a next()
            // that never wakes (a hang), whatever a loaded machine makes of it.
            val waited = within("next() waiting for the next tick", 30.seconds) { ids.next() }
            assertEquals(ids.node, slow.parts(waited).node)
            ids.close()

            val spent = IdLayout.custom(1, 10, 12, epochMs = 0)
            val old = store.ids(namespace("idgen-04-spent"), layout = spent)
            assertThrows<Overflow> { old.nextNow() }
            assertThrows<Overflow> { runBlocking { old.next() } }
            old.close()
            store.close()
        }

    // IDGEN-02: a closed generator issues nothing; its lease passes its last tick on.
    @Test
    fun `IDGEN-02 a closed generator issues nothing`() =
        runBlocking<Unit> {
            val store = Leasehold.memory()
            val ids = store.ids(namespace("idgen-02"), layout = IdLayout.jsSafe())
            val id = ids.nextNow()
            assertTrue(id < (1L shl 53))
            assertEquals(ids.layout.parts(id).timestampMs, ids.lastIssued)
            ids.close()
            ids.close()
            assertThrows<LeaseLost> { ids.nextNow() }
            store.close()
        }
}
