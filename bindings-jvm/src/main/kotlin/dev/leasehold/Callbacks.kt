package dev.leasehold

import com.sun.jna.CallbackThreadInitializer
import com.sun.jna.Native
import dev.leasehold.uniffi.uniffiRustFutureContinuationCallbackImpl

/**
 * How the native library's threads call into the JVM: a call that waited
 * completes when a thread of the core's runtime calls uniffi's continuation
 * callback. JNA attaches such a thread to the JVM for the call and detaches
 * it after, by default, which costs tens of microseconds every time; these
 * threads live as long as the process, so they stay attached (as daemons,
 * named `leasehold`).
 */
internal object Callbacks {
    init {
        Native.setCallbackThreadInitializer(
            uniffiRustFutureContinuationCallbackImpl,
            CallbackThreadInitializer(true, false, "leasehold"),
        )
    }

    /** Makes sure the initializer is set (the first use of the object sets it). */
    fun ready() = Unit
}
