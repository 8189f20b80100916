//! Fences: an epoch in the high bits and a counter in the low bits, so that
//! every fence a store grants is larger than every one before, across restarts
//! (LOCK-02).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, ErrorKind, Result};

/// How many low bits of a fence count grants within an epoch.
pub const COUNTER_BITS: u32 = 32;

/// The fence of grant number `counter` (from 1) in `epoch`.
pub fn compose(epoch: u32, counter: u32) -> u64 {
    (u64::from(epoch) << COUNTER_BITS) | u64::from(counter)
}

/// The epoch part of a fence.
pub fn epoch_of(fence: u64) -> u32 {
    (fence >> COUNTER_BITS) as u32
}

/// Gives a lease table its epochs: one when it opens, and another each time a
/// table uses up the 2^32 fences of its epoch. Each epoch is larger than all before.
pub trait EpochSource: Send {
    /// The next epoch, larger than every one this source gave before.
    fn next_epoch(&mut self) -> Result<u32>;
}

/// The epochs of embedded stores: the wall clock's seconds since 1970, or one
/// more than the last epoch any store of this process took, whichever is larger.
/// An embedded store opened after another (in this process or a later one)
/// thus grants larger fences, as long as the wall clock does not step back by
/// more than the time between the two.
#[derive(Debug, Default)]
pub struct WallClockEpochs;

static LAST_EPOCH: AtomicU32 = AtomicU32::new(0);

/// One more than `prev`, or at least the wall clock's seconds since 1970.
pub fn next_wall_clock_epoch(prev: u32) -> Result<u32> {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let wall = u32::try_from(secs).unwrap_or(u32::MAX);
    let next = prev
        .checked_add(1)
        .ok_or_else(|| Error::new(ErrorKind::Internal, "the epochs are used up"))?;
    Ok(next.max(wall))
}

impl EpochSource for WallClockEpochs {
    fn next_epoch(&mut self) -> Result<u32> {
        let mut prev = LAST_EPOCH.load(Ordering::SeqCst);
        loop {
            let next = next_wall_clock_epoch(prev)?;
            match LAST_EPOCH.compare_exchange(prev, next, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Ok(next),
                Err(seen) => prev = seen,
            }
        }
    }
}

/// Hands out the fences of a lease table, asking its [`EpochSource`] for a new
/// epoch when the counter of the current one is used up.
pub struct Fences {
    source: Box<dyn EpochSource>,
    epoch: u32,
    counter: u32,
}

impl Fences {
    /// Fences from the first epoch `source` gives.
    pub fn new(mut source: Box<dyn EpochSource>) -> Result<Fences> {
        let epoch = source.next_epoch()?;
        Ok(Fences {
            source,
            epoch,
            counter: 0,
        })
    }

    /// Fences starting after `counter` grants in the first epoch `source`
    /// gives; lets tests reach the end of an epoch without 2^32 grants.
    pub fn starting_at(source: Box<dyn EpochSource>, counter: u32) -> Result<Fences> {
        let mut fences = Fences::new(source)?;
        fences.counter = counter;
        Ok(fences)
    }

    /// The epoch fences come from now.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The next fence, larger than every one before.
    pub fn next_fence(&mut self) -> Result<u64> {
        if self.counter == u32::MAX {
            let epoch = self.source.next_epoch()?;
            if epoch <= self.epoch {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!("epoch source went back from {} to {epoch}", self.epoch),
                ));
            }
            self.epoch = epoch;
            self.counter = 0;
        }
        self.counter += 1;
        Ok(compose(self.epoch, self.counter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-02: two embedded stores opened one after the other: the later one's fences are larger.
    #[test]
    fn lock_02_later_store_grants_larger_fences() {
        let mut first = Fences::new(Box::new(WallClockEpochs)).unwrap();
        let a = first.next_fence().unwrap();
        let mut second = Fences::new(Box::new(WallClockEpochs)).unwrap();
        let b = second.next_fence().unwrap();
        assert!(b > a, "{b} <= {a}");
        assert!(epoch_of(a) as u64 >= 1_700_000_000);
    }

    // LOCK-02: at the end of an epoch's counter, fences move on to a new, larger epoch.
    #[test]
    fn lock_02_fences_grow_across_epoch_rollover() {
        let mut fences = Fences::starting_at(Box::new(WallClockEpochs), u32::MAX - 1).unwrap();
        let last = fences.next_fence().unwrap();
        let first_of_next = fences.next_fence().unwrap();
        assert_eq!(last & 0xffff_ffff, u64::from(u32::MAX));
        assert!(first_of_next > last);
        assert_eq!(first_of_next & 0xffff_ffff, 1);
    }

    #[test]
    fn wall_clock_epoch_is_at_least_one_more() {
        assert_eq!(next_wall_clock_epoch(u32::MAX - 1).unwrap(), u32::MAX);
        assert!(next_wall_clock_epoch(u32::MAX).is_err());
    }
}
