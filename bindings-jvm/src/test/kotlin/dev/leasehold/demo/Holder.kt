package dev.leasehold.demo

import dev.leasehold.Leasehold
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import java.io.File
import kotlin.random.Random
import kotlin.system.exitProcess
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/*
 * The Kotlin holder of `make demo`. For DEMO_SECONDS (default 4) it holds
 * random keys chat-1 … chat-3 of lock `summaries` on the store at
 * LEASEHOLD_STORE, 20–80 ms each; inside each hold it writes its fence to
 * the fenced resource $DEMO_DIR/<key>, which refuses a fence that is not
 * larger than the last one it saw (then the holder prints REJECTED and
 * exits 1).
 */

private val keys = listOf("chat-1", "chat-2", "chat-3")

/** Writes [fence] to the resource of [key] unless a fence at least as large is there already. */
private fun writeFenced(
    dir: File,
    key: String,
    fence: Long,
) {
    val file = File(dir, key)
    val last = if (file.exists()) file.readText().trim().ifEmpty { "0" }.toULong() else 0UL
    check(fence.toULong() > last) { "REJECTED fence $fence for $key: the resource has seen $last" }
    file.writeText(fence.toString())
}

fun main() {
    val name = System.getenv("DEMO_NAME") ?: "1"
    val dir = File(System.getenv("DEMO_DIR") ?: ".")
    val seconds = (System.getenv("DEMO_SECONDS") ?: "4").toDouble()
    val url = System.getenv("LEASEHOLD_STORE") ?: "leasehold://127.0.0.1:7450"
    try {
        runBlocking {
            val store = Leasehold.connect(url)
            val summaries = store.lock("summaries", ttl = 5.seconds)
            val end = System.nanoTime() + (seconds * 1e9).toLong()
            while (System.nanoTime() < end) {
                val key = keys.random()
                val asked = System.nanoTime()
                summaries.hold(key) { lease ->
                    val waited = (System.nanoTime() - asked) / 1_000_000
                    println("[jvm-$name] holds summaries/$key fence=${lease.fence} waited=${waited}ms at=${System.currentTimeMillis()}")
                    writeFenced(dir, key, lease.fence)
                    delay((20 + Random.nextInt(61)).milliseconds)
                    println("[jvm-$name] done summaries/$key fence=${lease.fence} at=${System.currentTimeMillis()}")
                }
            }
            store.close()
        }
    } catch (e: Exception) {
        println("[jvm-$name] ${e.message}")
        exitProcess(1)
    }
}
