package dev.leasehold.java

import kotlinx.coroutines.future.await
import kotlinx.coroutines.runBlocking
import java.time.Duration
import java.util.Optional
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CompletionStage
import java.util.function.Function
import dev.leasehold.Holding
import dev.leasehold.Lease as KotlinLease
import dev.leasehold.Lock as KotlinLock

/** A lock for Java ([Store.lock]): keys held while a function's future runs. */
class Lock internal constructor(
    private val lock: KotlinLock,
) {
    /** The lock's name. */
    fun name(): String = lock.name

    /**
     * Waits in line for [key] (at most [wait] if given, else the lock's own),
     * then calls [fn] with the lease and holds the key until the future it
     * returns completes, then releases it (LOCK-11). A lost lease cancels
     * that future (LOCK-09), and the returned one then fails
     * `dev.leasehold.LeaseLost`, the function's own failure kept as its cause
     * (LOCK-10). Cancelling the returned future while it waits leaves the
     * line (LOCK-18).
     */
    fun <T> hold(
        key: String,
        wait: Duration?,
        fn: Function<Lease, out CompletionStage<T>>,
    ): CompletableFuture<T> = futureOf { lock.hold(key, wait.toOptionalKotlin()) { run(fn, it) } }

    /** As [hold] with the lock's own bound on waiting. */
    fun <T> hold(
        key: String,
        fn: Function<Lease, out CompletionStage<T>>,
    ): CompletableFuture<T> = hold(key, null, fn)

    /**
     * Waits in line for every key of [keys] at once (at most [wait] if
     * given, else the lock's own), then calls [fn] with their leases, in the
     * order of [keys], and holds every key until the future it returns
     * completes, then releases them all at once (LOCK-22). All or none: when
     * one key cannot be had, the returned future fails (`WaitTimeout` past
     * the wait), [fn] is not called and every lease taken is released;
     * cancelling the returned future while it waits leaves every line
     * (LOCK-18). A lost lease, any of them, cancels [fn]'s future (LOCK-09),
     * and the returned one then fails `dev.leasehold.LeaseLost`, the
     * function's own failure kept as its cause (LOCK-10).
     */
    fun <T> holdMany(
        keys: List<String>,
        wait: Duration?,
        fn: Function<List<Lease>, out CompletionStage<T>>,
    ): CompletableFuture<T> =
        futureOf { lock.holdMany(keys, wait.toOptionalKotlin()) { leases -> fn.apply(leases.map(::Lease)).await() } }

    /** As [holdMany] with the lock's own bound on waiting. */
    fun <T> holdMany(
        keys: List<String>,
        fn: Function<List<Lease>, out CompletionStage<T>>,
    ): CompletableFuture<T> = holdMany(keys, null, fn)

    /**
     * Who holds [key] now, from a linearizable read of the store (WHO-02):
     * its holder's identity, fence, times and how many wait, or empty when
     * nobody does. A connection admitted only to read may ask.
     */
    fun holder(key: String): CompletableFuture<Optional<HolderInfo>> =
        futureOf { Optional.ofNullable(lock.holder(key)?.let(::HolderInfo)) }

    /**
     * Holds [key] while [fn]'s future runs, as [hold] does, if the key is
     * free now: [Attempt.Ran] with the value [fn]'s future completed with
     * (null included), or [Attempt.Refused], and [fn] is not called, when
     * the key is held (LOCK-17).
     */
    fun <T> tryHold(
        key: String,
        fn: Function<Lease, out CompletionStage<T>>,
    ): CompletableFuture<Attempt<T>> = futureOf { lock.tryHold(key) { Attempt.of(run(fn, it)) } ?: Attempt.refused() }

    /**
     * Holds [key] while [fn] runs on the calling thread, which blocks: waits
     * in line for the key (FIFO, at most [wait] if given, else the lock's
     * own), calls [fn] with the lease, releases the key (LOCK-11) and
     * returns what [fn] returned. For threads that may block: platform
     * threads, or virtual threads, which block cheaply.
     *
     * A lost lease interrupts the calling thread while [fn] runs (LOCK-09);
     * `holdBlocking` then throws `dev.leasehold.LeaseLost`, with the
     * exception [fn] threw, if it threw one, as its cause (LOCK-10), and
     * the interrupt cleared. Interrupting the calling thread while it waits
     * in line leaves the line (LOCK-18) and throws `InterruptedException`.
     */
    @Throws(InterruptedException::class)
    fun <T> holdBlocking(
        key: String,
        wait: Duration?,
        fn: Function<Lease, T>,
    ): T = runBlocking { lock.hold(key, wait.toOptionalKotlin()) { it.holding.interruptingOnLoss { fn.apply(Lease(it)) } } }

    /** As [holdBlocking] with the lock's own bound on waiting. */
    @Throws(InterruptedException::class)
    fun <T> holdBlocking(
        key: String,
        fn: Function<Lease, T>,
    ): T = holdBlocking(key, null, fn)

    /**
     * Holds every key of [keys] while [fn] runs on the calling thread, which
     * blocks: waits in line for them all at once (at most [wait] if given,
     * else the lock's own), calls [fn] with their leases in the order of
     * [keys], releases them all at once (LOCK-22) and returns what [fn]
     * returned. All or none, as [holdMany]. A lost lease, any of them,
     * interrupts the calling thread while [fn] runs (LOCK-09);
     * `holdManyBlocking` then throws `dev.leasehold.LeaseLost`, with the
     * exception [fn] threw, if it threw one, as its cause (LOCK-10), and the
     * interrupt cleared. Interrupting the calling thread while it waits in
     * line leaves every line (LOCK-18) and throws `InterruptedException`.
     */
    @Throws(InterruptedException::class)
    fun <T> holdManyBlocking(
        keys: List<String>,
        wait: Duration?,
        fn: Function<List<Lease>, T>,
    ): T =
        runBlocking {
            lock.holdMany(keys, wait.toOptionalKotlin()) { leases ->
                Holding.interruptingOnAnyLoss(leases.map { it.holding }) { fn.apply(leases.map(::Lease)) }
            }
        }

    /** As [holdManyBlocking] with the lock's own bound on waiting. */
    @Throws(InterruptedException::class)
    fun <T> holdManyBlocking(
        keys: List<String>,
        fn: Function<List<Lease>, T>,
    ): T = holdManyBlocking(keys, null, fn)

    /**
     * Holds [key] while [fn] runs on the calling thread, as [holdBlocking]
     * does, if the key is free now: [Attempt.Ran] with [fn]'s value, or
     * [Attempt.Refused], and [fn] is not called, when the key is held (LOCK-17).
     */
    @Throws(InterruptedException::class)
    fun <T> tryHoldBlocking(
        key: String,
        fn: Function<Lease, T>,
    ): Attempt<T> =
        runBlocking { lock.tryHold(key) { Attempt.of(it.holding.interruptingOnLoss { fn.apply(Lease(it)) }) } ?: Attempt.refused() }

    private suspend fun <T> run(
        fn: Function<Lease, out CompletionStage<T>>,
        lease: KotlinLease,
    ): T = fn.apply(Lease(lease)).await()
}

/** The lease of a held key, as the function running under it sees it. */
class Lease internal constructor(
    private val lease: KotlinLease,
) {
    /** The fence: larger than every fence the key's lock gave before (LOCK-02). */
    fun fence(): Long = lease.fence

    /** The key held. */
    fun key(): String = lease.key

    /** The name of the key's lock. */
    fun lockName(): String = lease.lockName

    /** Whether the lease was lost (LOCK-09). */
    fun lost(): Boolean = lease.lost

    /** Why it was lost, once it was. */
    fun lossReason(): Optional<String> = Optional.ofNullable(lease.lossReason)

    /** The time left before the holder's deadline; empty without one. */
    fun remaining(): Optional<Duration> = Optional.ofNullable(lease.remaining?.inWholeNanoseconds?.let(Duration::ofNanos))

    /** Completes with the loss reason once the lease is lost. */
    fun lostSignal(): CompletableFuture<String> = futureOf { lease.lostSignal() }
}
