package dev.leasehold

import dev.leasehold.uniffi.InternalException
import dev.leasehold.uniffi.NativeException
import java.nio.charset.CharacterCodingException

/**
 * A Leasehold failure (ERR-01): [code] is its stable code as the contracts
 * write it (`Lost`, `InvalidTtl`, …), the same in every language; each code
 * has a subclass of its own, named like it ([LeaseLost] for `Lost`).
 * Unchecked, in Kotlin and in Java alike.
 */
sealed class LeaseholdException(
    /** The stable code (ERR-01). */
    val code: String,
    message: String,
    cause: Throwable? = null,
) : RuntimeException(message, cause) {
    /** The code, for Java (`e.code()`). */
    fun code(): String = code
}

/**
 * The lease is gone: it ran out, was revoked at maxHold, released
 * elsewhere, or its store restarted or closed (code `Lost`); or a held slot
 * or an ID generator's slot is. From `hold`, [cause] is the held block's own
 * failure, if it failed (LOCK-10).
 */
class LeaseLost(
    message: String,
    /** Why the lease was lost (`expired`, `revoked`, `unknown`, `restarted`, `closed`), if known. */
    val lossReason: String? = null,
    cause: Throwable? = null,
) : LeaseholdException("Lost", message, cause) {
    /** The loss reason, for Java (`e.lossReason()`). */
    fun lossReason(): String? = lossReason
}

/** A ttl, maxHold, wait, margin or extension out of range (code `InvalidTtl`). */
class InvalidTtl(message: String) : LeaseholdException("InvalidTtl", message)

/** An empty lock name, key, lease name, namespace or owner (code `EmptyName`). */
class EmptyName(message: String) : LeaseholdException("EmptyName", message)

/** A read-only connection asked to hold or to take a slot (code `PermissionDenied`). */
class PermissionDenied(message: String) : LeaseholdException("PermissionDenied", message)

/** No valid credentials at connect (code `Unauthenticated`). */
class Unauthenticated(message: String) : LeaseholdException("Unauthenticated", message)

/** A hold or acquire spent its `wait` in line (code `WaitTimeout`). */
class WaitTimeout(message: String) : LeaseholdException("WaitTimeout", message)

/** The call was given up (code `Cancelled`). */
class Cancelled(message: String) : LeaseholdException("Cancelled", message)

/** The store cannot be reached, or a key's line is full; retryable (code `Unavailable`). */
class Unavailable(message: String) : LeaseholdException("Unavailable", message)

/**
 * A slot call got no answer in time (code `Timeout`, SLOT-07): its outcome
 * is unknown, and repeating it is safe. [Leasehold.isTimeout] recognises it.
 */
class Timeout(message: String) : LeaseholdException("Timeout", message)

/** A slot namespace opened with other parameters than its first use (code `NamespaceMismatch`). */
class NamespaceMismatch(message: String) : LeaseholdException("NamespaceMismatch", message)

/** A malformed, oversized or hostile frame or request (code `Protocol`). */
class Protocol(message: String) : LeaseholdException("Protocol", message)

/** A bug in Leasehold, such as a panic of the native library (code `Internal`). */
class Internal(message: String) : LeaseholdException("Internal", message)

/** An argument not of the form the call takes (code `InvalidArgument`). */
class InvalidArgument(message: String) : LeaseholdException("InvalidArgument", message)

/** A call on a closed store or object (code `Closed`). */
class Closed(message: String) : LeaseholdException("Closed", message)

/** Nothing can be issued yet; retryable (code `NotReady`, IDGEN-04). */
class NotReady(message: String) : LeaseholdException("NotReady", message)

/** An ID layout's time range is used up (code `Overflow`, IDGEN-04). */
class Overflow(message: String) : LeaseholdException("Overflow", message)

/** The exception of a failure of the native library. */
internal fun exceptionOf(code: String, message: String, lossReason: String?): LeaseholdException =
    when (code) {
        "Lost" -> LeaseLost(message, lossReason)
        "InvalidTtl" -> InvalidTtl(message)
        "EmptyName" -> EmptyName(message)
        "PermissionDenied" -> PermissionDenied(message)
        "Unauthenticated" -> Unauthenticated(message)
        "WaitTimeout" -> WaitTimeout(message)
        "Cancelled" -> Cancelled(message)
        "Unavailable" -> Unavailable(message)
        "Timeout" -> Timeout(message)
        "NamespaceMismatch" -> NamespaceMismatch(message)
        "Protocol" -> Protocol(message)
        "InvalidArgument" -> InvalidArgument(message)
        "Closed" -> Closed(message)
        "NotReady" -> NotReady(message)
        "Overflow" -> Overflow(message)
        else -> Internal(if (code == "Internal") message else "$code: $message")
    }

/**
 * Runs a call of the native library, its failures as [LeaseholdException]s:
 * the library's own, a panic in it ([Internal]), and a string that is not
 * valid Unicode (a lone surrogate), which cannot be passed as UTF-8
 * ([InvalidArgument]).
 */
internal inline fun <T> native(call: () -> T): T =
    try {
        call()
    } catch (e: NativeException.Failure) {
        throw exceptionOf(e.code, e.detail, e.lossReason)
    } catch (e: InternalException) {
        throw Internal("a bug in Leasehold (the native library failed): ${e.message}")
    } catch (e: CharacterCodingException) {
        throw InvalidArgument("a string is not valid Unicode (a lone surrogate?): ${e.message}")
    }
