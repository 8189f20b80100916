//! Test hooks of the JNI path (feature `testing`, never in the shipped
//! library): natives of the test class `dev.leasehold.TestNatives` that
//! panic on purpose, at once and in a task, to prove that a panic reaches
//! the JVM as `Internal` (ERR-03), not as a crash.

use std::ffi::c_void;

use jni::objects::{JClass, JObject};
use jni::sys::jlong;
use jni::{JNIEnv, NativeMethod};
use leasehold_bridge::{Cancel, Spawned};

use super::failure::guarded;
use super::pending;
use crate::calls;

/// The test class whose natives these are.
pub(super) const CLASS: &str = "dev/leasehold/TestNatives";

/// Registers the hooks on [`CLASS`].
pub(super) fn register(env: &mut JNIEnv<'_>) -> jni::errors::Result<()> {
    let class = env.find_class(CLASS)?;
    let natives = [
        NativeMethod {
            name: "panicNow".into(),
            sig: "()J".into(),
            fn_ptr: panic_now as *mut c_void,
        },
        NativeMethod {
            name: "panicLater".into(),
            sig: "(Ldev/leasehold/NativeCall;)J".into(),
            fn_ptr: panic_later as *mut c_void,
        },
    ];
    env.register_native_methods(&class, &natives)
}

/// `TestNatives.panicNow()`: panics in the native itself.
extern "system" fn panic_now<'l>(mut env: JNIEnv<'l>, _: JClass<'l>) -> jlong {
    guarded(&mut env, 0, |_| panic!("a panic on purpose (panicNow)"))
}

/// `TestNatives.panicLater(call)`: panics in the task that would answer.
extern "system" fn panic_later<'l>(mut env: JNIEnv<'l>, _: JClass<'l>, call: JObject<'l>) -> jlong {
    guarded(&mut env, 0, |env| {
        let work: Spawned<()> = Spawned::new(calls::runtime(), Cancel::Drop, async {
            tokio::task::yield_now().await;
            panic!("a panic on purpose (panicLater)")
        });
        pending::answer_done(env, &call, work)
    })
}
