//! What every binding of Leasehold (the C ABI, Python, Node, the JVM) does
//! alike, written once:
//!
//! - [`poll_here`]: a core call's first poll, on the calling thread inside
//!   the runtime's context, so that a call the core answers at once (most
//!   calls on the embedded store) makes no thread hop and no callback; with
//!   [`Caught`], a panic of the core (a bug) is an `Internal` error, not an
//!   unwinding across a foreign boundary (ERR-03).
//! - [`Cancel`]: the one vocabulary of what giving up a call does to its
//!   work (drop it, let it run on, or fire its token and let it run on).
//! - [`Spawned`]: a call's future that polls first on the caller's thread,
//!   then waits for a task of the runtime, and does what its [`Cancel`]
//!   says when dropped early.
//! - [`panicked`] and [`lost_task`]: a caught panic, or a task that ended
//!   without an answer, as an `Internal` error.
//! - [`LossWatch`]: the loss of a holding is watched at most once; a
//!   second watch fails `InvalidArgument`, in every binding.
//! - [`options`]: the options every binding reads from its own types,
//!   mapped once onto the core's builders.
//!
//! What is a binding's own stays there: the C ABI's `lh_outcome` and
//! `lh_done_fn`, Python's event-loop driver, Node's park-until-first-wake
//! and its deferred promises, uniffi's `suspend` functions.

mod cancel;
mod caught;
mod loss;
pub mod options;
mod poll;
mod spawned;

pub use cancel::Cancel;
pub use caught::{lost_task, panicked, Caught};
pub use loss::{LossWatch, WATCHED_ALREADY};
pub use poll::{noop_waker, poll_here};
pub use spawned::Spawned;
