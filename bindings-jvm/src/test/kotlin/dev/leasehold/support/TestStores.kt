package dev.leasehold.support

import dev.leasehold.Store
import dev.leasehold.native
import dev.leasehold.uniffi.NativeVirtualClock
import dev.leasehold.uniffi.memoryWith
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.nanoseconds
import dev.leasehold.uniffi.parseDuration as nativeParseDuration

/**
 * A virtual clock of the native library's test hooks: it stands still until
 * [advance] moves it.
 */
class VirtualClock {
    internal val native = NativeVirtualClock()

    /** Moves the clock by [by], one sleeper's deadline at a time, letting what each step woke run. */
    suspend fun advance(by: Duration) =
        withContext(Dispatchers.IO) { native.advance(by.inWholeNanoseconds, 2.milliseconds.inWholeNanoseconds) }
}

/** Embedded stores for the tests. */
object TestStores {
    /**
     * An embedded store on [clock] (else the monotonic clock): [renewal] makes
     * its leases run out unless renewed, as on a server store; `push = false`
     * makes waiting poll.
     */
    fun memory(
        clock: VirtualClock? = null,
        renewal: Boolean = false,
        push: Boolean = true,
    ): Store = Store(memoryWith(clock?.native, renewal, push))

    /** A duration as the bindings take strings (`"30s"`, `"250ms"`), by the core's parser. */
    fun parseDuration(text: String): Duration = native { nativeParseDuration(text) }.nanoseconds
}
