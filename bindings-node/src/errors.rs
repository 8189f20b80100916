//! Core errors as JS errors whose `code` is the ERR-01 code as JS writes it
//! (`LOST`, `INVALID_TTL`, …), with `lossReason` on `LOST` errors. The JS
//! layer turns them into `LeaseholdError` / `LostError`.

use leasehold::{Error, ErrorKind};
use napi::bindgen_prelude::{JsObjectValue, JsValue, Object};
use napi::{Env, Status};
use napi_derive::napi;

/// The JS form of an ERR-01 code: the status of the napi errors this module throws.
pub struct Code(String);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The error a synchronous export throws.
pub type Thrown = napi::Error<Code>;

/// A core error, to throw: `code` is its JS code, `message` its message.
pub(crate) fn thrown(e: Error) -> Thrown {
    napi::Error::new(Code(e.kind().js_code()), e.message())
}

/// The JS error a promise rejects with: an `Error` with `code`, and
/// `lossReason` for a `Lost` error that knows why.
pub(crate) fn rejection(env: &Env, e: &Error) -> napi::Error {
    match js_error(env, e) {
        Ok(object) => napi::Error::from(object.to_unknown()),
        Err(failed) => failed,
    }
}

fn js_error<'env>(env: &'env Env, e: &Error) -> napi::Result<Object<'env>> {
    let mut object = env.create_error(napi::Error::new(Status::GenericFailure, e.message()))?;
    object.set_named_property("code", e.kind().js_code())?;
    if let Some(reason) = e.loss_reason() {
        object.set_named_property("lossReason", reason.as_str())?;
    }
    Ok(object)
}

/// Every ERR-01 code as JS writes it, in the order of `docs/errors.md`.
#[napi(catch_unwind)]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL.iter().map(|k| k.js_code()).collect()
}
