//! The hot path, through JNI: the calls a hold, a lease's reads and an ID
//! make, as static natives of the Kotlin object `dev.leasehold.Natives`,
//! registered when the JVM loads the library (`JNI_OnLoad`). A JNI call
//! with primitive arguments costs tens of nanoseconds where a uniffi call
//! through JNA cost 12–16 µs (`docs/jvm.md`); the cold surface (stores,
//! options, slots, the test hooks) stays on uniffi.
//!
//! Objects cross as `long` handles ([`handles`]); a call that may wait
//! answers at once when its first poll does and otherwise later, through
//! the `NativeCall` it was given ([`pending`]); a failure is thrown as
//! the `LeaseholdException` of its code, a panic as `Internal`
//! ([`failure`]). No lease logic is here: each native calls the core.

mod failure;
pub(crate) mod handles;
mod holds;
mod ids;
mod loaded;
mod pending;
mod strings;

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::JClass;
use jni::sys::{jint, jlong, JNI_ERR, JNI_VERSION_1_8};
use jni::{JNIEnv, JavaVM, NativeMethod};

use crate::idgen::NativeIdGenerator;
use crate::lock::NativeLock;

/// What a native that may wait returns while it waits: its `NativeCall`
/// will be answered.
const PENDING: jlong = -1;

/// One registered native: its name, JNI signature and function.
fn native(name: &str, sig: &str, function: *mut c_void) -> NativeMethod {
    NativeMethod {
        name: name.into(),
        sig: sig.into(),
        fn_ptr: function,
    }
}

/// Every native of `dev.leasehold.Natives`.
fn natives() -> Vec<NativeMethod> {
    const CALL: &str = "Ldev/leasehold/NativeCall;";
    const STRING: &str = "Ljava/lang/String;";
    vec![
        native(
            "begin",
            &format!("(J{STRING}{CALL})J"),
            holds::begin as *mut c_void,
        ),
        native(
            "beginWithin",
            &format!("(J{STRING}J{CALL})J"),
            holds::begin_within as *mut c_void,
        ),
        native(
            "tryBegin",
            &format!("(J{STRING}{CALL})J"),
            holds::try_begin as *mut c_void,
        ),
        native("fence", "(J)J", holds::fence as *mut c_void),
        native("key", &format!("(J){STRING}"), holds::key as *mut c_void),
        native(
            "lockName",
            &format!("(J){STRING}"),
            holds::lock_name as *mut c_void,
        ),
        native("lost", "(J)Z", holds::lost as *mut c_void),
        native(
            "lossReason",
            &format!("(J){STRING}"),
            holds::loss_reason as *mut c_void,
        ),
        native("remaining", "(J)J", holds::remaining as *mut c_void),
        native(
            "lostSignal",
            &format!("(J{CALL}){STRING}"),
            holds::lost_signal as *mut c_void,
        ),
        native("end", &format!("(J{CALL})J"), holds::end as *mut c_void),
        native(
            "freeHolding",
            "(J)V",
            handles::free_native::<holds::KeptHolding> as *mut c_void,
        ),
        native(
            "freeLock",
            "(J)V",
            handles::free_native::<NativeLock> as *mut c_void,
        ),
        native("nextNow", "(J)J", ids::next_now as *mut c_void),
        native("next", &format!("(J{CALL})J"), ids::next as *mut c_void),
        native("takeNow", "(JI)[J", ids::take_now as *mut c_void),
        native("take", &format!("(JI{CALL})[J"), ids::take as *mut c_void),
        native(
            "freeIds",
            "(J)V",
            handles::free_native::<NativeIdGenerator> as *mut c_void,
        ),
        native("callCancel", "(J)V", call_cancel as *mut c_void),
        native("callEnded", "(J)V", call_ended as *mut c_void),
    ]
}

/// `Natives.callCancel(task)`: a waiting call given up.
extern "system" fn call_cancel<'l>(mut env: JNIEnv<'l>, _: JClass<'l>, task: jlong) {
    failure::guarded(&mut env, (), |_| {
        // SAFETY: the `NativeCall` hands its task over once.
        unsafe { pending::cancel(task) };
        Ok(())
    });
}

/// `Natives.callEnded(task)`: a waiting call answered.
extern "system" fn call_ended<'l>(mut env: JNIEnv<'l>, _: JClass<'l>, task: jlong) {
    failure::guarded(&mut env, (), |_| {
        // SAFETY: the `NativeCall` hands its task over once.
        unsafe { pending::ended(task) };
        Ok(())
    });
}

/// Registers the natives and keeps what their answers use. Called by the
/// JVM in `System.load`, from `Natives`' initialisation.
#[no_mangle]
#[allow(clippy::not_unsafe_ptr_arg_deref)] // the JVM's own entry point: it passes a valid pointer
pub extern "system" fn JNI_OnLoad(vm: *mut jni::sys::JavaVM, _reserved: *mut c_void) -> jint {
    let loaded = catch_unwind(AssertUnwindSafe(|| -> jni::errors::Result<()> {
        // SAFETY: the JVM passes its own, valid pointer.
        let vm = unsafe { JavaVM::from_raw(vm) }?;
        let mut env = vm.get_env()?;
        let class = env.find_class(loaded::NATIVES)?;
        env.register_native_methods(&class, &natives())?;
        loaded::keep(&mut env)
    }));
    match loaded {
        Ok(Ok(())) => JNI_VERSION_1_8,
        _ => JNI_ERR,
    }
}
