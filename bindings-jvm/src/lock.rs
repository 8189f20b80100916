//! Locks: a named family of keys and its options. Asking for a key is on
//! the hot path (`natives::holds`).

use std::sync::Arc;

use leasehold::driver::HolderInfo;
use leasehold::Lock;
use leasehold_bridge::Cancel;

use crate::calls;
use crate::durations;
use crate::errors::NativeError;
use crate::natives::handles;

/// Who holds a key (WHO-02), as `Lock.holder` answers it; durations in
/// nanoseconds.
#[derive(uniffi::Record)]
pub struct NativeHolderInfo {
    /// The identity of the store handle that took the lease (WHO-01).
    pub identity: String,
    /// The lease's fence.
    pub fence: u64,
    /// How long ago the lease was granted.
    pub held_for: i64,
    /// How long the store keeps it unless renewed; `None`: not by time.
    pub expires_in: Option<i64>,
    /// How many requests wait in the key's line.
    pub waiting: u64,
}

impl From<HolderInfo> for NativeHolderInfo {
    fn from(h: HolderInfo) -> NativeHolderInfo {
        NativeHolderInfo {
            identity: h.identity,
            fence: h.fence,
            held_for: durations::nanos(h.held_for),
            expires_in: h.expires_in.map(durations::nanos),
            waiting: u64::try_from(h.waiting).unwrap_or(u64::MAX),
        }
    }
}

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

    /// Who holds `key` now, from a linearizable read of the store
    /// (WHO-02); `None` when nobody does.
    pub async fn holder(&self, key: String) -> Result<Option<NativeHolderInfo>, NativeError> {
        let lock = self.lock.clone();
        calls::spawn(Cancel::Drop, async move {
            Ok(lock.holder(&key).await?.map(NativeHolderInfo::from))
        })
        .await
    }

    /// A handle on this lock for the natives of the hot path
    /// (`natives::holds`): a reference of its own, freed once by
    /// `Natives.freeLock`.
    pub fn handle(self: Arc<Self>) -> i64 {
        handles::into_handle(self)
    }
}
