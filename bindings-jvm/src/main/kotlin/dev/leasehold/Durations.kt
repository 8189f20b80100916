package dev.leasehold

import kotlin.time.Duration
import kotlin.time.Duration.Companion.nanoseconds

/**
 * A duration as the native library takes it: whole nanoseconds, signed, so
 * that a negative one reaches the core's checks (`InvalidTtl`); an infinite
 * one is the longest the library can be given.
 */
internal fun Duration.toNanos(): Long = inWholeNanoseconds

/** An optional duration in nanoseconds. */
internal fun Duration?.toOptionalNanos(): Long? = this?.inWholeNanoseconds

/** Nanoseconds from the native library as a duration. */
internal fun Long.nanos(): Duration = nanoseconds
