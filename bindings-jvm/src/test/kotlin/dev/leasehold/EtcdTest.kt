package dev.leasehold

import dev.leasehold.support.EtcdMember
import dev.leasehold.support.checkRemoteStore
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import java.util.UUID

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
            checkRemoteStore(store, other)
            store.close()
            other.close()
        }
}
