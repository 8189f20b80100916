//! Asynchronous exports: the core's future is polled once at the call, on
//! the JS thread inside the runtime's context; if it is done by then (most
//! calls on the embedded store), its value is returned (or its error
//! thrown) at once. Otherwise the future goes on on a tokio runtime (the
//! core's process runtime, or the test runtime of `leasehold/testing`'s
//! stores) and the call returns a promise that it settles from there. The
//! JS layer awaits either.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::task::{Context, Poll};

use futures::FutureExt;
use napi::bindgen_prelude::{Either, Object, ToNapiValue};
use napi::Env;
use tokio::runtime::Handle;

use crate::errors;

/// What an asynchronous export returns: the value, when the work was done
/// at the call, or a promise of it.
pub(crate) type Eventually<'env, T> = Either<T, Object<'env>>;

/// Runs `work`: polled once here, then on `runtime` if it is not done. A
/// failure is thrown or rejected as a JS error (a panic becomes
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
    let mut work = Box::pin(AssertUnwindSafe(work).catch_unwind());
    let first = {
        let _entered = runtime.enter();
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        pin!(&mut work).poll(&mut cx)
    };
    if let Poll::Ready(outcome) = first {
        return match flatten(outcome) {
            Ok(value) => Ok(Either::A(value)),
            Err(e) => Err(errors::rejection(env, &e)),
        };
    }
    let (deferred, promise) = env.create_deferred()?;
    runtime.spawn(async move {
        let outcome = flatten(work.await);
        deferred.resolve(move |env| outcome.map_err(|e| errors::rejection(&env, &e)));
    });
    Ok(Either::B(promise))
}

/// A panic caught while the work ran, as an `Internal` error.
fn flatten<T>(
    outcome: Result<leasehold::Result<T>, Box<dyn std::any::Any + Send>>,
) -> leasehold::Result<T> {
    outcome.unwrap_or_else(|panic| Err(errors::panicked(panic)))
}

/// The runtime of the stores `memory()` and `connect()` open: the core's,
/// one per process.
pub(crate) fn process_runtime() -> Handle {
    leasehold::runtime::process_runtime()
}
