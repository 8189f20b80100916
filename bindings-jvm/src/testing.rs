//! Test hooks, compiled only with the feature `testing` (the library the
//! JVM tests load; the shipped jar's has none): an embedded store on a
//! virtual clock that the test moves, the core's duration parser for the
//! shared scenarios, and panics on purpose, to see them become `Internal`.

use std::sync::Arc;
use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::{duration, MemoryOptions, Store};

use leasehold_bridge::Cancel;

use crate::calls;
use crate::durations;
use crate::errors::NativeError;
use crate::store::NativeStore;

/// A virtual clock (`leasehold::clock::VirtualClock`): it stands still
/// until `advance` moves it.
#[derive(uniffi::Object)]
pub struct NativeVirtualClock {
    clock: VirtualClock,
}

#[uniffi::export]
impl NativeVirtualClock {
    /// A clock at its origin.
    #[uniffi::constructor]
    pub fn new() -> Arc<NativeVirtualClock> {
        Arc::new(NativeVirtualClock {
            clock: VirtualClock::new(),
        })
    }

    /// Nanoseconds since the origin.
    pub fn now(&self) -> i64 {
        durations::nanos(self.clock.now().since_origin())
    }

    /// Moves the clock by `by` nanoseconds, one sleeper's deadline at a
    /// time, pausing `pause` nanoseconds of real time after each step so
    /// that the runtime's threads run what the step woke
    /// (`VirtualClock::advance_blocking`). Blocks the calling thread.
    pub fn advance(&self, by: i64, pause: i64) -> Result<(), NativeError> {
        let by = durations::duration("advance", by)?;
        let pause = durations::duration("pause", pause)?;
        self.clock.advance_blocking(by, pause);
        Ok(())
    }
}

/// An embedded store on `clock` (else the monotonic clock): `renewal` makes
/// its leases run out unless renewed, as on a server store; `push: false`
/// makes waiting poll.
#[uniffi::export]
pub fn memory_with(
    clock: Option<Arc<NativeVirtualClock>>,
    renewal: bool,
    push: bool,
) -> Arc<NativeStore> {
    let runtime = calls::runtime();
    let _entered = runtime.enter();
    let mut options = MemoryOptions::default().renewal(renewal).push(push);
    if let Some(clock) = clock {
        options = options.clock(clock.clock.clone().into());
    }
    NativeStore::new(Store::memory_with(options))
}

/// Parses a duration as the bindings take strings (`"30s"`, `"1m30s"`,
/// `"250ms"`) into nanoseconds; a bad one fails `InvalidTtl`.
#[uniffi::export]
pub fn parse_duration(text: String) -> Result<i64, NativeError> {
    let d: Duration = duration::parse(&text)?;
    Ok(durations::nanos(d))
}

/// Panics on purpose in a call that does not wait: uniffi catches it.
#[uniffi::export]
pub fn testing_panic() -> Result<(), NativeError> {
    panic!("a panic on purpose (testing_panic)")
}

/// Panics on purpose in a task of the runtime: the call fails `Internal`.
#[uniffi::export]
pub async fn testing_panic_async() -> Result<(), NativeError> {
    calls::spawn(Cancel::Drop, async {
        panic!("a panic on purpose (testing_panic_async)")
    })
    .await
}
