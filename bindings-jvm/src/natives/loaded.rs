//! What the library keeps from its load (`JNI_OnLoad`): the JVM, for the
//! runtime's threads that answer a call that waited, and the classes and
//! methods those answers use, looked up once.

use std::sync::OnceLock;

use jni::objects::{GlobalRef, JClass, JMethodID, JObject, JStaticMethodID, JString, JValue};
use jni::signature::{Primitive, ReturnType};
use jni::sys::jvalue;
use jni::{JNIEnv, JavaVM};

/// The class whose static natives the library registers.
pub(super) const NATIVES: &str = "dev/leasehold/Natives";
/// The class of a call that waits (`dev.leasehold.NativeCall`).
const NATIVE_CALL: &str = "dev/leasehold/NativeCall";

/// The JVM and what the library calls in it.
pub(super) struct Loaded {
    vm: JavaVM,
    natives: GlobalRef,
    exception: JStaticMethodID,
    pending: JMethodID,
    succeeded: JMethodID,
    succeeded_with: JMethodID,
    failed: JMethodID,
}

static LOADED: OnceLock<Loaded> = OnceLock::new();

/// What the load kept; an error if the library was not loaded by the JVM.
pub(super) fn loaded() -> jni::errors::Result<&'static Loaded> {
    LOADED.get().ok_or(jni::errors::Error::NullPtr(
        "the library was not loaded by System.load",
    ))
}

/// Looks up and keeps what the answers use (once; a second load keeps the first).
pub(super) fn keep(env: &mut JNIEnv<'_>) -> jni::errors::Result<()> {
    let natives = env.find_class(NATIVES)?;
    let call = env.find_class(NATIVE_CALL)?;
    let kept = Loaded {
        vm: env.get_java_vm()?,
        exception: env.get_static_method_id(
            &natives,
            "exception",
            "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)Ljava/lang/Throwable;",
        )?,
        pending: env.get_method_id(&call, "pending", "(J)V")?,
        succeeded: env.get_method_id(&call, "succeeded", "(J)V")?,
        succeeded_with: env.get_method_id(&call, "succeededWith", "(Ljava/lang/Object;)V")?,
        failed: env.get_method_id(&call, "failed", "(Ljava/lang/Throwable;)V")?,
        natives: env.new_global_ref(natives)?,
    };
    let _ = LOADED.set(kept);
    Ok(())
}

impl Loaded {
    /// The JVM.
    pub(super) fn vm(&self) -> &JavaVM {
        &self.vm
    }

    /// `Natives.exception(code, message, lossReason)`: the exception of a code.
    pub(super) fn exception<'local>(
        &self,
        env: &mut JNIEnv<'local>,
        code: &JString<'_>,
        message: &JString<'_>,
        reason: &JString<'_>,
    ) -> jni::errors::Result<JObject<'local>> {
        let class: &JClass<'_> = self.natives.as_obj().into();
        let args = [
            JValue::Object(code).as_jni(),
            JValue::Object(message).as_jni(),
            JValue::Object(reason).as_jni(),
        ];
        // SAFETY: the method was looked up with this signature and these arguments.
        unsafe {
            env.call_static_method_unchecked(class, self.exception, ReturnType::Object, &args)
        }?
        .l()
    }

    /// `call.pending(task)`: the task to cancel while the call waits.
    pub(super) fn pending(
        &self,
        env: &mut JNIEnv<'_>,
        call: &JObject<'_>,
        task: i64,
    ) -> jni::errors::Result<()> {
        self.void(env, call, self.pending, jvalue { j: task })
    }

    /// `call.succeeded(value)`.
    pub(super) fn succeeded(
        &self,
        env: &mut JNIEnv<'_>,
        call: &JObject<'_>,
        value: i64,
    ) -> jni::errors::Result<()> {
        self.void(env, call, self.succeeded, jvalue { j: value })
    }

    /// `call.succeededWith(value)`.
    pub(super) fn succeeded_with(
        &self,
        env: &mut JNIEnv<'_>,
        call: &JObject<'_>,
        value: &JObject<'_>,
    ) -> jni::errors::Result<()> {
        self.void(
            env,
            call,
            self.succeeded_with,
            JValue::Object(value).as_jni(),
        )
    }

    /// `call.failed(exception)`.
    pub(super) fn failed(
        &self,
        env: &mut JNIEnv<'_>,
        call: &JObject<'_>,
        exception: &JObject<'_>,
    ) -> jni::errors::Result<()> {
        self.void(env, call, self.failed, JValue::Object(exception).as_jni())
    }

    fn void(
        &self,
        env: &mut JNIEnv<'_>,
        call: &JObject<'_>,
        method: JMethodID,
        arg: jvalue,
    ) -> jni::errors::Result<()> {
        // SAFETY: each method was looked up on `NativeCall` with one argument of this type.
        unsafe {
            env.call_method_unchecked(call, method, ReturnType::Primitive(Primitive::Void), &[arg])
        }?;
        Ok(())
    }
}
