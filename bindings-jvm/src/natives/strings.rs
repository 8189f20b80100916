//! Java strings into Rust: read as UTF-16, so that every string Java can
//! hold arrives whole, and one that is not valid Unicode (a lone
//! surrogate) fails `InvalidArgument` instead of being changed.

use jni::objects::{JObjectArray, JString};
use jni::JNIEnv;
use leasehold::{Error, ErrorKind};

use super::failure::Answer;

/// The Rust string of `s`.
pub(super) fn rust_string(env: &mut JNIEnv<'_>, s: &JString<'_>) -> Answer<String> {
    if s.is_null() {
        return Err(Error::new(ErrorKind::InvalidArgument, "a string is null").into());
    }
    let raw = env.get_native_interface();
    // SAFETY: a valid environment and a live, non-null string reference;
    // the region read lies within the string's length.
    let units = unsafe {
        let length = ((**raw)
            .GetStringLength
            .ok_or(jni::errors::Error::JNIEnvMethodNotFound("GetStringLength"))?)(
            raw, s.as_raw()
        );
        let mut units = vec![0u16; usize::try_from(length).unwrap_or(0)];
        ((**raw)
            .GetStringRegion
            .ok_or(jni::errors::Error::JNIEnvMethodNotFound("GetStringRegion"))?)(
            raw,
            s.as_raw(),
            0,
            length,
            units.as_mut_ptr(),
        );
        units
    };
    String::from_utf16(&units).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            "a string is not valid Unicode (a lone surrogate?)",
        )
        .into()
    })
}

/// The Rust strings of a `String[]`; a null array or element fails
/// `InvalidArgument`, as a null string does.
pub(super) fn rust_strings(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>) -> Answer<Vec<String>> {
    if array.is_null() {
        return Err(Error::new(ErrorKind::InvalidArgument, "a string array is null").into());
    }
    let length = env.get_array_length(array)?;
    (0..length)
        .map(|at| {
            let element = env.get_object_array_element(array, at)?;
            let element = env.auto_local(JString::from(element));
            rust_string(env, &element)
        })
        .collect()
}
