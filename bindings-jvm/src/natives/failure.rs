//! How a native call fails: a core error thrown as the
//! `LeaseholdException` of its ERR-01 code, built by the Kotlin layer
//! (`Natives.exception`), or a Java exception already pending, left as it
//! is. A panic is `Internal` (ERR-03): nothing unwinds into the JVM.

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::{JObject, JString};
use jni::JNIEnv;
use leasehold::{Error, ErrorKind};
use leasehold_bridge::panicked;

use super::loaded::loaded;

/// Why a native call has no answer.
pub(super) enum Failure {
    /// The core's error, to throw as its exception.
    Core(Error),
    /// A Java exception is pending already.
    Java,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Core(e)
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Failure {
        match e {
            jni::errors::Error::JavaException => Failure::Java,
            other => Failure::Core(Error::new(
                ErrorKind::Internal,
                format!("a JNI call failed: {other}"),
            )),
        }
    }
}

/// A native call's answer, or why it has none.
pub(super) type Answer<T> = Result<T, Failure>;

/// Runs `call`, its failure thrown into the JVM: the native returns
/// `fallback`, which the JVM never reads, since an exception is pending.
pub(super) fn guarded<'local, T>(
    env: &mut JNIEnv<'local>,
    fallback: T,
    call: impl FnOnce(&mut JNIEnv<'local>) -> Answer<T>,
) -> T {
    let failure = match catch_unwind(AssertUnwindSafe(|| call(env))) {
        Ok(Ok(answer)) => return answer,
        Ok(Err(failure)) => failure,
        Err(payload) => Failure::Core(panicked(payload)),
    };
    if let Failure::Core(error) = failure {
        // A failure to build the exception leaves the JVM's own pending.
        if let Ok(exception) = exception(env, &error) {
            let _ = env.throw(jni::objects::JThrowable::from(exception));
        }
    }
    fallback
}

/// The `LeaseholdException` of `error`.
pub(super) fn exception<'local>(
    env: &mut JNIEnv<'local>,
    error: &Error,
) -> jni::errors::Result<JObject<'local>> {
    let code = env.new_string(error.kind().code())?;
    let message = env.new_string(error.message())?;
    let reason = match error.loss_reason() {
        Some(reason) => env.new_string(reason.as_str())?,
        None => JString::from(JObject::null()),
    };
    loaded()?.exception(env, &code, &message, &reason)
}
