package dev.leasehold

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.launch
import kotlinx.coroutines.supervisorScope

/** What a block runs under: a held key or a held slot, as the native library holds it. */
internal interface Held {
    /** Completes with the loss reason once it is lost. */
    suspend fun lostSignal(): String

    /**
     * Releases it: fails `Lost` if it was lost while held, `Closed` if it
     * ended already. A release that waits runs on to its end even if the
     * calling coroutine is cancelled.
     */
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
 * The block starts at once in the calling thread; a block that ends
 * without suspending (no I/O, an already completed future) costs no watch
 * for the loss. Only once it suspends does a child await the loss, to
 * cancel it. (A held thing whose deadline came before the block could
 * start never gets here: the call that began it failed `Lost`.)
 */
internal suspend fun <T> runHeld(
    held: Held,
    block: suspend () -> T,
): T {
    // A scope cancelled from outside throws when it ends: caught, so that
    // the release below runs and the cancellation is thrown after it.
    val outcome =
        try {
            supervisorScope {
                val work = async(start = CoroutineStart.UNDISPATCHED) { block() }
                if (!work.isCompleted) {
                    val watch =
                        launch {
                            val reason = held.lostSignal()
                            work.cancel(LostWhileHeld(reason))
                        }
                    work.join()
                    watch.cancel()
                }
                runCatching { work.await() }
            }
        } catch (e: CancellationException) {
            Result.failure(e)
        }
    try {
        held.end()
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
