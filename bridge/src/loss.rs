//! The loss-callback contract: the loss of a holding is watched at most
//! once, in every binding.

use std::sync::atomic::{AtomicBool, Ordering};

use leasehold::{Error, ErrorKind, Result};

/// The message of a second watch of a holding's loss.
pub const WATCHED_ALREADY: &str = "the loss of this holding is watched already";

/// The claim on a holding's loss callback. The first [`LossWatch::claim`]
/// takes it; every later one fails `InvalidArgument`
/// ([`WATCHED_ALREADY`]), so that a holding never has two callbacks to
/// tell, nor a callback that silently replaced another. (Waiting for a
/// loss, as the C ABI's `lh_*_wait_lost` and the JVM's `lostSignal` do,
/// is no callback and needs no claim.)
#[derive(Debug, Default)]
pub struct LossWatch {
    claimed: AtomicBool,
}

impl LossWatch {
    /// A loss nobody watches yet.
    pub const fn new() -> LossWatch {
        LossWatch {
            claimed: AtomicBool::new(false),
        }
    }

    /// Claims the watch: `Ok` the first time, `InvalidArgument` after.
    pub fn claim(&self) -> Result<()> {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return Err(Error::new(ErrorKind::InvalidArgument, WATCHED_ALREADY));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-09: one loss callback per holding; a second fails InvalidArgument.
    #[test]
    fn lock_09_a_second_watch_fails() {
        let watch = LossWatch::new();
        watch.claim().unwrap();
        let e = watch.claim().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(e.message(), WATCHED_ALREADY);
    }
}
