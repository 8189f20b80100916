package dev.leasehold.java

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.future.future
import java.util.concurrent.CompletableFuture
import kotlin.time.Duration
import kotlin.time.toKotlinDuration
import java.time.Duration as JavaDuration

/**
 * Where the Java API's calls run: coroutines of the Kotlin API, each one a
 * [CompletableFuture]. Resumed on [Dispatchers.IO], since the Java
 * functions they call (a held block) may block their thread.
 */
private val scope = CoroutineScope(SupervisorJob() + Dispatchers.IO)

/**
 * The future of [call], which starts at once in the calling thread and goes
 * on in [Dispatchers.IO] once it suspends: a call the library answers at
 * once (a free key of the embedded store) completes before `futureOf`
 * returns, with no thread hop. Cancelling the future cancels the call's
 * coroutine: a call waiting in line leaves it (LOCK-18).
 */
internal fun <T> futureOf(call: suspend () -> T): CompletableFuture<T> =
    scope.future(start = CoroutineStart.UNDISPATCHED) { call() }

/** A Java duration as the Kotlin API takes it. */
internal fun JavaDuration.toKotlin(): Duration = toKotlinDuration()

/** An optional Java duration as the Kotlin API takes it. */
internal fun JavaDuration?.toOptionalKotlin(): Duration? = this?.toKotlinDuration()
