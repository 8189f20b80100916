//! Promises settled from the core's process runtime.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::Env;

use crate::errors;

/// Runs `work` on the process runtime and returns a promise of its outcome:
/// resolved with its value, or rejected with its error as a JS error (a
/// panic becomes `INTERNAL`). Until it settles, the promise keeps Node's
/// event loop alive, as pending I/O does.
pub(crate) fn spawn<'env, T, F>(env: &'env Env, work: F) -> napi::Result<Object<'env>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
{
    let (deferred, promise) = env.create_deferred()?;
    leasehold::runtime::process_runtime().spawn(async move {
        let outcome = AssertUnwindSafe(work)
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| Err(errors::panicked(panic)));
        deferred.resolve(move |env| outcome.map_err(|e| errors::rejection(&env, &e)));
    });
    Ok(promise)
}
