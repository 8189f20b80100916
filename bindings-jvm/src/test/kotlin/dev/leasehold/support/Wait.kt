package dev.leasehold.support

import kotlinx.coroutines.delay
import kotlinx.coroutines.withTimeout
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/** Waits until [condition] holds, checking every millisecond; fails after [bound] saying [what]. */
suspend fun eventually(
    what: String,
    bound: Duration = 5.seconds,
    condition: () -> Boolean,
) {
    val until = System.nanoTime() + bound.inWholeNanoseconds
    while (!condition()) {
        check(System.nanoTime() < until) { "$what did not happen within $bound" }
        delay(1.milliseconds)
    }
}

/** [block]'s value, failing after [bound] saying [what]. */
suspend fun <T> within(
    what: String,
    bound: Duration = 10.seconds,
    block: suspend () -> T,
): T =
    try {
        withTimeout(bound) { block() }
    } catch (e: kotlinx.coroutines.TimeoutCancellationException) {
        throw AssertionError("$what did not happen within $bound", e)
    }
