package dev.leasehold

import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.atomic.AtomicReference
import kotlin.coroutines.resumeWithException

/**
 * A native call that waits (`natives/pending.rs`): the library answers it
 * from one of its threads with [succeeded], [succeededWith] or [failed],
 * and [await] suspends until then (or [whenAnswered] acts then). Cancelling the awaiting coroutine
 * cancels the library's task, which leaves a line or lets a release run
 * on; an answer that comes anyway is handed to [unwanted] (a holding, to
 * free and so release).
 */
internal class NativeCall(
    private val unwanted: ((Any?) -> Unit)? = null,
) {
    private val task = AtomicLong()
    private val state = AtomicReference<Any?>(WAITING)

    /** Called by the library: the task that cancelling cancels. */
    fun pending(task: Long) = this.task.set(task)

    /** Called by the library: the answer. */
    fun succeeded(value: Long) = settle(value)

    /** Called by the library: the answer. */
    fun succeededWith(value: Any?) = settle(value)

    /** Called by the library: the failure. */
    fun failed(exception: Throwable) = settle(Failed(exception))

    /** Waits for the answer. */
    suspend fun await(): Any? =
        suspendCancellableCoroutine { waiter ->
            waiter.invokeOnCancellation { cancel() }
            if (!state.compareAndSet(WAITING, waiter)) resume(waiter, state.get())
        }

    /**
     * Instead of [await]: runs [action] once the answer comes (at once if it
     * came), on the thread that answers, which must not be kept long.
     */
    fun whenAnswered(action: () -> Unit) {
        if (!state.compareAndSet(WAITING, Answered(action))) action()
    }

    /** Gives the call up: the library's task is cancelled, and no answer comes after. */
    fun cancel() {
        task.getAndSet(0).let { if (it != 0L) Natives.callCancel(it) }
    }

    private fun settle(outcome: Any?) {
        task.getAndSet(0).let { if (it != 0L) Natives.callEnded(it) }
        if (state.compareAndSet(WAITING, outcome)) return
        when (val waiting = state.get()) {
            is Answered -> waiting.action()
            else -> {
                @Suppress("UNCHECKED_CAST")
                resume(waiting as CancellableContinuation<Any?>, outcome)
            }
        }
    }

    private fun resume(
        waiter: CancellableContinuation<Any?>,
        outcome: Any?,
    ) {
        if (outcome is Failed) {
            waiter.resumeWithException(outcome.exception)
        } else {
            waiter.resume(outcome) { _, value, _ -> unwanted?.invoke(value) }
        }
    }

    private class Failed(
        val exception: Throwable,
    )

    private class Answered(
        val action: () -> Unit,
    )

    private companion object {
        val WAITING = Any()
    }
}
