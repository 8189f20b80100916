//! Asynchronous exports: the core's future is polled once at the call, on
//! the JS thread inside the runtime's context; if it is done by then (most
//! calls on the embedded store), its value is returned (or its error
//! thrown) at once. Otherwise the call returns a promise, and the future is
//! parked until it is first woken (a reply from the server store, a grant
//! pushed to a waiter): the wake spawns it on the tokio runtime (the core's
//! process runtime, or the test runtime of `leasehold/testing`'s stores)
//! from the thread that woke it, so no runtime thread is woken just to
//! poll it again, and the runtime settles the promise when it is done. The
//! JS layer awaits either. The first poll and the panic capture are the
//! bridge's (`leasehold_bridge::poll_here`, `Caught`); the parking and the
//! deferred promise are Node's own.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Wake, Waker};

use leasehold_bridge::{poll_here, Caught};
use napi::bindgen_prelude::{Either, Object, ToNapiValue};
use napi::{Env, JsDeferred};
use tokio::runtime::Handle;

use crate::errors;

/// What an asynchronous export returns: the value, when the work was done
/// at the call, or a promise of it.
pub(crate) type Eventually<'env, T> = Either<T, Object<'env>>;

/// Runs `work`: polled once here, then on `runtime` once woken if it is not
/// done. A failure is thrown or rejected as a JS error (a panic becomes
/// `INTERNAL`). Until it settles, the promise keeps Node's event loop
/// alive, as pending I/O does.
pub(crate) fn spawn<'env, T, F>(
    env: &'env Env,
    runtime: &Handle,
    work: F,
) -> napi::Result<Eventually<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
{
    let mut work: Work<T> = Caught::new(Box::pin(work));
    let parked = Arc::new(Parked {
        runtime: runtime.clone(),
        woken: AtomicBool::new(false),
        slot: Mutex::new(None),
    });
    let waker = Waker::from(parked.clone());
    if let Poll::Ready(outcome) = poll_here(runtime, Pin::new(&mut work), &waker) {
        return match outcome {
            Ok(value) => Ok(Either::A(value)),
            Err(e) => Err(errors::rejection(env, &e)),
        };
    }
    let (deferred, promise) = env.create_deferred()?;
    parked.park(work, deferred);
    Ok(Either::B(promise))
}

/// The work of an export, whose panic is its `Internal` error.
type Work<T> = Caught<dyn Future<Output = leasehold::Result<T>> + Send + 'static>;

/// The promise of a work, settled on the JS thread with its outcome.
type Settle<T> = JsDeferred<T, Box<dyn FnOnce(Env) -> napi::Result<T> + Send>>;

/// A pending work, waiting for its first wake to be spawned on `runtime`.
struct Parked<T: ToNapiValue + Send + 'static> {
    runtime: Handle,
    /// Set by the first wake, even one that came while the work was polled here.
    woken: AtomicBool,
    slot: Mutex<Option<(Work<T>, Settle<T>)>>,
}

impl<T: ToNapiValue + Send + 'static> Parked<T> {
    /// Leaves the work for its wake, or spawns it now if it was woken already.
    fn park(&self, work: Work<T>, deferred: Settle<T>) {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        if self.woken.load(Ordering::SeqCst) {
            drop(slot);
            self.run(work, deferred);
        } else {
            *slot = Some((work, deferred));
        }
    }

    /// Drives the work to its end on the runtime and settles its promise.
    fn run(&self, work: Work<T>, deferred: Settle<T>) {
        self.runtime.spawn(async move {
            let outcome = work.await;
            deferred.resolve(Box::new(move |env| {
                outcome.map_err(|e| errors::rejection(&env, &e))
            }));
        });
    }
}

impl<T: ToNapiValue + Send + 'static> Wake for Parked<T> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        let parked = self.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((work, deferred)) = parked {
            self.run(work, deferred);
        }
    }
}

/// The runtime of the stores `memory()` and `connect()` open: the core's,
/// one per process.
pub(crate) fn process_runtime() -> Handle {
    leasehold::runtime::process_runtime()
}
