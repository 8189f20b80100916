package dev.leasehold.support

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.ObjectMapper
import dev.leasehold.Leasehold
import dev.leasehold.LeaseLost
import dev.leasehold.Lease
import dev.leasehold.LeaseholdException
import dev.leasehold.Lock
import dev.leasehold.LostWhileHeld
import dev.leasehold.ManualLease
import dev.leasehold.Store
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.cancel
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import java.io.File
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/**
 * The Kotlin runner of the shared scenarios (spec-tests/scenarios/\*.json,
 * the files the Rust runner spec-tests/src/runner.rs loads), mirroring its
 * semantics through the public Kotlin API. On the embedded store the clock
 * is virtual and only `advance` moves it; since the core works on its own
 * threads, "granted" / "failed" are read by polling in real time with a
 * bound, and "waiting" / "not lost" after a short real pause. An unknown
 * step, field or value fails the scenario when it loads.
 *
 * Kotlin's form of a call given up is its cancelled coroutine: a `cancel`
 * step cancels the waiting call's coroutine, and the call's
 * `CancellationException` is what the scenarios name `Cancelled`. A held
 * block cancelled by its lease's loss goes on until the scenario ends it
 * (`end`), as a block that cleans up after its cancellation does: so the
 * key stays held, as far as the store knows, until then.
 *
 * An option that does not parse as a duration is its call's `InvalidTtl`,
 * as the scenarios say; the parse is the core's.
 */
object Scenarios {
    /** The folder of the shared scenarios, read at test time. */
    val folder: File = repo.resolve("spec-tests/scenarios").toFile()

    /** Every scenario file, sorted by name. */
    fun files(): List<File> = folder.listFiles { f -> f.name.endsWith(".json") }.orEmpty().sortedBy { it.name }

    private val codes =
        listOf(
            "Lost", "InvalidTtl", "EmptyName", "PermissionDenied", "Unauthenticated", "WaitTimeout", "Cancelled",
            "Unavailable", "Timeout", "NamespaceMismatch", "Protocol", "Internal", "InvalidArgument", "Closed",
        )
    private val reasons = listOf("expired", "revoked", "unknown", "restarted", "closed")

    /** A field's type: a name, a string, a duration, a code, a task count, or one of these words. */
    private sealed interface Type {
        data object Name : Type

        data object Text : Type

        data object Span : Type

        data object Code : Type

        data object Tasks : Type

        data class OneOf(
            val words: List<String>,
        ) : Type
    }

    private class Spec(
        val required: Map<String, Type>,
        val optional: Map<String, Type> = emptyMap(),
    )

    private fun oneOf(vararg words: String) = Type.OneOf(words.toList())

    private val steps: Map<String, Spec> =
        mapOf(
            "open_lock" to
                Spec(
                    mapOf("lock" to Type.Name),
                    mapOf(
                        "name" to Type.Text, "ttl" to Type.Span, "max_hold" to Type.Span, "wait" to Type.Span,
                        "margin" to Type.Span, "expect" to oneOf("ok"), "expect_error" to Type.Code,
                    ),
                ),
            "hold" to
                Spec(
                    mapOf("holder" to Type.Name, "lock" to Type.Name, "key" to Type.Text),
                    mapOf("wait" to Type.Span, "expect" to oneOf("granted", "waiting"), "expect_error" to Type.Code),
                ),
            "try_hold" to
                Spec(
                    mapOf("holder" to Type.Name, "lock" to Type.Name, "key" to Type.Text),
                    mapOf("expect" to oneOf("granted", "not_held"), "expect_error" to Type.Code),
                ),
            "end" to
                Spec(
                    mapOf("holder" to Type.Name),
                    mapOf(
                        "by" to oneOf("return", "error", "panic", "cancel"), "message" to Type.Text,
                        "expect" to oneOf("ok", "function_error", "panic", "cancelled"),
                        "expect_error" to Type.Code, "expect_cause" to Type.Text,
                    ),
                ),
            "cancel" to Spec(mapOf("holder" to Type.Name)),
            "expect_granted" to Spec(mapOf("holder" to Type.Name)),
            "expect_waiting" to Spec(mapOf("holder" to Type.Name)),
            "expect_failed" to Spec(mapOf("holder" to Type.Name, "error" to Type.Code)),
            "expect_lost" to Spec(mapOf("holder" to Type.Name, "reason" to Type.OneOf(reasons))),
            "expect_not_lost" to Spec(mapOf("holder" to Type.Name)),
            "expect_remaining" to Spec(mapOf("holder" to Type.Name, "remaining" to Type.Span)),
            "expect_fence_greater" to Spec(mapOf("holder" to Type.Name, "than" to Type.Name)),
            "advance" to Spec(mapOf("by" to Type.Span)),
            "try_acquire" to
                Spec(
                    mapOf("holder" to Type.Name, "name" to Type.Text, "ttl" to Type.Span),
                    mapOf("expect" to oneOf("granted", "not_held"), "expect_error" to Type.Code),
                ),
            "acquire" to
                Spec(
                    mapOf("holder" to Type.Name, "name" to Type.Text, "ttl" to Type.Span),
                    mapOf("wait" to Type.Span, "expect" to oneOf("granted", "waiting"), "expect_error" to Type.Code),
                ),
            "extend" to
                Spec(
                    mapOf("holder" to Type.Name, "by" to Type.Span),
                    mapOf("tasks" to Type.Tasks, "expect" to oneOf("ok"), "expect_error" to Type.Code),
                ),
            "release" to
                Spec(
                    mapOf("holder" to Type.Name),
                    mapOf("tasks" to Type.Tasks, "expect" to oneOf("ok"), "expect_error" to Type.Code),
                ),
            "close" to Spec(emptyMap()),
            "reopen" to Spec(emptyMap()),
        )

    private fun fits(
        value: JsonNode,
        type: Type,
    ): Boolean =
        when (type) {
            Type.Name, Type.Span -> value.isTextual && value.asText().isNotEmpty()
            Type.Text -> value.isTextual
            Type.Code -> value.isTextual && value.asText() in codes
            Type.Tasks -> value.isInt && value.asInt() >= 1
            is Type.OneOf -> value.isTextual && value.asText() in type.words
        }

    /** A scenario as loaded. */
    class Scenario(
        val id: String,
        val contracts: List<String>,
        val renewal: Boolean,
        val push: Boolean,
        val steps: List<JsonNode>,
    ) {
        /** Whether it runs on the server store too (runner.rs `applies_to_server`). */
        val appliesToServer: Boolean
            get() = push && steps.none { it["step"].asText() in setOf("advance", "close", "reopen", "expect_remaining") }

        override fun toString() = "$id (${contracts.joinToString()})"
    }

    /** Loads a scenario file; fails on an unknown step, field or value, a missing field, or an id that is not the file's name. */
    fun load(file: File): Scenario {
        fun fail(why: String): Nothing = throw IllegalArgumentException("scenario ${file.name}: $why")
        val root = ObjectMapper().readTree(file)
        val top = listOf("id", "contracts", "title", "store", "steps")
        root.fieldNames().forEach { if (it !in top) fail("unknown field $it") }
        top.forEach { if (!root.has(it)) fail("missing field $it") }
        val id = root["id"].asText()
        if (id != file.nameWithoutExtension) fail("the id $id is not the file's name")
        val store = root["store"]
        if (store.fieldNames().asSequence().sorted().toList() != listOf("push", "renewal") ||
            !store["push"].isBoolean ||
            !store["renewal"].isBoolean
        ) {
            fail("bad store $store")
        }
        val steps = root["steps"].toList()
        steps.forEachIndexed { i, step ->
            val name = step["step"]?.asText()
            val spec = this.steps[name] ?: fail("step $i: unknown step $name")
            val fields = spec.required + spec.optional
            step.fieldNames().forEach { key ->
                if (key != "step") {
                    val type = fields[key] ?: fail("step $i ($name): unknown field $key")
                    if (!fits(step[key], type)) fail("step $i ($name): bad $key ${step[key]}")
                }
            }
            spec.required.keys.forEach { if (!step.has(it)) fail("step $i ($name): missing field $it") }
        }
        return Scenario(id, root["contracts"].map { it.asText() }, store["renewal"].asBoolean(), store["push"].asBoolean(), steps)
    }

    /** Runs [scenario] on a fresh embedded store on a virtual clock, or on the server store at [server]. */
    suspend fun run(
        scenario: Scenario,
        server: String? = null,
    ) {
        val world = World(scenario, server)
        world.open()
        try {
            scenario.steps.forEachIndexed { i, step ->
                try {
                    withTimeout(STEP_GUARD + 1.seconds) { world.step(step) }
                } catch (e: Throwable) {
                    throw AssertionError("scenario ${scenario.id}: step $i $step: ${e.message}", e)
                }
            }
        } finally {
            world.cleanUp()
        }
    }
}

/** The longest real time one step may take (the Rust runner's STEP_GUARD). */
private val STEP_GUARD = 5.seconds

private enum class Kind { KEY, MANUAL }

/** One holder of a scenario: a call of `hold`, `tryHold`, `acquire` or `tryAcquire`. */
private class Actor(
    val kind: Kind,
) {
    /** `waiting`, `granted`, `failed` or `ended`. */
    @Volatile var phase = "waiting"

    @Volatile var error: Throwable? = null

    /** The key's lease, once granted. */
    @Volatile var lease: Lease? = null

    /** The manual lease, once granted. */
    @Volatile var manual: ManualLease? = null

    /** What cancelled the held block, once something did. */
    @Volatile var blockCancelled: CancellationException? = null

    /** The coroutine of the call; cancelling it gives the call up. */
    var job: Job? = null

    /** The held block waits for this; `end` completes it. */
    val finish = CompletableDeferred<String>()

    /** How the call ended. */
    var settled: Deferred<Result<Any?>>? = null
}

/** What a failed call answered, as the runner compares it. */
private fun errorOutcome(error: Throwable?): String =
    when (error) {
        is LeaseholdException -> "error ${error.code}"
        is CancellationException -> "error Cancelled"
        else -> "not a LeaseholdException: $error"
    }

private fun expected(
    step: JsonNode,
    fallback: String,
): String =
    step["expect_error"]?.let { "error ${it.asText()}" } ?: step["expect"]?.asText() ?: fallback

private fun compare(
    want: String,
    got: String,
    detail: Throwable? = null,
) {
    if (want != got) throw AssertionError("expected $want, got $got${detail?.let { " ($it)" } ?: ""}", detail)
}

private class World(
    private val scenario: Scenarios.Scenario,
    private val server: String?,
) {
    private val clock = VirtualClock()
    private val pause = if (server == null) 30.milliseconds else 150.milliseconds
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    private lateinit var store: Store

    private class OpenLock(
        val name: String,
        val step: JsonNode,
        var lock: Lock,
    )

    private val locks = mutableMapOf<String, OpenLock>()
    private val holders = mutableMapOf<String, Actor>()
    private val fences = mutableMapOf<String, Long>()

    suspend fun open() {
        store = if (server == null) TestStores.memory(clock, scenario.renewal, scenario.push) else Leasehold.connect(server)
    }

    suspend fun settle() = delay(pause)

    private fun span(
        step: JsonNode,
        field: String,
    ): Duration? = step[field]?.asText()?.let(TestStores::parseDuration)

    private fun openLock(
        name: String,
        step: JsonNode,
    ) = store.lock(name, span(step, "ttl"), span(step, "max_hold"), span(step, "wait"), span(step, "margin"))

    private fun newHolder(name: String) = check(name !in holders) { "holder $name exists already" }

    private fun actor(name: String) = holders[name] ?: error("no holder $name")

    private fun lock(alias: String) = locks[alias]?.lock ?: error("no lock $alias was opened")

    private fun phase(actor: Actor) = if (actor.phase == "failed") errorOutcome(actor.error) else actor.phase

    private suspend fun expectPhase(
        holder: String,
        want: String,
    ) {
        val actor = actor(holder)
        if (want == "waiting") settle() else eventually("the end of $holder's wait", STEP_GUARD) { actor.phase != "waiting" }
        compare(want, phase(actor), actor.error)
        if (actor.phase == "failed") holders.remove(holder)
    }

    /** The held block of a holder of a key: it waits for `end`. */
    private fun block(
        holder: String,
        actor: Actor,
    ): suspend (Lease) -> String =
        { lease ->
            actor.lease = lease
            fences[holder] = lease.fence
            actor.phase = "granted"
            try {
                actor.finish.await()
            } catch (e: CancellationException) {
                actor.blockCancelled = e
                if (e !is LostWhileHeld) throw e
                // Lost: the block goes on until the scenario ends it, as a
                // block that cleans up after its cancellation does.
                withContext(NonCancellable) { actor.finish.await() }
            }
        }

    /** Runs [call] as the actor's coroutine; a failure while it waits is its failure. */
    private fun start(
        actor: Actor,
        call: suspend () -> Any?,
    ) {
        val settled = CompletableDeferred<Result<Any?>>()
        val job =
            scope.launch {
                val outcome = runCatching { call() }
                outcome.exceptionOrNull()?.let { e ->
                    if (actor.phase == "waiting") {
                        actor.error = e
                        actor.phase = "failed"
                    }
                }
                settled.complete(outcome)
            }
        actor.settled = settled
        actor.job = job
    }

    suspend fun step(step: JsonNode) {
        val holder = step["holder"]?.asText() ?: ""
        when (val name = step["step"].asText()) {
            "open_lock" -> {
                val alias = step["lock"].asText()
                check(alias !in locks) { "lock $alias is open already" }
                val lockName = step["name"]?.asText() ?: alias
                val got =
                    runCatching { locks[alias] = OpenLock(lockName, step, openLock(lockName, step)) }
                compare(expected(step, "ok"), got.exceptionOrNull()?.let(::errorOutcome) ?: "ok", got.exceptionOrNull())
            }
            "hold" -> {
                newHolder(holder)
                val actor = Actor(Kind.KEY)
                val lock = lock(step["lock"].asText())
                val key = step["key"].asText()
                holders[holder] = actor
                start(actor) { lock.hold(key, span(step, "wait"), block(holder, actor)) }
                expectPhase(holder, expected(step, ""))
            }
            "try_hold" -> {
                newHolder(holder)
                val actor = Actor(Kind.KEY)
                val lock = lock(step["lock"].asText())
                val key = step["key"].asText()
                start(actor) { lock.tryHold(key, block(holder, actor)) ?: NOT_HELD }
                val settled = actor.settled!!
                eventually("tryHold's answer", STEP_GUARD) { actor.phase != "waiting" || settled.isCompleted }
                val notHeld = actor.phase == "waiting" && settled.await().getOrNull() == NOT_HELD
                compare(expected(step, ""), if (notHeld) "not_held" else phase(actor), actor.error)
                if (actor.phase == "granted") holders[holder] = actor
            }
            "acquire" -> {
                newHolder(holder)
                val actor = Actor(Kind.MANUAL)
                val lease = step["name"].asText()
                holders[holder] = actor
                start(actor) {
                    store.acquire(lease, span(step, "ttl"), span(step, "wait")).also {
                        actor.manual = it
                        fences[holder] = it.fence
                        actor.phase = "granted"
                    }
                }
                expectPhase(holder, expected(step, ""))
            }
            "try_acquire" -> {
                newHolder(holder)
                val got =
                    runCatching { store.tryAcquire(step["name"].asText(), span(step, "ttl")) }
                val outcome =
                    got.fold(
                        { lease ->
                            if (lease == null) {
                                "not_held"
                            } else {
                                holders[holder] = Actor(Kind.MANUAL).also { it.manual = lease; it.phase = "granted" }
                                fences[holder] = lease.fence
                                "granted"
                            }
                        },
                        ::errorOutcome,
                    )
                compare(expected(step, ""), outcome, got.exceptionOrNull())
            }
            "end" -> end(step, holder)
            "cancel" -> {
                val actor = actor(holder)
                check(actor.phase == "waiting") { "$holder is not waiting" }
                actor.job!!.cancel()
                settle()
            }
            "expect_granted" -> expectPhase(holder, "granted")
            "expect_waiting" -> expectPhase(holder, "waiting")
            "expect_failed" -> expectPhase(holder, "error ${step["error"].asText()}")
            "expect_lost" -> expectLost(holder, step["reason"].asText())
            "expect_not_lost" -> {
                settle()
                val actor = actor(holder)
                val lease = keyLease(holder)
                check(!lease.lost && actor.blockCancelled == null) {
                    "the lease was lost (${lease.lossReason}; block cancelled by ${actor.blockCancelled})"
                }
            }
            "expect_remaining" -> {
                val lease = keyLease(holder)
                val text = step["remaining"].asText()
                val want = if (text == "none") null else TestStores.parseDuration(text)
                runCatching { eventually("remaining $want", 1.seconds) { lease.remaining == want } }
                check(lease.remaining == want) { "expected $want left, got ${lease.remaining}" }
            }
            "expect_fence_greater" -> {
                fun fence(name: String) = fences[name] ?: error("holder $name was never granted")
                val than = step["than"].asText()
                check(fence(holder) > fence(than)) { "$holder's fence ${fence(holder)} is not larger than $than's ${fence(than)}" }
            }
            "advance" -> clock.advance(span(step, "by")!!)
            "extend", "release" -> {
                val actor = actor(holder)
                val lease = actor.manual
                check(actor.kind == Kind.MANUAL && actor.phase == "granted" && lease != null) { "$holder has no manual lease" }
                val tasks = step["tasks"]?.asInt() ?: 1
                val outcomes =
                    (1..tasks)
                        .map { scope.async { runCatching { if (name == "extend") lease.extend(span(step, "by")!!) else lease.release() } } }
                        .awaitAll()
                outcomes.forEachIndexed { i, outcome ->
                    try {
                        compare(expected(step, "ok"), outcome.exceptionOrNull()?.let(::errorOutcome) ?: "ok", outcome.exceptionOrNull())
                    } catch (e: AssertionError) {
                        throw AssertionError("task $i: ${e.message}", e)
                    }
                }
                settle()
            }
            "close" -> {
                store.close()
                settle()
            }
            "reopen" -> {
                store.close()
                settle()
                open()
                for ((alias, entry) in locks) {
                    entry.lock =
                        try {
                            openLock(entry.name, entry.step)
                        } catch (e: LeaseholdException) {
                            throw AssertionError("lock $alias does not open again: ${e.message}", e)
                        }
                }
            }
            else -> error("unknown step $name")
        }
    }

    private fun keyLease(holder: String): Lease {
        val actor = actor(holder)
        check(actor.kind == Kind.KEY) { "$holder holds no key" }
        return actor.lease ?: error("$holder was never granted a key")
    }

    private suspend fun expectLost(
        holder: String,
        reason: String,
    ) {
        val actor = actor(holder)
        val lease = keyLease(holder)
        eventually("the loss reaching the block", STEP_GUARD) { lease.lost && actor.blockCancelled != null }
        check(lease.lossReason == reason) { "expected the lease lost $reason, got ${lease.lossReason}" }
        val why = actor.blockCancelled
        check(why is LostWhileHeld && why.reason == reason) { "the loss did not reach the block: it was cancelled by $why" }
        val left = lease.remaining
        check(left == null || left == Duration.ZERO) { "a lost lease has $left left, not 0" }
    }

    private suspend fun end(
        step: JsonNode,
        holder: String,
    ) {
        val actor = actor(holder)
        check(actor.kind == Kind.KEY && actor.phase == "granted") { "$holder holds nothing to end: ${phase(actor)}" }
        actor.phase = "ended"
        val message = step["message"]?.asText() ?: "the held block failed"
        val own = IllegalStateException(message)
        // Kotlin has no panics: the block throws an Error, which no code is meant to catch.
        val panic = AssertionError(message)
        when (step["by"]?.asText() ?: "return") {
            "return" -> actor.finish.complete("returned")
            "error" -> actor.finish.completeExceptionally(own)
            "panic" -> actor.finish.completeExceptionally(panic)
            "cancel" -> {
                actor.job!!.cancel()
                actor.finish.completeExceptionally(CancellationException("the runner cancels the held block"))
            }
        }
        val outcome = actor.settled!!.await()
        settle()
        val error = outcome.exceptionOrNull()
        val got =
            when {
                error == null -> "ok"
                error === own -> "function_error"
                error === panic -> "panic"
                error is CancellationException && error !is LostWhileHeld -> "cancelled"
                else -> errorOutcome(error)
            }
        compare(expected(step, "ok"), got, error)
        step["expect_cause"]?.asText()?.let { want ->
            val cause = (error as? LeaseLost)?.cause
            check(cause === own && cause.message == want) { "expected the block's error $want as the cause, got $cause" }
        }
    }

    suspend fun cleanUp() {
        holders.values.filter { it.kind == Kind.KEY && it.phase == "granted" }.forEach { it.finish.complete("cleanup") }
        holders.values.mapNotNull { it.settled }.forEach { runCatching { withTimeout(STEP_GUARD) { it.await() } } }
        store.close()
        scope.cancel()
    }
}

/** What a `tryHold` that ran nothing answers in the runner. */
private const val NOT_HELD = "not held"
