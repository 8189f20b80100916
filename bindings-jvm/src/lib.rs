//! Leasehold for the JVM: the native library behind the Kotlin API
//! (`src/main/kotlin/dev/leasehold`), the Java API over it
//! (`…/dev/leasehold/java`) and the slot store SPI
//! (`src/main/java/dev/leasehold/slots`): the hot path (a hold's begin
//! and end, a lease's reads and loss, IDs) as JNI natives ([`natives`]),
//! the rest exported through uniffi.
//!
//! Every export only translates: JVM values into calls of the core, the
//! core's answers into uniffi records and objects, its errors into one
//! error, [`NativeError`](errors::NativeError), carrying the ERR-01 code.
//! Waiting, renewal, deadlines, loss and release are the core's. The
//! hand-written Kotlin layer builds the public API on these exports; the
//! Kotlin uniffi generates from this library is written by the build into
//! the target folder (`mk/jvm.mk`). The feature `testing` adds the test
//! hooks of `src/testing.rs`; the jar `make dist` ships is built without it.
//!
//! Asynchronous uniffi exports are `suspend` functions in Kotlin. Their core
//! future runs as a task of the core's process runtime
//! (`leasehold::runtime::process_runtime`), never of a runtime of uniffi's
//! own, and the exported future only waits for that task (see [`calls`]):
//! cancelling the awaiting coroutine drops it, which aborts the task, or
//! cancels the core call's token so that a call waiting in line leaves it
//! (LOCK-18), or lets a release run on to its end (LOCK-11).

pub mod calls;
pub mod durations;
pub mod errors;
pub mod idgen;
pub mod kept;
pub mod lock;
pub mod manual;
#[allow(unsafe_code)]
pub mod natives;
pub mod slots;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;

uniffi::setup_scaffolding!();
