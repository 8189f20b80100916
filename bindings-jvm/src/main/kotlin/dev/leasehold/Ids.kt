package dev.leasehold

import dev.leasehold.slots.SlotLease
import dev.leasehold.uniffi.NativeIdGenerator
import dev.leasehold.uniffi.NativeIdLayout
import dev.leasehold.uniffi.idLayoutCheck
import dev.leasehold.uniffi.idLayoutDescribe
import dev.leasehold.uniffi.idLayoutNamed
import dev.leasehold.uniffi.idLayoutParts
import java.lang.ref.Reference.reachabilityFence

/**
 * Issues unique 64-bit IDs on one slot lease of a namespace (IDGEN), opened
 * by [Store.ids]: timestamps only in (floor, ceiling] of its lease and only
 * before its holder deadline, in the store's clock, so that no two
 * generators of the namespace ever issue the same ID (IDGEN-01), and one
 * generator's IDs strictly increase (IDGEN-03). IDs are non-negative
 * `Long`s: a layout uses at most 63 bits.
 *
 * Close it with [close], which seals it and releases its slot with the
 * largest tick issued; one collected without it is sealed and released in
 * the background.
 */
class IdGenerator internal constructor(
    private val native: NativeIdGenerator,
) {
    private val handle = native.handle().also { freeWhenCollected(this, it, Natives::freeIds) }

    /**
     * The next ID, without waiting: [NotReady] when none can be issued yet
     * (retryable), [Overflow] when the layout's time range is used up,
     * [LeaseLost] once the slot was lost or the generator closed (IDGEN-04).
     */
    fun nextNow(): Long = Natives.nextNow(handle).also { reachabilityFence(this) }

    /** The next ID, waiting while none can be issued yet. */
    suspend fun next(): Long = awaitNative { Natives.next(handle, it) }.also { reachabilityFence(this) }

    /**
     * As many IDs as can be issued now, 1 to [n] (at most 1,048,576); fails
     * as [nextNow] when none can.
     */
    fun takeNow(n: Int): LongArray = Natives.takeNow(handle, n).also { reachabilityFence(this) }

    /** [n] IDs (at most 1,048,576), waiting while they cannot be issued yet. */
    suspend fun take(n: Int): LongArray {
        val call = NativeCall()
        val ids = Natives.take(handle, n, call)
        reachabilityFence(this)
        return ids ?: call.await() as LongArray
    }

    /**
     * Seals the generator (nothing is issued after it) and releases its slot,
     * passing the largest tick issued on as the next holder's floor
     * (IDGEN-02). Fails [LeaseLost] if the slot was lost meanwhile; a second
     * close does nothing. It runs on to its end even if the calling coroutine
     * is cancelled.
     */
    suspend fun close() = native { native.closeGenerator() }

    /** The layout. */
    val layout: IdLayout get() = native.layout().toLayout()

    /** The node number every ID carries: the slot plus the namespace's offset. */
    val node: Int get() = native.node().toInt()

    /** The slot lease as last renewed. */
    val lease: SlotLease get() = native.lease().toLease()

    /** The start of the largest tick issued (ms since the Unix epoch; 0: none). */
    val lastIssued: Long get() = native.lastIssued().toLong()

    /** Whether the slot was lost; once true, nothing more is issued. */
    val lost: Boolean get() = native.lost()

    /** Why the slot was lost, once it was. */
    val lossReason: String? get() = native.lossReason()
}

/**
 * How an ID's 63 bits are split, high bits to low: [timeBits] of ticks of
 * [tickMs] since [epochMs], [nodeBits] of node number, [sequenceBits] of
 * sequence. A namespace's layout is fixed by its first use (SLOT-02).
 */
data class IdLayout(
    /** Bits of timestamp. */
    val timeBits: Int,
    /** Bits of node number. */
    val nodeBits: Int,
    /** Bits of sequence within one tick. */
    val sequenceBits: Int,
    /** The length of one tick in milliseconds. */
    val tickMs: Int,
    /** The time of tick 0, in milliseconds since the Unix epoch. */
    val epochMs: Long,
) {
    init {
        native { idLayoutCheck(toNative()) }
    }

    /** Takes [id] apart. */
    fun parts(id: Long): IdParts =
        native { idLayoutParts(toNative(), unsignedLong("ID", id)) }.let {
            IdParts(it.tick.toLong(), it.timestampMs.toLong(), it.node.toInt(), it.sequence.toLong())
        }

    /** A short description: `"41/10/12 ms"`. */
    fun describe(): String = native { idLayoutDescribe(toNative()) }

    /** The layouts the core names, and custom ones. */
    companion object {
        init {
            Natives.load()
        }

        /** 41 bits of milliseconds from 2026-01-01, 10 of node, 12 of sequence. */
        @JvmField
        val DEFAULT: IdLayout = named("default")

        /** The default epoch, 2026-01-01T00:00:00Z, in ms since the Unix epoch. */
        @JvmField
        val DEFAULT_EPOCH_MS: Long = DEFAULT.epochMs

        /** IDs below 2^53 (exact as JavaScript numbers): 41 bits of ms, 6 of node, 6 of sequence. */
        @JvmStatic
        fun jsSafe(): IdLayout = named("js_safe")

        /** 31 bits of seconds, 10 of node, 22 of sequence. */
        @JvmStatic
        fun seconds(): IdLayout = named("seconds")

        /** A layout of these splits, ticks of [tickMs] from [epochMs]; a bad one fails [InvalidArgument]. */
        @JvmStatic
        @JvmOverloads
        fun custom(
            timeBits: Int,
            nodeBits: Int,
            sequenceBits: Int,
            tickMs: Int = 1,
            epochMs: Long = DEFAULT_EPOCH_MS,
        ): IdLayout = IdLayout(timeBits, nodeBits, sequenceBits, tickMs, epochMs)

        private fun named(name: String) = native { idLayoutNamed(name) }.toLayout()
    }
}

/** An ID taken apart by [IdLayout.parts]. */
data class IdParts(
    /** Ticks since the layout's epoch. */
    val tick: Long,
    /** The tick's start in milliseconds since the Unix epoch. */
    val timestampMs: Long,
    /** The node number. */
    val node: Int,
    /** The sequence within the tick. */
    val sequence: Long,
)

internal fun IdLayout.toNative(): NativeIdLayout {
    fun bits(
        what: String,
        n: Int,
    ): UByte {
        if (n !in 0..255) throw InvalidArgument("an ID layout's $what must lie from 0 to 255, got $n")
        return n.toUByte()
    }
    return NativeIdLayout(
        timeBits = bits("time bits", timeBits),
        nodeBits = bits("node bits", nodeBits),
        sequenceBits = bits("sequence bits", sequenceBits),
        tickMs = unsigned("tick", tickMs),
        epochMs = unsignedLong("epoch", epochMs),
    )
}

internal fun NativeIdLayout.toLayout() =
    IdLayout(timeBits.toInt(), nodeBits.toInt(), sequenceBits.toInt(), tickMs.toInt(), epochMs.toLong())
