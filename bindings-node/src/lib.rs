//! Leasehold for Node.js: the native module behind the npm package `leasehold`.
//!
//! Every export only translates: JS values into calls of the core, the
//! core's answers into JS values, its errors into JS errors carrying the
//! ERR-01 code as JS writes it (`ErrorKind::js_code`), an `AbortSignal`
//! (through a [`cancel::Canceller`]) into a `CancellationToken`, and a
//! lease's loss into one call of a weak threadsafe function. Waiting,
//! renewal, deadlines, loss and release are the core's. The JS layer
//! (`lib/`) builds the public API on these exports.
//!
//! Asynchronous exports run on the core's process runtime
//! (`leasehold::runtime::process_runtime`) and settle a promise from there;
//! a pending promise keeps Node's event loop alive, as any pending I/O does,
//! and nothing else this module creates does.

pub mod cancel;
pub mod durations;
pub mod errors;
pub mod holding;
pub mod idgen;
pub mod kept;
pub mod lock;
pub mod manual;
pub mod promise;
pub mod slot_holding;
pub mod slots;
pub mod store;
pub mod testing;
