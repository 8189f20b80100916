//! Core futures awaited from Kotlin coroutines.
//!
//! An asynchronous export awaits the bridge's `Spawned` future over its
//! core future (`leasehold_bridge::Spawned`). uniffi polls it from the
//! JVM's calling thread; its first poll runs the core future right there,
//! inside the process runtime's context, so that a call the core answers
//! at once (a free key of the embedded store, a release) makes no thread
//! hop and no callback into the JVM. A core future still pending after
//! that first poll goes on as a task of the core's process runtime, never
//! of a runtime of uniffi's own, and the export only waits for that task:
//! the task's waker is what wakes the coroutine. A panic of the core (a
//! bug) becomes its `Internal` error (ERR-03). Cancelling the awaiting
//! coroutine drops the future, which does what its `Cancel` says.

use std::future::Future;

use leasehold::CancellationToken;
use leasehold_bridge::{Cancel, Spawned};
use tokio::runtime::Handle;

use crate::errors::NativeError;

/// The runtime every call runs on: the core's, one per process.
pub(crate) fn runtime() -> Handle {
    leasehold::runtime::process_runtime()
}

/// Runs `work` (its first poll on the caller's thread); dropped before the
/// work is done, it does what `cancel` says.
pub(crate) async fn spawn<T, F>(cancel: Cancel, work: F) -> Result<T, NativeError>
where
    T: Send + 'static,
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
{
    Ok(Spawned::new(runtime(), cancel, work).await?)
}

/// Runs the work `make` builds with a fresh token, which dropping the
/// call's future fires (`Cancel::Token`).
pub(crate) fn cancellable<T, F>(
    make: impl FnOnce(CancellationToken) -> F,
) -> impl Future<Output = Result<T, NativeError>>
where
    T: Send + 'static,
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
{
    let (token, cancel) = Cancel::token();
    spawn(cancel, make(token))
}
