package dev.leasehold.java

import dev.leasehold.slots.Owner
import java.util.concurrent.CompletableFuture
import dev.leasehold.Leasehold as KotlinLeasehold

/**
 * Leasehold for Java: stores whose waiting calls answer
 * [CompletableFuture]s, with the Kotlin API's semantics. Failures are
 * unchecked [dev.leasehold.LeaseholdException]s with their stable
 * `code()`; a future fails with one (wrapped by `join()` in a
 * `CompletionException`, as every future's failure is).
 *
 * ```java
 * Store store = Leasehold.connect("leasehold://127.0.0.1:7450").join(); // or Leasehold.memory()
 * Lock summaries = store.lock("summaries", Duration.ofSeconds(30));
 * summaries.hold("chat-1", lease -> saveSummary("chat-1", lease.fence())).join();
 * store.close().join();
 * ```
 */
object Leasehold {
    /** The embedded store, in this process (LOCK-19). */
    @JvmStatic
    fun memory(): Store = Store(KotlinLeasehold.memory())

    /**
     * Connects to the store at [url] (`leasehold://`, `leaseholds://`,
     * `etcd://`, `etcds://`, `postgres://`); cancelling the future stops waiting, and a
     * store that connects later is closed.
     */
    @JvmStatic
    @JvmOverloads
    fun connect(
        url: String,
        options: ConnectOptions = ConnectOptions.defaults(),
    ): CompletableFuture<Store> =
        futureOf {
            Store(
                KotlinLeasehold.connect(
                    url,
                    token = options.token,
                    caPem = options.caPem,
                    user = options.user,
                    password = options.password,
                    clientCertPem = options.clientCertPem,
                    clientKeyPem = options.clientKeyPem,
                    acceptOldEtcd = options.acceptOldEtcd,
                    connectTimeout = options.connectTimeout.toOptionalKotlin(),
                    identity = options.identity,
                ),
            )
        }

    /** An owner with key [key] and a fresh instance id, for slot leases. */
    @JvmStatic
    fun newOwner(key: String): Owner = KotlinLeasehold.newOwner(key)

    /** Whether [error] is a store timeout, or was caused by one (SLOT-07). */
    @JvmStatic
    fun isTimeout(error: Throwable?): Boolean = KotlinLeasehold.isTimeout(error)
}
