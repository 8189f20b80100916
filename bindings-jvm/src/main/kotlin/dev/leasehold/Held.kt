package dev.leasehold

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.async
import kotlinx.coroutines.launch
import kotlinx.coroutines.supervisorScope
import kotlinx.coroutines.withContext

/** What a block runs under: a held key or a held slot, as the native library holds it. */
internal interface Held {
    /** Whether it was lost (a deadline that came counts, before any keeper ran). */
    fun lost(): Boolean

    /** Completes with the loss reason once it is lost. */
    suspend fun lostSignal(): String

    /** Releases it: fails `Lost` if it was lost while held, `Closed` if it ended already. */
    suspend fun end()
}

/** The cancellation of a held block whose lease was lost. */
internal class LostWhileHeld(
    val reason: String,
) : CancellationException("the lease was lost ($reason)")

/**
 * Runs [block] while [held] is held, then releases it (LOCK-11), whatever
 * the block did:
 *
 * - a loss cancels the block's coroutine (LOCK-09), and the call then
 *   throws [LeaseLost] with the block's own failure, if it failed, as its
 *   cause (LOCK-10);
 * - a block that fails without a loss has its failure thrown after the
 *   release; one that returns has its value returned;
 * - the release runs on to its end even if the calling coroutine is
 *   cancelled.
 *
 * A held thing whose deadline came before the block could start runs
 * nothing: it is released and the call throws [LeaseLost].
 */
internal suspend fun <T> runHeld(
    held: Held,
    block: suspend () -> T,
): T {
    if (held.lost()) {
        withContext(NonCancellable) { native { held.end() } }
        throw LeaseLost("the lease was lost before the block could start")
    }
    // A scope cancelled from outside throws when it ends: caught, so that
    // the release below runs and the cancellation is thrown after it.
    val outcome =
        try {
            supervisorScope {
                val work = async { block() }
                val watch =
                    launch {
                        val reason = native { held.lostSignal() }
                        work.cancel(LostWhileHeld(reason))
                    }
                val outcome = runCatching { work.await() }
                watch.cancel()
                outcome
            }
        } catch (e: CancellationException) {
            Result.failure(e)
        }
    try {
        withContext(NonCancellable) { native { held.end() } }
    } catch (lost: LeaseLost) {
        val failure = outcome.exceptionOrNull()
        throw if (failure == null || failure is CancellationException) {
            lost
        } else {
            LeaseLost(lost.message ?: "the lease was lost", lost.lossReason, failure)
        }
    }
    return outcome.getOrThrow()
}
