//! Test hooks (the JS module `leasehold/testing`): embedded stores on a
//! virtual clock, duration parsing for the scenario runner, and panics on
//! purpose to show they become `INTERNAL` errors.

use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::{MemoryOptions, Store};
use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;

use crate::durations::{self, JsDuration};
use crate::errors::{thrown, Thrown};
use crate::promise;
use crate::store::NativeStore;

/// A virtual clock (`leasehold::clock::VirtualClock`) that only tests move.
#[napi]
pub struct NativeVirtualClock {
    clock: VirtualClock,
}

#[napi]
impl NativeVirtualClock {
    /// A clock at its origin.
    #[napi(constructor, catch_unwind)]
    pub fn new() -> NativeVirtualClock {
        NativeVirtualClock {
            clock: VirtualClock::new(),
        }
    }

    /// Milliseconds since the origin.
    #[napi(getter, catch_unwind)]
    pub fn now(&self) -> f64 {
        durations::millis(self.clock.now().since_origin())
    }

    /// Moves the clock by `by`, one sleeper's deadline at a time, pausing
    /// `pause_ms` of real time after each step so that the runtime's threads
    /// run what it woke (`VirtualClock::advance_blocking`), off the event loop.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn advance<'env>(
        &self,
        env: &'env Env,
        by: JsDuration,
        pause_ms: f64,
    ) -> napi::Result<Object<'env>> {
        let clock = self.clock.clone();
        let by = durations::duration("by", by);
        let pause = durations::duration("pause", napi::bindgen_prelude::Either::A(pause_ms));
        promise::spawn(env, async move {
            let (by, pause) = (by?, pause?);
            tokio::task::spawn_blocking(move || clock.advance_blocking(by, pause))
                .await
                .map_err(|e| leasehold::Error::new(leasehold::ErrorKind::Internal, e.to_string()))
        })
    }
}

impl Default for NativeVirtualClock {
    fn default() -> NativeVirtualClock {
        NativeVirtualClock::new()
    }
}

/// An embedded store on `clock` (a virtual one, or the real clock when
/// `null`), whose leases run out unless renewed when `renewal`, and whose
/// waiters poll instead of being pushed grants unless `push`.
#[napi(catch_unwind)]
pub fn memory_with(clock: Option<&NativeVirtualClock>, renewal: bool, push: bool) -> NativeStore {
    let mut options = MemoryOptions::default().renewal(renewal).push(push);
    if let Some(c) = clock {
        options = options.clock(c.clock.clone().into());
    }
    NativeStore::new(Store::memory_with(options))
}

/// A duration string in milliseconds, as every call reads it.
#[napi(catch_unwind)]
pub fn parse_duration(text: String) -> Result<f64, Thrown> {
    leasehold::duration::parse(&text)
        .map(durations::millis)
        .map_err(thrown)
}

/// Panics at once: the call throws `INTERNAL` instead of crashing Node.
#[napi(catch_unwind)]
pub fn panic_now(message: String) {
    panic!("{message}");
}

/// Panics on the runtime: the promise rejects `INTERNAL`.
#[napi(catch_unwind, ts_return_type = "Promise<void>")]
pub fn panic_later<'env>(env: &'env Env, message: String) -> napi::Result<Object<'env>> {
    promise::spawn(env, async move {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if !message.is_empty() {
            panic!("{message}");
        }
        Ok(())
    })
}
