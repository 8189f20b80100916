//! A native call that may wait. Its first poll, on the caller's thread,
//! answers most calls at once (the native returns the answer). A call
//! still pending after it tells its `NativeCall` the task to cancel
//! (`pending(task)`) and is answered later from a thread of the core's
//! runtime, attached to the JVM once as a daemon named `leasehold`, by
//! `succeeded`, `succeededWith` or `failed` on that call. The `NativeCall`
//! frees the task once, when answered (`Natives.callEnded`) or cancelled
//! (`Natives.callCancel`); cancelling drops the call's future, which does
//! what its `Cancel` says (leave the line, run on to its end).

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use jni::objects::{GlobalRef, JObject};
use jni::sys::{jint, JNI_OK};
use jni::{JNIEnv, JavaVM};
use leasehold::{CancellationToken, Error, ErrorKind};
use leasehold_bridge::{noop_waker, panicked, Spawned};

use super::failure::{self, Answer};
use super::loaded::loaded;
use super::PENDING;
use crate::calls;

/// What a call's answer becomes in the JVM, on a runtime thread: a
/// `succeeded…` of the call (given the call and the answer).
pub(super) trait Deliver<T>:
    FnOnce(&mut JNIEnv<'_>, &JObject<'_>, T) -> jni::errors::Result<()> + Send + 'static
{
}

impl<T, F> Deliver<T> for F where
    F: FnOnce(&mut JNIEnv<'_>, &JObject<'_>, T) -> jni::errors::Result<()> + Send + 'static
{
}

/// The answer of `work` if its first poll has it; else `None`, and `call`
/// is answered later through `deliver`.
pub(super) fn answer<T: Send + 'static>(
    env: &mut JNIEnv<'_>,
    call: &JObject<'_>,
    mut work: Spawned<T>,
    deliver: impl Deliver<T>,
) -> Answer<Option<T>> {
    if let Poll::Ready(outcome) = Pin::new(&mut work).poll(&mut Context::from_waker(noop_waker())) {
        return Ok(Some(outcome?));
    }
    let loaded = loaded()?;
    let call = env.new_global_ref(call)?;
    let token = CancellationToken::new();
    let task = Box::into_raw(Box::new(token.clone())) as i64;
    if let Err(e) = loaded.pending(env, call.as_obj(), task) {
        // SAFETY: the call did not keep the task: it is still ours alone.
        drop(unsafe { Box::from_raw(task as *mut CancellationToken) });
        return Err(e.into());
    }
    calls::runtime().spawn(async move {
        tokio::select! {
            biased;
            () = token.cancelled() => {}
            outcome = work => answer_later(&call, outcome, deliver),
        }
    });
    Ok(None)
}

/// [`answer`] for work that answers nothing: 0 when done, else [`PENDING`]
/// and `call.succeeded(0)` later.
pub(super) fn answer_done(
    env: &mut JNIEnv<'_>,
    call: &JObject<'_>,
    work: Spawned<()>,
) -> Answer<i64> {
    let answer = answer(env, call, work, |env, call, ()| {
        loaded()?.succeeded(env, call, 0)
    })?;
    Ok(answer.map_or(PENDING, |()| 0))
}

/// Cancels the task a `NativeCall` was given, and frees it.
///
/// # Safety
///
/// `task` came from [`answer`] and is freed here, once.
pub(super) unsafe fn cancel(task: i64) {
    // SAFETY: the caller's promise.
    unsafe { Box::from_raw(task as *mut CancellationToken) }.cancel();
}

/// Frees the task of a `NativeCall` that was answered.
///
/// # Safety
///
/// As for [`cancel`].
pub(super) unsafe fn ended(task: i64) {
    // SAFETY: the caller's promise.
    drop(unsafe { Box::from_raw(task as *mut CancellationToken) });
}

/// Answers `call` from a runtime thread; a delivery that fails (a JVM out
/// of memory) is answered `Internal` instead, so that no caller waits forever.
fn answer_later<T>(call: &GlobalRef, outcome: leasehold::Result<T>, deliver: impl Deliver<T>) {
    let Ok(loaded) = loaded() else { return };
    let Some(mut env) = attached(loaded.vm()) else {
        return;
    };
    let delivered = catch_unwind(AssertUnwindSafe(|| {
        env.with_local_frame(8, |env| match outcome {
            Ok(value) => deliver(env, call.as_obj(), value),
            Err(error) => fail(env, call.as_obj(), &error),
        })
    }));
    let error = match delivered {
        Ok(Ok(())) => return,
        Ok(Err(e)) => Error::new(ErrorKind::Internal, format!("a JNI call failed: {e}")),
        Err(payload) => panicked(payload),
    };
    let _ = env.exception_clear();
    let _ = env.with_local_frame(8, |env| fail(env, call.as_obj(), &error));
    let _ = env.exception_clear();
}

fn fail(env: &mut JNIEnv<'_>, call: &JObject<'_>, error: &Error) -> jni::errors::Result<()> {
    let exception = failure::exception(env, error)?;
    loaded()?.failed(env, call, &exception)
}

/// This thread's environment, attached once as a daemon named `leasehold`
/// (the runtime's threads live as long as the process).
fn attached(vm: &JavaVM) -> Option<JNIEnv<'static>> {
    if let Ok(env) = vm.get_env() {
        // SAFETY: an attached thread's environment stays valid while it lives.
        return Some(unsafe { JNIEnv::from_raw(env.get_raw()).ok()? });
    }
    let raw = vm.get_java_vm_pointer();
    let mut args = jni::sys::JavaVMAttachArgs {
        version: jni::sys::JNI_VERSION_1_8,
        name: c"leasehold".as_ptr().cast_mut(),
        group: std::ptr::null_mut(),
    };
    let mut env = std::ptr::null_mut();
    // SAFETY: a valid JavaVM pointer; the arguments live for the call.
    let status: jint = unsafe {
        ((**raw).AttachCurrentThreadAsDaemon?)(raw, &mut env, std::ptr::addr_of_mut!(args).cast())
    };
    if status != JNI_OK {
        return None;
    }
    // SAFETY: the JVM just gave this thread's environment.
    unsafe { JNIEnv::from_raw(env.cast()).ok() }
}
