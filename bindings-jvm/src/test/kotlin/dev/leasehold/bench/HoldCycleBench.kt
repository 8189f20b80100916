package dev.leasehold.bench

import com.fasterxml.jackson.databind.ObjectMapper
import dev.leasehold.Leasehold
import dev.leasehold.Store
import dev.leasehold.support.ServerProcess
import dev.leasehold.support.repo
import kotlinx.coroutines.runBlocking
import java.util.concurrent.TimeUnit
import dev.leasehold.java.Leasehold as JavaLeasehold

/*
 * `make bench-jvm`: the hold cycle through Kotlin and Java next to the same
 * cycle in Rust (bench/src/bin/hold_cycle.rs), in the same run, on the
 * embedded store and on a server store process started here (release
 * builds). One cycle: Kotlin `lock.hold(key) {}` from `runBlocking`; Java
 * `lock.hold(key, lease -> done).join()`; Rust `lock.begin(key).await` +
 * `holding.end().await`; one key, uncontended. Rounds alternate Rust,
 * Kotlin and Java, so that each JVM round is compared with the Rust round
 * just before it on a machine as loaded as it was then; the medians of the
 * times and of the per-round ratios are reported.
 *
 *   HoldCycleBenchKt [EMBEDDED_CYCLES] [SERVER_CYCLES] [ROUNDS]
 */

/** Microseconds per Kotlin hold cycle, after a warm-up of a tenth as many. */
private fun kotlinCycle(
    store: Store,
    cycles: Int,
): Double =
    runBlocking {
        val lock = store.lock("bench-kotlin")
        repeat(cycles / 10) { lock.hold("k") {} }
        val started = System.nanoTime()
        repeat(cycles) { lock.hold("k") {} }
        (System.nanoTime() - started) / 1e3 / cycles
    }

/** Microseconds per Rust cycle on the embedded store, or on the server at [url]. */
private fun rustCycle(
    url: String?,
    cycles: Int,
): Double {
    val binary = repo.resolve("target/release/hold_cycle").toString()
    val process = ProcessBuilder(listOfNotNull(binary, cycles.toString(), url)).redirectError(ProcessBuilder.Redirect.INHERIT).start()
    val out = process.inputStream.readAllBytes().decodeToString()
    check(process.waitFor(10, TimeUnit.MINUTES) && process.exitValue() == 0) { "$binary failed: $out" }
    val got = ObjectMapper().readTree(out)
    return got[if (url == null) "embedded_us" else "server_us"].asDouble()
}

private fun median(xs: List<Double>) = xs.sorted()[xs.size / 2]

fun main(args: Array<String>) {
    val embeddedCycles = args.getOrNull(0)?.toInt() ?: 20_000
    val serverCycles = args.getOrNull(1)?.toInt() ?: 5_000
    val rounds = args.getOrNull(2)?.toInt() ?: 5
    val server = ServerProcess.start()
    val lines = mutableListOf<String>()
    try {
        for ((kind, cycles) in listOf("embedded" to embeddedCycles, "server" to serverCycles)) {
            val url = if (kind == "server") server.url else null
            val rust = mutableListOf<Double>()
            val kotlin = mutableListOf<Double>()
            val java = mutableListOf<Double>()
            repeat(rounds) {
                rust += rustCycle(url, cycles)
                val store = if (url == null) Leasehold.memory() else runBlocking { Leasehold.connect(url) }
                kotlin += kotlinCycle(store, cycles)
                runBlocking { store.close() }
                val javaStore = if (url == null) JavaLeasehold.memory() else JavaLeasehold.connect(url).join()
                java += JavaHoldCycle.cycle(javaStore, cycles)
                javaStore.close().join()
            }
            fun ratios(xs: List<Double>) = xs.indices.map { xs[it] / rust[it] }
            for ((language, times) in listOf("Kotlin" to kotlin, "Java" to java)) {
                val r = ratios(times)
                lines +=
                    String.format(
                        "%-9s %-7s %7d %9.2f %9.2f   %.2fx (%.2f-%.2f)",
                        kind, language, cycles, median(rust), median(times), median(r), r.min(), r.max(),
                    )
            }
        }
    } finally {
        server.stop()
    }
    println("hold cycle, median of $rounds rounds (µs per cycle; Kotlin: lock.hold(key) {}; Java: lock.hold(key, fn).join(); Rust: begin + end)")
    println("store     lang     cycles   Rust µs    JVM µs   JVM/Rust (median of rounds; lowest-highest)")
    lines.forEach(::println)
}
