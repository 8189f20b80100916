//! Locks: asking for a key, waiting in line or not.

use std::sync::Arc;

use leasehold::give_up;
use leasehold::{HoldOptions, Lock};

use crate::calls;
use crate::durations;
use crate::errors::NativeError;
use crate::holding::NativeHolding;
use crate::kept;

/// The error message of a `tryBegin` given up by its caller.
const GAVE_UP_TRYING: &str = "gave up trying for the key";

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

    /// Waits in line for `key` (`Lock::begin`) as long as the lock's `wait`
    /// allows. Cancelling the awaiting coroutine gives up waiting and leaves
    /// the line (LOCK-18); a grant that came meanwhile is released. A lease
    /// whose deadline came before this call could return it is released and
    /// the call fails `Lost`.
    pub async fn begin(&self, key: String) -> Result<Arc<NativeHolding>, NativeError> {
        self.begin_with(key, None).await
    }

    /// [`NativeLock::begin`], waiting in line at most `wait` nanoseconds
    /// (a separate export: an optional argument would cost every call an
    /// allocation in the JVM).
    pub async fn begin_within(
        &self,
        key: String,
        wait: i64,
    ) -> Result<Arc<NativeHolding>, NativeError> {
        self.begin_with(key, Some(wait)).await
    }

    /// Holds `key` if it is free (`Lock::try_begin`); `None` when it is held
    /// (LOCK-17), `Lost` as for `begin`. Cancelling the awaiting coroutine stops waiting for the
    /// store's answer; a grant that answers later is released (LOCK-18).
    pub async fn try_begin(&self, key: String) -> Result<Option<Arc<NativeHolding>>, NativeError> {
        let lock = self.lock.clone();
        calls::cancellable(|cancel| async move {
            let attempt = async move { lock.try_begin(&key).await };
            let holding = give_up::unless_given_up(
                Some(cancel),
                &calls::runtime(),
                GAVE_UP_TRYING,
                attempt,
                give_up::dropped,
            )
            .await?;
            Ok(match holding {
                Some(holding) => Some(NativeHolding::new(kept::unless_lost(holding).await?)),
                None => None,
            })
        })
        .await
    }
}

impl NativeLock {
    fn begin_with(
        &self,
        key: String,
        wait: Option<i64>,
    ) -> impl std::future::Future<Output = Result<Arc<NativeHolding>, NativeError>> {
        let lock = self.lock.clone();
        calls::cancellable(move |cancel| async move {
            let options = HoldOptions {
                wait: durations::optional("wait", wait)?,
                cancel: Some(cancel),
            };
            let holding = kept::unless_lost(lock.begin(&key, &options).await?).await?;
            Ok(NativeHolding::new(holding))
        })
    }
}
