package dev.leasehold

import dev.leasehold.slots.Owner
import dev.leasehold.support.TestStores
import dev.leasehold.uniffi.testingPanic
import dev.leasehold.uniffi.testingPanicAsync
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/** Errors through the Kotlin API: one class per stable code (ERR-01), and bad input that fails with a code, never a crash (ERR-03). */
class ErrorsTest {
    // ERR-01: every code the core has maps to a class of its own, named like the code.
    @Test
    fun `ERR-01 every code of the core has its own exception class`() {
        val codes = Leasehold.codes
        assertTrue(codes.size >= 16, "codes: $codes")
        val classes =
            codes.associateWith { code ->
                val e = exceptionOf(code, "m", null)
                assertEquals(code, e.code)
                assertEquals(code, e.code())
                assertEquals(if (code == "Lost") "LeaseLost" else code, e.javaClass.simpleName)
                e.javaClass
            }
        assertEquals(codes.size, classes.values.toSet().size, "one class per code")
        assertEquals(Internal::class.java, exceptionOf("NoSuchCode", "m", null).javaClass, "an unknown code is a bug")
    }

    // ERR-01: failures of real calls carry their codes.
    @Test
    fun `ERR-01 failures carry their stable codes`() =
        runBlocking<Unit> {
            val store = Leasehold.memory()
            assertEquals("EmptyName", assertThrows<EmptyName> { store.lock("") }.code)
            assertEquals("InvalidTtl", assertThrows<InvalidTtl> { store.lock("l", ttl = Duration.ZERO) }.code)
            assertEquals("InvalidArgument", assertThrows<InvalidArgument> { IdLayout.custom(40, 20, 10) }.code)
            store.close()
            val lock = store.lock("l")
            assertEquals("Closed", assertThrows<Closed> { runBlocking { lock.tryHold("k") { "ran" } } }.code)
        }

    // ERR-03: bad input from Kotlin fails with an ERR-01 code and the process goes on.
    @Test
    fun `ERR-03 bad input fails with a code and never crashes`() =
        runBlocking<Unit> {
            val store = Leasehold.memory()
            val huge = "x".repeat(2 shl 20)
            assertThrows<InvalidArgument> { store.lock(huge) }
            assertThrows<InvalidArgument> { runBlocking { store.lock("l").hold(huge) { error("ran") } } }
            assertThrows<EmptyName> { runBlocking { store.lock("l").hold("") { error("ran") } } }
            assertThrows<InvalidArgument> { store.lock("\uD800 a lone surrogate") }
            assertThrows<InvalidTtl> { runBlocking { store.lock("l").hold("k", wait = (-1).seconds) { error("ran") } } }
            assertThrows<InvalidTtl> { runBlocking { store.tryAcquire("m", Duration.INFINITE) } }
            assertThrows<InvalidArgument> { store.slots("s", limit = -1) }
            assertThrows<InvalidArgument> { store.slots("s", limit = 0) }
            assertThrows<EmptyName> { runBlocking { store.slots("s").acquire(Owner("", "1")) } }
            assertThrows<InvalidArgument> { runBlocking { store.ids("i").take(-5) } }
            assertThrows<InvalidArgument> { runBlocking { store.ids("j").takeNow(0) } }
            assertThrows<InvalidArgument> { IdLayout.custom(41, 10, 12, tickMs = 0) }
            for (name in listOf("two\nlines", "x".repeat(257))) {
                assertThrows<InvalidArgument> { runBlocking { Leasehold.connect("leasehold://127.0.0.1:1", identity = name) } }
            }
            val lease = store.tryAcquire("m", 10.seconds)!!
            lease.release()
            lease.release()
            store.close()
            store.close()
            assertThrows<Closed> { runBlocking { store.tryAcquire("m", 10.seconds) } }
            assertThrows<Closed> { runBlocking { store.ids("k") } }
        }

    // ERR-03: on the JNI path too, a panic is an Internal failure, at once
    // or in the task that answers later, and the process goes on; a key
    // that is not valid Unicode is InvalidArgument there as well.
    @Test
    fun `ERR-03 a panic on the JNI path becomes Internal`() =
        runBlocking<Unit> {
            assertEquals("Internal", assertThrows<Internal> { TestNatives.panicNow() }.code)
            val later = assertThrows<Internal> { runBlocking { awaitNative { TestNatives.panicLater(it) } } }
            assertTrue("panicLater" in (later.message ?: ""), later.message)
            val store = Leasehold.memory()
            assertTrue(store.lock("l").hold("k") { it.fence } > 0)
            assertThrows<InvalidArgument> { runBlocking { store.lock("l").hold("\uD800 a lone surrogate") { error("ran") } } }
            store.close()
        }

    // ERR-03: a panic of the native library is an Internal failure, in a
    // call that waits and in one that does not; the process goes on.
    @Test
    fun `ERR-03 a panic becomes Internal`() =
        runBlocking<Unit> {
            val sync = assertThrows<Internal> { native { testingPanic() } }
            assertEquals("Internal", sync.code)
            val async = assertThrows<Internal> { runBlocking { native { testingPanicAsync() } } }
            assertTrue("panic on purpose" in (async.message ?: ""), async.message)
            assertEquals(1, TestStores.memory().lock("after").tryHold("k") { 1 })
        }
}
