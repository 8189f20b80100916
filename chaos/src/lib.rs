//! The chaos harness of issue #13: holders contend for a few keys of a
//! real store while faults are injected at random from a seed; every
//! holder records its history ([`history`]) on one monotonic clock
//! ([`clock`]), and the checker ([`check`]) finds every broken promise.
//!
//! - [`harness`]: the store, the fault [`proxy`], the holder processes and
//!   the seeded scheduler of faults; [`process`]: the server process and signals.
//! - [`holder`]: the Rust holder, through the real library, its calls
//!   recorded by [`recording`], its writes through the fenced [`register`]
//!   or to PostgreSQL ([`postgres`]).
//! - [`broken`]: stores broken on purpose, for the checker's own tests.

#[macro_use]
mod wrapper;

pub mod broken;
pub mod check;
pub mod clock;
pub mod harness;
pub mod history;
pub mod holder;
pub mod postgres;
pub mod process;
pub mod proxy;
pub mod recording;
pub mod register;
