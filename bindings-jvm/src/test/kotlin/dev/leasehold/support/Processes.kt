package dev.leasehold.support

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import java.io.File
import java.net.InetSocketAddress
import java.net.ServerSocket
import java.net.Socket
import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.TimeUnit
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds

/** The workspace's root folder (set by the Maven build). */
val repo: Path = Path.of(System.getProperty("leasehold.repo") ?: "..").toAbsolutePath().normalize()

/** Sends [signal] (`STOP`, `CONT`, `KILL`) to process [pid]. */
fun signal(
    pid: Long,
    signal: String,
) {
    val kill = ProcessBuilder("kill", "-$signal", pid.toString()).inheritIO().start()
    check(kill.waitFor() == 0) { "kill -$signal $pid failed" }
}

/** The state letter of process [pid] in /proc (`T`: stopped). */
private fun processState(pid: Long): String {
    val stat = File("/proc/$pid/stat").readText()
    return stat.substring(stat.lastIndexOf(')') + 1).trim().split(" ")[0]
}

/**
 * A real server store process for the tests: `leasehold serve` on a free
 * loopback port with a data directory of its own ([start]); [stop] ends it.
 */
class ServerProcess private constructor(
    private val process: Process,
    private val dir: Path,
    /** `127.0.0.1:PORT`. */
    val address: String,
    /** The store URL, `leasehold://` or `leaseholds://`. */
    val url: String,
) : AutoCloseable {
    /** The process id. */
    val pid: Long get() = process.pid()

    /**
     * Freezes the server (SIGSTOP) and waits until it is stopped: the signal
     * takes effect a little after kill returns.
     */
    fun freeze() {
        signal(pid, "STOP")
        val until = System.nanoTime() + 5_000_000_000
        while (processState(pid) != "T") {
            check(System.nanoTime() < until) { "the server $pid did not stop" }
            Thread.sleep(1)
        }
    }

    /** Thaws a frozen server (SIGCONT). */
    fun thaw() = signal(pid, "CONT")

    /** Kills the server (SIGKILL) at once. */
    fun kill() {
        process.destroyForcibly()
        process.waitFor()
    }

    /** Stops the server (SIGTERM, then SIGKILL) and removes its data directory. */
    fun stop() {
        if (process.isAlive) {
            thaw()
            process.destroy()
            if (!process.waitFor(5, TimeUnit.SECONDS)) process.destroyForcibly().waitFor()
        }
        dir.toFile().deleteRecursively()
    }

    override fun close() = stop()

    /** Starting one. */
    companion object {
        /** The server binary: the property `leasehold.bin`, else `target/debug/leasehold`. */
        private val binary: String =
            System.getProperty("leasehold.bin") ?: repo.resolve("target/debug/leasehold").toString()

        /**
         * Starts a server store; [tokens]: lines of a tokens file (LOCK-14);
         * [tls]: a certificate and key file for `leaseholds://`.
         */
        @JvmStatic
        @JvmOverloads
        fun start(
            tokens: List<String>? = null,
            tls: Pair<Path, Path>? = null,
        ): ServerProcess {
            val dir = Files.createTempDirectory("leasehold-jvm-")
            val argv = mutableListOf(binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir.resolve("data").toString())
            if (tokens != null) {
                val file = dir.resolve("tokens")
                Files.writeString(file, tokens.joinToString("\n", postfix = "\n"))
                argv += listOf("--tokens", file.toString())
            }
            if (tls != null) argv += listOf("--tls-cert", tls.first.toString(), "--tls-key", tls.second.toString())
            val builder = ProcessBuilder(argv).redirectError(dir.resolve("stderr").toFile())
            builder.environment()["LEASEHOLD_LOG"] = "warn"
            val process = builder.start()
            val line = process.inputReader().readLine()
            val address = line?.let { Regex("^listening on (\\S+)$").find(it)?.groupValues?.get(1) }
            if (address == null) {
                process.destroyForcibly().waitFor()
                val stderr = dir.resolve("stderr").toFile().readText()
                dir.toFile().deleteRecursively()
                error("the server did not start ($line): $stderr")
            }
            val scheme = if (tls == null) "leasehold" else "leaseholds"
            return ServerProcess(process, dir, address, "$scheme://$address")
        }
    }
}

/** A loopback TCP port that nothing listens on now. */
private fun freePort(): Int = ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()).use { it.localPort }

/** Whether something accepts connections on 127.0.0.1:[port]. */
private fun accepts(port: Int): Boolean =
    try {
        Socket().use { it.connect(InetSocketAddress("127.0.0.1", port), 200) }
        true
    } catch (_: java.io.IOException) {
        false
    }

/**
 * One real etcd member for the tests: the binary `$LEASEHOLD_ETCD` names
 * (`make etcd` builds it; `make jvm-test` exports it) on free loopback
 * ports, with a data directory of its own.
 */
class EtcdMember private constructor(
    private val process: Process,
    private val dir: Path,
    private val port: Int,
) : AutoCloseable {
    /** The store URL of this member under [prefix]. */
    fun url(prefix: String) = "etcd://127.0.0.1:$port/$prefix"

    /** Kills the member and removes its data directory. */
    override fun close() {
        process.destroyForcibly().waitFor()
        dir.toFile().deleteRecursively()
    }

    /** Starting one. */
    companion object {
        /** Starts a member and waits until its client port accepts connections. */
        fun start(): EtcdMember {
            val binary =
                System.getenv("LEASEHOLD_ETCD")
                    ?: error("LEASEHOLD_ETCD is not set: it names the etcd binary the etcd tests start (`make etcd` builds it)")
            check(File(binary).canExecute()) { "no etcd binary at LEASEHOLD_ETCD=$binary (`make etcd` builds it)" }
            val dir = Files.createTempDirectory("leasehold-jvm-etcd-")
            val (client, peer) = freePort() to freePort()
            val clientUrl = "http://127.0.0.1:$client"
            val peerUrl = "http://127.0.0.1:$peer"
            val process =
                ProcessBuilder(
                    binary, "--name", "m0", "--data-dir", dir.resolve("data").toString(),
                    "--listen-client-urls", clientUrl, "--advertise-client-urls", clientUrl,
                    "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl,
                    "--initial-cluster", "m0=$peerUrl", "--initial-cluster-state", "new",
                    "--heartbeat-interval", "50", "--election-timeout", "500",
                    "--logger", "zap", "--log-level", "error",
                ).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(dir.resolve("stderr").toFile())
                    .start()
            val until = System.nanoTime() + 15_000_000_000
            while (!accepts(client)) {
                if (!process.isAlive || System.nanoTime() > until) {
                    process.destroyForcibly().waitFor()
                    val stderr = dir.resolve("stderr").toFile().readText()
                    dir.toFile().deleteRecursively()
                    error("etcd did not accept connections on port $client: $stderr")
                }
                Thread.sleep(20)
            }
            return EtcdMember(process, dir, client)
        }
    }
}

/**
 * A 3-member etcd cluster for the fault tests: `etcd-cluster`
 * (etcd-tests/src/bin/etcd-cluster.rs), the binary `$LEASEHOLD_ETCD_CLUSTER`
 * names (`make etcd-cluster` builds it; `make jvm-test` exports it), which
 * starts its members on loopback and is told what to do by one command a
 * line on its stdin, each answered by one line ([command]).
 */
class EtcdCluster private constructor(
    private val process: Process,
    private val dir: Path,
    /** `127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2`, member 0 first. */
    private val hosts: String,
    /** The members' `--election-timeout`. */
    val electionTimeout: Duration,
) : AutoCloseable {
    private val commands = process.outputWriter()
    private val answers = process.inputReader()

    /** The store URL of the cluster under [prefix]. */
    fun url(prefix: String) = "etcd://$hosts/$prefix"

    /**
     * Sends one command (`leader`, `lead N`, `kill N`, `restart N`,
     * `freeze N`, `thaw N`) and answers its answer (`leader N`, `ok`), off the
     * caller's thread; an `error: …` answer or the tool's exit fails.
     */
    suspend fun command(line: String): String =
        withContext(Dispatchers.IO) {
            commands.write(line)
            commands.newLine()
            commands.flush()
            val answer = answers.readLine() ?: error("etcd-cluster exited, answering nothing to $line: ${stderr()}")
            check(!answer.startsWith("error")) { "etcd-cluster answered $answer to $line" }
            answer
        }

    private fun stderr() = dir.resolve("stderr").toFile().readText()

    /**
     * Closes the tool's stdin, on which it stops its members (thawing a
     * frozen one) and removes their data; kills it if it has not exited in
     * 10 s (its members would then be left running).
     */
    override fun close() {
        runCatching { commands.close() }
        if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor()
        dir.toFile().deleteRecursively()
    }

    /** Starting one. */
    companion object {
        /** Starts the tool and reads its ready line. */
        fun start(): EtcdCluster {
            val binary =
                System.getenv("LEASEHOLD_ETCD_CLUSTER")
                    ?: error(
                        "LEASEHOLD_ETCD_CLUSTER is not set: it names the etcd-cluster tool the etcd fault tests start " +
                            "(`make etcd-cluster` builds it; `make jvm-test` exports it)",
                    )
            check(File(binary).canExecute()) { "no etcd-cluster at LEASEHOLD_ETCD_CLUSTER=$binary (`make etcd-cluster` builds it)" }
            val dir = Files.createTempDirectory("leasehold-jvm-etcd-cluster-")
            val process = ProcessBuilder(binary).redirectError(dir.resolve("stderr").toFile()).start()
            val line = process.inputReader().readLine()
            val ready = line?.let { Regex("^ready etcd://(\\S+) election-timeout=(\\d+)ms$").find(it) }
            if (ready == null) {
                process.outputStream.close()
                if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor()
                val stderr = dir.resolve("stderr").toFile().readText()
                dir.toFile().deleteRecursively()
                error("etcd-cluster did not start ($line): $stderr")
            }
            val (hosts, electionTimeout) = ready.destructured
            return EtcdCluster(process, dir, hosts, electionTimeout.toLong().milliseconds)
        }
    }
}
