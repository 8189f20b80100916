//! The hot path, through JNI: the calls a hold (of a key, of many keys at
//! once, or of a slot), a lease's reads and loss, a manual lease's
//! extension and release, a slot renewal and an ID make, as static natives
//! of the Kotlin object `dev.leasehold.Natives`, registered when the JVM
//! loads the library (`JNI_OnLoad`). A JNI call
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
mod held;
mod holds;
mod ids;
mod loaded;
mod manual;
mod many;
mod pending;
mod slots;
mod strings;
#[cfg(feature = "testing")]
mod testing;

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::JClass;
use jni::sys::{jint, jlong, JNI_ERR, JNI_VERSION_1_8};
use jni::{JNIEnv, JavaVM, NativeMethod};

use leasehold::slots::SlotHolding;
use leasehold::Holding;

use crate::idgen::NativeIdGenerator;
use crate::kept::Kept;
use crate::lock::NativeLock;
use crate::manual::NativeManualLease;
use crate::slots::NativeSlots;

/// What a native that may wait returns while it waits: its `NativeCall`
/// will be answered.
const PENDING: jlong = -1;

/// Every native of `dev.leasehold.Natives`.
fn natives() -> Vec<NativeMethod> {
    const CALL: &str = "Ldev/leasehold/NativeCall;";
    const STRING: &str = "Ljava/lang/String;";
    const STRINGS: &str = "[Ljava/lang/String;";
    let table: [(&str, String, *mut c_void); 39] = [
        (
            "begin",
            format!("(J{STRING}{CALL})J"),
            holds::begin as *mut c_void,
        ),
        (
            "beginWithin",
            format!("(J{STRING}J{CALL})J"),
            holds::begin_within as *mut c_void,
        ),
        (
            "tryBegin",
            format!("(J{STRING}{CALL})J"),
            holds::try_begin as *mut c_void,
        ),
        (
            "beginMany",
            format!("(J{STRINGS}{CALL})[J"),
            many::begin_many as *mut c_void,
        ),
        (
            "beginManyWithin",
            format!("(J{STRINGS}J{CALL})[J"),
            many::begin_many_within as *mut c_void,
        ),
        (
            "anyLostSignal",
            format!("([J{CALL}){STRING}"),
            many::any_lost_signal as *mut c_void,
        ),
        (
            "endAll",
            format!("([J{CALL})J"),
            many::end_all as *mut c_void,
        ),
        ("fence", "(J)J".into(), holds::fence as *mut c_void),
        ("remaining", "(J)J".into(), holds::remaining as *mut c_void),
        ("lost", "(J)Z".into(), held::lost::<Holding> as *mut c_void),
        (
            "lossReason",
            format!("(J){STRING}"),
            held::loss_reason::<Holding> as *mut c_void,
        ),
        (
            "lostSignal",
            format!("(J{CALL}){STRING}"),
            held::lost_signal::<Holding> as *mut c_void,
        ),
        (
            "end",
            format!("(J{CALL})J"),
            held::end::<Holding> as *mut c_void,
        ),
        (
            "freeHolding",
            "(J)V".into(),
            handles::free_native::<Kept<Holding>> as *mut c_void,
        ),
        (
            "freeLock",
            "(J)V".into(),
            handles::free_native::<NativeLock> as *mut c_void,
        ),
        ("nextNow", "(J)J".into(), ids::next_now as *mut c_void),
        ("next", format!("(J{CALL})J"), ids::next as *mut c_void),
        ("takeNow", "(JI)[J".into(), ids::take_now as *mut c_void),
        ("take", format!("(JI{CALL})[J"), ids::take as *mut c_void),
        (
            "freeIds",
            "(J)V".into(),
            handles::free_native::<NativeIdGenerator> as *mut c_void,
        ),
        (
            "slotBegin",
            format!("(J{STRING}{STRING}I{CALL})J"),
            slots::begin as *mut c_void,
        ),
        (
            "slotRenew",
            format!("(J{STRING}{STRING}{STRING}[J{CALL})[J"),
            slots::renew as *mut c_void,
        ),
        ("slotLease", "(J)[J".into(), slots::lease as *mut c_void),
        ("slotIssued", "(JJ)V".into(), slots::issued as *mut c_void),
        (
            "slotLastIssued",
            "(J)J".into(),
            slots::last_issued as *mut c_void,
        ),
        (
            "slotRemaining",
            "(J)J".into(),
            slots::remaining as *mut c_void,
        ),
        (
            "slotLost",
            "(J)Z".into(),
            held::lost::<SlotHolding> as *mut c_void,
        ),
        (
            "slotLossReason",
            format!("(J){STRING}"),
            held::loss_reason::<SlotHolding> as *mut c_void,
        ),
        (
            "slotLostSignal",
            format!("(J{CALL}){STRING}"),
            held::lost_signal::<SlotHolding> as *mut c_void,
        ),
        (
            "slotEnd",
            format!("(J{CALL})J"),
            held::end::<SlotHolding> as *mut c_void,
        ),
        (
            "freeSlotHolding",
            "(J)V".into(),
            handles::free_native::<Kept<SlotHolding>> as *mut c_void,
        ),
        (
            "freeSlots",
            "(J)V".into(),
            handles::free_native::<NativeSlots> as *mut c_void,
        ),
        (
            "manualName",
            format!("(J){STRING}"),
            manual::name as *mut c_void,
        ),
        ("manualFence", "(J)J".into(), manual::fence as *mut c_void),
        (
            "manualExtend",
            format!("(JJ{CALL})J"),
            manual::extend as *mut c_void,
        ),
        (
            "manualRelease",
            format!("(J{CALL})J"),
            manual::release as *mut c_void,
        ),
        (
            "freeManual",
            "(J)V".into(),
            handles::free_native::<NativeManualLease> as *mut c_void,
        ),
        ("callCancel", "(J)V".into(), call_cancel as *mut c_void),
        ("callEnded", "(J)V".into(), call_ended as *mut c_void),
    ];
    table
        .into_iter()
        .map(|(name, sig, fn_ptr)| NativeMethod {
            name: name.into(),
            sig: sig.into(),
            fn_ptr,
        })
        .collect()
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
        #[cfg(feature = "testing")]
        testing::register(&mut env)?;
        loaded::keep(&mut env)
    }));
    match loaded {
        Ok(Ok(())) => JNI_VERSION_1_8,
        _ => JNI_ERR,
    }
}
