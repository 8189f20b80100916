package dev.leasehold.bench

import com.fasterxml.jackson.databind.ObjectMapper
import dev.leasehold.support.ServerProcess
import dev.leasehold.support.repo
import org.openjdk.jmh.results.RunResult
import org.openjdk.jmh.runner.Runner
import org.openjdk.jmh.runner.options.OptionsBuilder
import org.openjdk.jmh.runner.options.TimeValue
import org.openjdk.jmh.runner.options.VerboseMode
import java.io.File
import java.net.ServerSocket
import java.net.Socket
import java.nio.file.Files
import java.util.concurrent.TimeUnit

/*
 * `make bench-jvm`: the JMH benchmarks of bench/ (HoldCycles, IdRates,
 * LockThroughput) beside Rust's hold cycle (bench/src/bin/hold_cycle.rs),
 * Redisson's RLock and CosId's SnowflakeId, in one run, on a server store
 * process and a redis-server started here (release builds). Hold cycle
 * rounds alternate Rust and JMH, so that each JVM figure is compared with
 * the Rust one just before it on a machine as loaded as it was then; the
 * medians of the per-round ratios are reported. Prints the tables and
 * writes them to target/bench-jvm.md.
 *
 *   JvmBenchKt [ROUNDS]
 */

private const val RUST_EMBEDDED_CYCLES = 20_000
private const val RUST_SERVER_CYCLES = 5_000

/** Rust's microseconds per cycle on the embedded store and on the server at [url]. */
private fun rustCycle(url: String): Pair<Double, Double> {
    val binary = repo.resolve("target/release/hold_cycle").toString()
    fun run(cycles: Int, url: String?): Double {
        val process = ProcessBuilder(listOfNotNull(binary, cycles.toString(), url)).redirectError(ProcessBuilder.Redirect.INHERIT).start()
        val out = process.inputStream.readAllBytes().decodeToString()
        check(process.waitFor(10, TimeUnit.MINUTES) && process.exitValue() == 0) { "$binary failed: $out" }
        val got = ObjectMapper().readTree(out)
        return got[if (url == null) "embedded_us" else "server_us"].asDouble()
    }
    return run(RUST_EMBEDDED_CYCLES, null) to run(RUST_SERVER_CYCLES, url)
}

/** A redis-server of its own on a free loopback port, without persistence. */
private class RedisProcess : AutoCloseable {
    val port = ServerSocket(0).use { it.localPort }
    private val dir = Files.createTempDirectory("leasehold-bench-redis")
    private val process =
        ProcessBuilder("redis-server", "--bind", "127.0.0.1", "--port", "$port", "--save", "", "--appendonly", "no", "--dir", "$dir")
            .redirectOutput(dir.resolve("log").toFile())
            .redirectErrorStream(true)
            .start()

    init {
        val until = System.nanoTime() + 30_000_000_000
        while (runCatching { Socket("127.0.0.1", port).close() }.isFailure) {
            check(process.isAlive && System.nanoTime() < until) { "redis-server did not start: ${dir.resolve("log").toFile().readText()}" }
            Thread.sleep(20)
        }
    }

    val url get() = "redis://127.0.0.1:$port"

    override fun close() {
        process.destroy()
        process.waitFor(5, TimeUnit.SECONDS)
        dir.toFile().deleteRecursively()
    }
}

/** One JMH run of the benchmarks matching [include] at [threads] threads, each result by name (and `store` parameter). */
private fun jmh(
    include: String,
    threads: Int,
    properties: Map<String, String>,
): Map<String, Double> {
    val options =
        OptionsBuilder()
            .include(include)
            .forks(1)
            .warmupIterations(3)
            .warmupTime(TimeValue.seconds(1))
            .measurementIterations(3)
            .measurementTime(TimeValue.seconds(1))
            .threads(threads)
            .jvmArgsAppend(*properties.map { (k, v) -> "-D$k=$v" }.toTypedArray())
            .shouldFailOnError(true)
            .verbosity(VerboseMode.SILENT)
            .build()
    return Runner(options).run().associate { nameOf(it) to it.primaryResult.score }
}

private fun nameOf(result: RunResult): String {
    val params = result.params
    val store = if (params.paramsKeys.contains("store")) "/" + params.getParam("store") else ""
    return params.benchmark.substringAfterLast('.') + store
}

private fun median(xs: List<Double>) = xs.sorted()[xs.size / 2]

fun main(args: Array<String>) {
    val rounds = args.getOrNull(0)?.toInt() ?: 5
    val lines = mutableListOf<String>()
    ServerProcess.start().use { server ->
        RedisProcess().use { redis ->
            val properties =
                mapOf(
                    "jna.library.path" to System.getProperty("jna.library.path"),
                    "leasehold.bench.server" to server.url,
                    "leasehold.bench.redis" to redis.url,
                    "kotlinx.coroutines.stacktrace.recovery" to "false",
                )
            val rust = mutableListOf<Pair<Double, Double>>()
            val jvm = mutableListOf<Map<String, Double>>()
            repeat(rounds) {
                rust += rustCycle(server.url)
                jvm += jmh("HoldCycles", 1, properties)
            }
            lines += "## Hold cycle, median of $rounds rounds"
            lines += ""
            lines += "One key, uncontended. Rust: `lock.begin(key)` + `holding.end()` (bench/src/bin/hold_cycle.rs); " +
                "Kotlin: `lock.hold(key) {}`; Java: `lock.hold(key, lease -> done).join()`; Java, blocking: " +
                "`lock.holdBlocking(key, lease -> null)` (JMH, `HoldCycles`). " +
                "The ratio is the median of each round's JVM time over the same round's Rust time."
            lines += ""
            lines += "| store | language | Rust µs | JVM µs | JVM / Rust (lowest-highest) |"
            lines += "|---|---|---:|---:|---|"
            for ((store, pick) in listOf("embedded" to { p: Pair<Double, Double> -> p.first }, "server" to { p: Pair<Double, Double> -> p.second })) {
                for ((benchmark, language) in listOf("kotlin" to "Kotlin", "java" to "Java", "javaBlocking" to "Java, blocking")) {
                    val us = jvm.map { it.getValue("$benchmark/$store") / 1e3 }
                    val ratios = us.indices.map { us[it] / pick(rust[it]) }
                    lines +=
                        String.format(
                            "| %s | %s | %.2f | %.2f | %.2fx (%.2f-%.2f) |",
                            store, language, median(rust.map(pick)), median(us), median(ratios), ratios.min(), ratios.max(),
                        )
                }
            }
            val ids = jmh("IdRates", 1, properties)
            lines += ""
            lines += "## IDs: nanoseconds an ID (JMH, `IdRates`; one layout, 39 bits of ms, 2 of node, 22 of sequence)"
            lines += ""
            lines += "| call | Leasehold from Java | Leasehold from Kotlin | CosId `MillisecondSnowflakeId` | Leasehold / CosId (Java, Kotlin) |"
            lines += "|---|---:|---:|---:|---|"
            for ((call, java, kotlin, cosid) in listOf(
                listOf("one ID: `nextNow()`; CosId `generate()`", "javaNextNow", "kotlinNextNow", "cosidGenerate"),
                listOf("4096 IDs: Java `take(4096).join()`, Kotlin `takeNow(4096)`; CosId 4096 `generate()`", "javaTake", "kotlinTakeNow", "cosidGenerateBatch"),
            )) {
                val (j, k, c) = listOf(ids.getValue(java), ids.getValue(kotlin), ids.getValue(cosid))
                lines += String.format("| %s | %.2f | %.2f | %.2f | %.2fx, %.2fx |", call, j, k, c, j / c, k / c)
            }
            lines += ""
            lines += "## Lock cycles a second from Java, each thread on a key of its own (JMH, `LockThroughput`)"
            lines += ""
            lines += "| threads | Leasehold, server store: `lock.hold(key, fn).join()` | `lock.holdBlocking(key, fn)` | Redisson `RLock` on Redis (`lock(); unlock()`) | Leasehold / Redisson (future, blocking) |"
            lines += "|---:|---:|---:|---:|---|"
            for (threads in listOf(1, 16)) {
                val got = jmh("LockThroughput", threads, properties)
                val (l, b, r) = listOf(got.getValue("leasehold"), got.getValue("leaseholdBlocking"), got.getValue("redisson"))
                lines += String.format("| %d | %,.0f | %,.0f | %,.0f | %.2fx, %.2fx |", threads, l, b, r, l / r, b / r)
            }
        }
    }
    val text = lines.joinToString("\n") + "\n"
    print(text)
    val out = File(repo.resolve("target/bench-jvm.md").toString())
    out.writeText(text)
    println("written to $out")
}
