//! Locks: a named family of keys and its options. Asking for a key is on
//! the hot path (`natives::holds`).

use std::sync::Arc;

use leasehold::Lock;

use crate::durations;
use crate::natives::handles;

/// A lock: a named family of keys with its options (`leasehold::Lock`).
#[derive(uniffi::Object)]
pub struct NativeLock {
    lock: Lock,
}

impl NativeLock {
    /// Wraps a core lock.
    pub(crate) fn new(lock: Lock) -> Arc<NativeLock> {
        Arc::new(NativeLock { lock })
    }

    /// The core lock.
    pub(crate) fn core(&self) -> &Lock {
        &self.lock
    }
}

#[uniffi::export]
impl NativeLock {
    /// The lock's name.
    pub fn name(&self) -> String {
        self.lock.name().to_owned()
    }

    /// The ttl of its leases, in nanoseconds.
    pub fn ttl(&self) -> i64 {
        durations::nanos(self.lock.ttl())
    }

    /// Its maxHold in nanoseconds, or `None`.
    pub fn max_hold(&self) -> Option<i64> {
        self.lock.max_hold().map(durations::nanos)
    }

    /// Its bound on waiting in line in nanoseconds, or `None`.
    pub fn wait(&self) -> Option<i64> {
        self.lock.wait().map(durations::nanos)
    }

    /// The holder's margin before the store's expiry, in nanoseconds.
    pub fn margin(&self) -> i64 {
        durations::nanos(self.lock.margin())
    }

    /// A handle on this lock for the natives of the hot path
    /// (`natives::holds`): a reference of its own, freed once by
    /// `Natives.freeLock`.
    pub fn handle(self: Arc<Self>) -> i64 {
        handles::into_handle(self)
    }
}
