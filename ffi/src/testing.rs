//! Test hooks: an embedded store on a virtual clock that the caller moves,
//! the core's duration parser, and a deliberate panic (to see it become
//! `LH_INTERNAL`). For the bindings' tests and the shared scenarios.

use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::{duration, runtime, Error, ErrorKind, MemoryOptions, Store};

use crate::call::run;
use crate::error::lh_error;
use crate::handles::{self, OnRuntime};
use crate::input;
use crate::store::lh_store;

/// A virtual clock: it stands still until `lh_clock_advance` moves it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_clock {
    /// The library's id of the clock; never dereferenced.
    pub id: u64,
}

/// How an embedded store opened by `lh_store_memory_with` behaves.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct lh_memory_options {
    /// Its clock; the zero handle is the process's monotonic clock.
    pub clock: lh_clock,
    /// Whether leases run out unless renewed, as on a server store.
    pub renewal: bool,
    /// Whether grants are pushed to waiters (else waiting polls); the
    /// embedded store pushes, so `lh_store_memory` has it on.
    pub push: bool,
}

/// Makes a virtual clock at its origin.
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_clock_new(out: *mut lh_clock) -> *mut lh_error {
    run(|| {
        input::check_out("lh_clock", out)?;
        let id = handles::insert(VirtualClock::new());
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_clock", out, lh_clock { id }) }
    })
}

/// Moves the clock by `by_ns`, one sleeper's deadline at a time, pausing
/// `pause_ns` of real time after each step so that the runtime's threads
/// run what the step woke (`VirtualClock::advance_blocking`). Blocks.
#[no_mangle]
pub extern "C" fn lh_clock_advance(clock: lh_clock, by_ns: i64, pause_ns: i64) -> *mut lh_error {
    run(|| {
        let by = input::duration("advance", by_ns)?;
        let pause = input::duration("pause", pause_ns)?;
        let clock = handles::get::<VirtualClock>(clock.id)?;
        clock.advance_blocking(by, pause);
        Ok(())
    })
}

/// Frees the clock's handle (stores on it keep it).
#[no_mangle]
pub extern "C" fn lh_clock_free(clock: lh_clock) -> *mut lh_error {
    run(|| handles::remove::<VirtualClock>(clock.id).map(drop))
}

/// Opens an embedded store with `options` (NULL: a monotonic clock, no
/// renewal, and no push, all fields zero).
///
/// # Safety
/// `options` must be NULL or readable; `out` NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_store_memory_with(
    options: *const lh_memory_options,
    out: *mut lh_store,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_store", out)?;
        // SAFETY: passed on from the caller.
        let o = unsafe { input::options(options) };
        let mut memory = MemoryOptions::default().renewal(o.renewal).push(o.push);
        if let Some(clock) = handles::get_optional::<VirtualClock>(o.clock.id)? {
            memory = memory.clock(clock.into());
        }
        let id = handles::insert(OnRuntime {
            value: Store::memory_with(memory),
            runtime: runtime::process_runtime(),
        });
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_store", out, lh_store { id }) }
    })
}

/// Parses a duration as the bindings take strings (`"30s"`, `"1m30s"`,
/// `"250ms"`) into nanoseconds; a bad one fails `LH_INVALID_TTL`.
///
/// # Safety
/// `text` must be NULL or point to `len` readable bytes; `out_ns` NULL (an
/// error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_duration_parse(
    text: *const u8,
    len: usize,
    out_ns: *mut i64,
) -> *mut lh_error {
    run(|| {
        input::check_out("out_ns", out_ns)?;
        // SAFETY: passed on from the caller.
        let text = unsafe { input::string("duration", text, len) }?;
        let d: Duration = duration::parse(&text)?;
        let ns = i64::try_from(d.as_nanos()).map_err(|_| {
            Error::new(
                ErrorKind::InvalidTtl,
                format!("the duration {text:?} is too long"),
            )
        })?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("out_ns", out_ns, ns) }
    })
}

/// Panics inside the library: answers the `LH_INTERNAL` error every export
/// turns a panic into, instead of aborting the caller (ERR-03).
#[no_mangle]
pub extern "C" fn lh_testing_panic() -> *mut lh_error {
    run(|| panic!("lh_testing_panic was called"))
}
