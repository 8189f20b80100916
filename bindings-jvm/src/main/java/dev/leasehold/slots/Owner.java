package dev.leasehold.slots;

import java.util.Objects;

/**
 * Who leases a slot: a stable key (a service, a deployment) and the
 * instance id of one process of it. An owner holds at most one slot of a
 * namespace; a new process of the same key takes a new instance id and is
 * given the slot its key held last, if it is free (SLOT-01).
 *
 * <p>{@code dev.leasehold.Leasehold.newOwner(key)} makes one with a fresh
 * instance id. The store refuses an empty key or instance ({@code EmptyName})
 * and one over 1,024 bytes ({@code InvalidArgument}).
 *
 * @param key the stable key
 * @param instance this process's instance id
 */
public record Owner(String key, String instance) {
    /** An owner; neither part may be null. */
    public Owner {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(instance, "instance");
    }
}
