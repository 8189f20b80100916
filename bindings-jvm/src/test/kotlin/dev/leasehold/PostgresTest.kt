package dev.leasehold

import dev.leasehold.support.checkRemoteStore
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.UUID

/**
 * The PostgreSQL store through the Kotlin API (PG-01), on the PostgreSQL
 * `make postgres` runs ($LEASEHOLD_POSTGRES_URL, which make jvm-test
 * sets), each test on a schema of its own.
 */
class PostgresTest {
    private fun storeUrl(): String {
        val base =
            System.getenv("LEASEHOLD_POSTGRES_URL")?.takeIf { it.isNotEmpty() }
                ?: error("LEASEHOLD_POSTGRES_URL is not set: make postgres starts the database, make jvm-test sets it")
        val schema = "pg01_jvm_" + UUID.randomUUID().toString().replace("-", "").take(16)
        return base + (if ('?' in base) "&" else "?") + "schema=$schema"
    }

    // PG-01: a postgres:// URL opens a store with the same lock, manual, slot and ID APIs.
    @Test
    fun `PG-01 connect(postgres) holds keys, manual leases, slots and IDs`() =
        runBlocking<Unit> {
            val url = storeUrl()
            val store = Leasehold.connect(url)
            val other = Leasehold.connect(url.replaceFirst("postgres://", "postgresql://"))
            checkRemoteStore(store, other)
            store.close()
            other.close()
        }

    // PG-01, ERR-01: a bad PostgreSQL URL fails InvalidArgument before anything
    // is sent, and an unreachable database fails Unavailable.
    @Test
    fun `PG-01 bad postgres URLs fail clearly`() {
        val badSchema =
            assertThrows<InvalidArgument> {
                runBlocking { Leasehold.connect("postgres://u@127.0.0.1/db?schema=Not-An-Identifier") }
            }
        assertTrue("schema" in badSchema.message!!, badSchema.message)
        val unknown =
            assertThrows<InvalidArgument> { runBlocking { Leasehold.connect("postgres://u@127.0.0.1/db?no_such_option=1") } }
        assertTrue("no_such_option" in unknown.message!!, unknown.message)
        assertThrows<Unavailable> { runBlocking { Leasehold.connect("postgres://u@127.0.0.1:1/db?connect_timeout=2") } }
    }
}
