package dev.leasehold

import dev.leasehold.slots.Owner
import dev.leasehold.uniffi.NativeConnectOptions
import kotlin.time.Duration
import dev.leasehold.uniffi.connect as nativeConnect
import dev.leasehold.uniffi.errorCodes as nativeErrorCodes
import dev.leasehold.uniffi.memory as nativeMemory
import dev.leasehold.uniffi.newOwner as nativeNewOwner

/**
 * Where Leasehold starts: a store, embedded in this process ([memory]) or
 * at a URL ([connect]).
 *
 * ```kotlin
 * val store = Leasehold.connect("leasehold://127.0.0.1:7450")   // or Leasehold.memory()
 * val summaries = store.lock("summaries", ttl = 30.seconds)
 * summaries.hold("chat-1") { lease -> saveSummary("chat-1", lease.fence) }
 * store.close()
 * ```
 */
object Leasehold {
    init {
        Natives.load()
        Callbacks.ready()
    }

    /** The embedded store, in this process (LOCK-19): its leases live as long as it does. */
    @JvmStatic
    fun memory(): Store = Store(native { nativeMemory() })

    /**
     * Connects to the store at [url]: the server store (`leasehold://host:port`,
     * or `leaseholds://` for TLS), etcd (`etcd://h1:2379,h2:2379/PREFIX`, or
     * `etcds://`; DIST-01) or PostgreSQL (`postgres://user@h1,h2/db`; PG-01).
     * [token] is the server's token for this client (LOCK-14); [user] and
     * [password] are etcd's or PostgreSQL's; PEM texts set up TLS.
     * [identity] is who this client is (WHO-01): recorded with every lease it
     * takes and shown wherever a holder is (`Lock.holder`, `leasehold ls`, the
     * live page); at most 256 bytes, by default `hostname:pid`.
     * Cancelling the calling coroutine stops waiting: a store that connects
     * later is closed at once.
     */
    suspend fun connect(
        url: String,
        token: String? = null,
        caPem: String? = null,
        user: String? = null,
        password: String? = null,
        clientCertPem: String? = null,
        clientKeyPem: String? = null,
        acceptOldEtcd: Boolean = false,
        connectTimeout: Duration? = null,
        identity: String? = null,
    ): Store {
        val options =
            NativeConnectOptions(
                token = token,
                caPem = caPem,
                user = user,
                password = password,
                clientCertPem = clientCertPem,
                clientKeyPem = clientKeyPem,
                acceptOldEtcd = acceptOldEtcd,
                connectTimeout = connectTimeout.toOptionalNanos(),
                identity = identity,
            )
        return Store(native { nativeConnect(url, options) })
    }

    /** An owner with key [key] and a fresh instance id, for slot leases (SLOT-01). */
    @JvmStatic
    fun newOwner(key: String): Owner = native { nativeNewOwner(key) }.let { Owner(it.key, it.instance) }

    /**
     * Whether [error] is a store timeout (SLOT-07): a [Timeout], or an error
     * whose cause chain holds one. Failures that are outcomes
     * ([NamespaceMismatch], [LeaseLost], …) are not.
     */
    @JvmStatic
    fun isTimeout(error: Throwable?): Boolean = generateSequence(error) { it.cause }.take(64).any { it is Timeout }

    /** Every ERR-01 code as the contracts write them, from the native library. */
    @JvmStatic
    val codes: List<String> get() = nativeErrorCodes()
}
