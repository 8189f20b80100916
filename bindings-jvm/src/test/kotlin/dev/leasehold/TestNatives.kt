package dev.leasehold

/**
 * The JNI path's test hooks (`src/natives/testing.rs`, registered only by
 * the library built with the feature `testing`): natives that panic on
 * purpose.
 */
object TestNatives {
    init {
        // The library registers these natives when it loads, which `Natives` does.
        Natives.cleaner
    }

    /** Panics in the native itself. */
    @JvmStatic external fun panicNow(): Long

    /** Panics in the task that would answer [call]. */
    @JvmStatic @JvmName("panicLater")
    internal external fun panicLater(call: NativeCall): Long
}
