//! The one cancel policy of a call: what giving it up does to its work.

use leasehold::CancellationToken;

/// What giving up a call (its caller stops waiting: a cancelled coroutine
/// or asyncio task, a dropped future) does to the work it began. Every
/// binding names its calls' policies with it.
#[derive(Debug, Clone)]
pub enum Cancel {
    /// The work is dropped, or its task aborted: a call that has nothing
    /// to undo (a read, an ID).
    Drop,
    /// The work runs on to its end: a release or a close (LOCK-11).
    RunOn,
    /// This token of the core call is fired and the work runs on to its
    /// end: a call waiting in line leaves it (LOCK-18), and what a call got
    /// after its caller went away is let go (`leasehold::give_up`).
    Token(CancellationToken),
}

impl Cancel {
    /// A new token for a call to take, and the policy that fires it.
    pub fn token() -> (CancellationToken, Cancel) {
        let token = CancellationToken::new();
        (token.clone(), Cancel::Token(token))
    }

    /// Gives up work that began: fires the token of [`Cancel::Token`], and
    /// answers whether the work must run on to its end ([`Cancel::RunOn`],
    /// [`Cancel::Token`]) rather than be dropped ([`Cancel::Drop`]).
    pub fn give_up(&self) -> bool {
        match self {
            Cancel::Drop => false,
            Cancel::RunOn => true,
            Cancel::Token(token) => {
                token.cancel();
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-18: giving up a call with a token fires it, and its work runs on
    // to leave the line; LOCK-11: a release runs on; a read is dropped.
    #[test]
    fn lock_18_giving_up_fires_the_token() {
        let (token, cancel) = Cancel::token();
        assert!(!token.is_cancelled());
        assert!(cancel.give_up());
        assert!(token.is_cancelled());
        assert!(Cancel::RunOn.give_up());
        assert!(!Cancel::Drop.give_up());
    }
}
