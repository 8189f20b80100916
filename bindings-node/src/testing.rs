//! Test hooks (the JS module `leasehold/testing`): embedded stores on a
//! virtual clock, duration parsing for the scenario runner, and panics on
//! purpose to show they become `INTERNAL` errors.
//!
//! A test store and its clock run on one current-thread runtime of their
//! own (on a thread of its own, off Node's event loop), as the Rust runner
//! runs the scenarios: `advance` moves the clock one sleeper's deadline at a
//! time and lets every task that step woke run before it moves on, so the
//! runs are the same run whatever else loads the machine.

use std::sync::OnceLock;
use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::{MemoryOptions, Store};
use napi::Env;
use napi_derive::napi;
use tokio::runtime::{Builder, Handle};

use crate::durations::{self, JsDuration};
use crate::errors::{thrown, Thrown};
use crate::promise::{self, Eventually};
use crate::store::NativeStore;

/// The runtime of the test stores: current-thread, driven by a thread of its own.
fn test_runtime() -> Handle {
    static RUNTIME: OnceLock<Handle> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let runtime = Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the test runtime starts");
            let handle = runtime.handle().clone();
            std::thread::Builder::new()
                .name("leasehold-test".into())
                .spawn(move || runtime.block_on(std::future::pending::<()>()))
                .expect("the test runtime's thread starts");
            handle
        })
        .clone()
}

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

    /// Moves the clock by `by` on the test runtime (`VirtualClock::advance`),
    /// firing each timer due meanwhile in order.
    #[napi(catch_unwind)]
    pub fn advance<'env>(
        &self,
        env: &'env Env,
        by: JsDuration,
    ) -> napi::Result<Eventually<'env, ()>> {
        let clock = self.clock.clone();
        let by = durations::duration("by", by);
        promise::spawn(env, &test_runtime(), async move {
            clock.advance(by?).await;
            Ok(())
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
/// waiters poll instead of being pushed grants unless `push`. It runs on
/// the test runtime.
#[napi(catch_unwind)]
pub fn memory_with(clock: Option<&NativeVirtualClock>, renewal: bool, push: bool) -> NativeStore {
    let mut options = MemoryOptions::default().renewal(renewal).push(push);
    if let Some(c) = clock {
        options = options.clock(c.clock.clone().into());
    }
    let runtime = test_runtime();
    let _entered = runtime.enter();
    NativeStore::new(Store::memory_with(options), runtime.clone())
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
#[napi(catch_unwind)]
pub fn panic_later<'env>(env: &'env Env, message: String) -> napi::Result<Eventually<'env, ()>> {
    promise::spawn(env, &promise::process_runtime(), async move {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if !message.is_empty() {
            panic!("{message}");
        }
        Ok(())
    })
}
