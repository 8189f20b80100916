//! Giving up a call: the JS layer cancels a [`Canceller`] when the
//! `AbortSignal` passed to the call aborts. A call whose core function
//! takes the token (a waiting hold or acquire) leaves the line in the core
//! (LOCK-18); any other call that may wait on the store stops waiting
//! through the core's `leasehold::give_up::unless_given_up`.

use leasehold::CancellationToken;
use napi_derive::napi;

/// A cancellation token a JS caller fires to give up waiting (LOCK-18).
#[napi]
pub struct Canceller {
    token: CancellationToken,
}

#[napi]
impl Canceller {
    /// A token not yet fired.
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Canceller {
        Canceller {
            token: CancellationToken::new(),
        }
    }

    /// Fires the token: the waiting call fails `CANCELLED` and leaves the line.
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        self.token.cancel();
    }
}

impl Canceller {
    /// The token, for the core's `HoldOptions`.
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

impl Default for Canceller {
    fn default() -> Canceller {
        Canceller::new()
    }
}
