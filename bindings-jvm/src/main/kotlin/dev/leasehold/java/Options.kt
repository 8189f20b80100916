package dev.leasehold.java

import dev.leasehold.IdLayout
import java.time.Duration

/**
 * How to connect ([Leasehold.connect]): immutable; each `with…` returns a
 * copy. [token] is the server store's (LOCK-14); [user] and [password]
 * etcd's; the PEM texts set up TLS.
 */
@ConsistentCopyVisibility
data class ConnectOptions private constructor(
    val token: String? = null,
    val caPem: String? = null,
    val user: String? = null,
    val password: String? = null,
    val clientCertPem: String? = null,
    val clientKeyPem: String? = null,
    val acceptOldEtcd: Boolean = false,
    val connectTimeout: Duration? = null,
    val identity: String? = null,
) {
    /** With the server store's token. */
    fun withToken(token: String) = copy(token = token)

    /** With PEM certificates to trust for TLS. */
    fun withCaPem(pem: String) = copy(caPem = pem)

    /** With etcd's user and password. */
    fun withUser(
        user: String,
        password: String,
    ) = copy(user = user, password = password)

    /** With a PEM client certificate and its key, for TLS client authentication. */
    fun withClientCert(
        certPem: String,
        keyPem: String,
    ) = copy(clientCertPem = certPem, clientKeyPem = keyPem)

    /** Opens an etcd older than DIST-08's minimum versions. */
    fun withAcceptOldEtcd(accept: Boolean) = copy(acceptOldEtcd = accept)

    /** With a bound on one connection attempt. */
    fun withConnectTimeout(timeout: Duration) = copy(connectTimeout = timeout)

    /**
     * Known as [name] wherever the store shows a holder (WHO-01; by default
     * `hostname:pid`).
     */
    fun withIdentity(name: String) = copy(identity = name)

    /** The defaults. */
    companion object {
        /** No token, no TLS settings, the core's timeout. */
        @JvmStatic
        fun defaults() = ConnectOptions()
    }
}

/**
 * A lock's options ([Store.lock]): immutable; each `with…` returns a copy;
 * unset, the core's defaults (ttl 10 s, no maxHold, no bound on waiting).
 */
@ConsistentCopyVisibility
data class LockOptions private constructor(
    val ttl: Duration? = null,
    val maxHold: Duration? = null,
    val wait: Duration? = null,
    val margin: Duration? = null,
) {
    /** With the ttl of its leases. */
    fun withTtl(ttl: Duration) = copy(ttl = ttl)

    /** With a bound on one hold, whatever its renewals (LOCK-12). */
    fun withMaxHold(maxHold: Duration) = copy(maxHold = maxHold)

    /** With a bound on waiting in line. */
    fun withWait(wait: Duration) = copy(wait = wait)

    /** With how long before the store's expiry a holder declares its lease lost. */
    fun withMargin(margin: Duration) = copy(margin = margin)

    /** The defaults. */
    companion object {
        /** The core's defaults. */
        @JvmStatic
        fun defaults() = LockOptions()
    }
}

/**
 * An ID generator's options ([Store.ids]): immutable; each `with…` returns a
 * copy; unset, the core's defaults (layout 41/10/12 ms, lead 1 s).
 */
@ConsistentCopyVisibility
data class IdsOptions private constructor(
    val layout: IdLayout? = null,
    val limit: Int? = null,
    val offset: Int? = null,
    val ttl: Duration? = null,
    val tolerance: Duration? = null,
    val timeout: Duration? = null,
    val maxLead: Duration? = null,
    val ownerKey: String? = null,
    val preferred: Int? = null,
) {
    /** With the bit layout, fixed by the namespace's first use. */
    fun withLayout(layout: IdLayout) = copy(layout = layout)

    /** With the namespace's number of slots. */
    fun withLimit(limit: Int) = copy(limit = limit)

    /** With what a node number adds to the slot. */
    fun withOffset(offset: Int) = copy(offset = offset)

    /** With the slot lease's ttl. */
    fun withTtl(ttl: Duration) = copy(ttl = ttl)

    /** With the slot lease's tolerance. */
    fun withTolerance(tolerance: Duration) = copy(tolerance = tolerance)

    /** With a bound on one slot call. */
    fun withTimeout(timeout: Duration) = copy(timeout = timeout)

    /** With how far ahead of the store's clock IDs may be issued. */
    fun withMaxLead(maxLead: Duration) = copy(maxLead = maxLead)

    /** With the owner key the slot is leased under. */
    fun withOwnerKey(ownerKey: String) = copy(ownerKey = ownerKey)

    /** With the slot to try first. */
    fun withPreferred(slot: Int) = copy(preferred = slot)

    /** The defaults. */
    companion object {
        /** The core's defaults. */
        @JvmStatic
        fun defaults() = IdsOptions()
    }
}

/**
 * A slot namespace's options ([Store.slots]): immutable; each `with…`
 * returns a copy; unset, the core's defaults. The namespace's first use
 * fixes its limit, tolerance, offset and layout (SLOT-02).
 */
@ConsistentCopyVisibility
data class SlotsOptions private constructor(
    val limit: Int? = null,
    val ttl: Duration? = null,
    val tolerance: Duration? = null,
    val offset: Int? = null,
    val margin: Duration? = null,
    val timeout: Duration? = null,
    val layout: IdLayout? = null,
) {
    /** With the number of slots. */
    fun withLimit(limit: Int) = copy(limit = limit)

    /** With the ttl of this handle's leases. */
    fun withTtl(ttl: Duration) = copy(ttl = ttl)

    /** With how far a lease's ceiling lies beyond its expiry. */
    fun withTolerance(tolerance: Duration) = copy(tolerance = tolerance)

    /** With what a node number adds to the slot. */
    fun withOffset(offset: Int) = copy(offset = offset)

    /** With how long before a held slot's expiry its holder declares it lost. */
    fun withMargin(margin: Duration) = copy(margin = margin)

    /** With a bound on one slot call (SLOT-07). */
    fun withTimeout(timeout: Duration) = copy(timeout = timeout)

    /** With the ID layout the namespace is fixed to. */
    fun withLayout(layout: IdLayout) = copy(layout = layout)

    /** The defaults. */
    companion object {
        /** The core's defaults. */
        @JvmStatic
        fun defaults() = SlotsOptions()
    }
}
