package dev.leasehold.bench

import dev.leasehold.IdGenerator
import dev.leasehold.IdLayout
import dev.leasehold.Leasehold
import dev.leasehold.Lock
import dev.leasehold.Store
import kotlinx.coroutines.runBlocking
import kotlin.time.Duration.Companion.seconds

/** The Kotlin API as the JMH benchmarks (in Java) call it. */
object KotlinCycles {
    /** Kotlin hold cycles a benchmark invocation (one `runBlocking` for all). */
    const val BATCH = 1000

    /** A lock of [store] with a 30 s ttl. */
    @JvmStatic
    fun lock(
        store: Store,
        name: String,
    ): Lock = store.lock(name, ttl = 30.seconds)

    /** A store connected to [url]. */
    @JvmStatic
    fun connect(url: String): Store = runBlocking { Leasehold.connect(url) }

    /** Closes [store]. */
    @JvmStatic
    fun close(store: Store) = runBlocking { store.close() }

    /** [n] cycles of `lock.hold(key) {}`. */
    @JvmStatic
    fun hold(
        lock: Lock,
        key: String,
        n: Int,
    ) = runBlocking { repeat(n) { lock.hold(key) {} } }

    /** A generator of namespace [name] on [layout] with [limit] slots. */
    @JvmStatic
    fun ids(
        store: Store,
        name: String,
        layout: IdLayout,
        limit: Int,
    ): IdGenerator = runBlocking { store.ids(name, layout = layout, limit = limit) }
}
