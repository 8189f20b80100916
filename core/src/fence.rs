//! Fences: numbers that only grow, across restarts too (LOCK-02). The server
//! store's are an epoch in the high bits and a counter in the low bits; the
//! embedded store's follow the wall clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// One more than `prev`, or at least the wall clock's seconds since 1970:
/// the next epoch of a store that persists its last one.
pub fn next_wall_clock_epoch(prev: u32) -> Result<u32> {
    let wall = u32::try_from(unix_time().as_secs()).unwrap_or(u32::MAX);
    let next = prev
        .checked_add(1)
        .ok_or_else(|| Error::new(ErrorKind::Internal, "the epochs are used up"))?;
    Ok(next.max(wall))
}

fn unix_time() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

/// How many low bits of a wall-clock fence leave room for grants within one microsecond.
const WALL_CLOCK_SHIFT: u32 = 12;

/// The last fence any embedded store of this process granted.
static LAST_WALL_CLOCK_FENCE: AtomicU64 = AtomicU64::new(0);

/// The next fence of an embedded store: one more than the last fence any
/// embedded store of this process granted, or the wall clock's microseconds
/// since 1970 shifted left by 12 bits, whichever is larger. A store can only
/// run ahead of the wall clock by granting more than 4096 fences in one
/// microsecond, so an embedded store opened later, in this process or in a
/// later one, grants larger fences, as long as the wall clock does not step
/// back by more than the time between the two.
fn next_wall_clock_fence() -> u64 {
    let micros = u64::try_from(unix_time().as_micros()).unwrap_or(u64::MAX >> WALL_CLOCK_SHIFT);
    let floor = micros << WALL_CLOCK_SHIFT;
    let mut prev = LAST_WALL_CLOCK_FENCE.load(Ordering::SeqCst);
    loop {
        let next = prev.saturating_add(1).max(floor);
        match LAST_WALL_CLOCK_FENCE.compare_exchange_weak(
            prev,
            next,
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => return next,
            Err(seen) => prev = seen,
        }
    }
}

/// Hands out the fences of a lease table: from epochs (the server store:
/// `epoch << 32 | counter`, a new epoch when an epoch's counter is used up),
/// or from the wall clock (the embedded store, see [`Fences::wall_clock`]).
pub struct Fences {
    kind: Kind,
}

enum Kind {
    Epochs {
        source: Box<dyn EpochSource>,
        epoch: u32,
        counter: u32,
    },
    WallClock,
}

impl Fences {
    /// Fences from the epochs `source` gives, starting with its next one.
    pub fn new(source: Box<dyn EpochSource>) -> Result<Fences> {
        Fences::starting_at(source, 0)
    }

    /// Fences starting after `counter` grants in the first epoch `source`
    /// gives; lets tests reach the end of an epoch without 2^32 grants.
    fn starting_at(mut source: Box<dyn EpochSource>, counter: u32) -> Result<Fences> {
        let epoch = source.next_epoch()?;
        Ok(Fences {
            kind: Kind::Epochs {
                source,
                epoch,
                counter,
            },
        })
    }

    /// The embedded store's fences: shared by every embedded store of the
    /// process, and larger than the wall clock's microseconds since 1970
    /// times 4096, so that they also grow from one process to the next.
    pub fn wall_clock() -> Fences {
        Fences {
            kind: Kind::WallClock,
        }
    }

    /// The epoch fences come from now (for wall-clock fences, the high 32
    /// bits of the last fence granted in this process).
    pub fn epoch(&self) -> u32 {
        match &self.kind {
            Kind::Epochs { epoch, .. } => *epoch,
            Kind::WallClock => epoch_of(LAST_WALL_CLOCK_FENCE.load(Ordering::SeqCst)),
        }
    }

    /// The next fence, larger than every one before.
    pub fn next_fence(&mut self) -> Result<u64> {
        let Kind::Epochs {
            source,
            epoch,
            counter,
        } = &mut self.kind
        else {
            return Ok(next_wall_clock_fence());
        };
        if *counter == u32::MAX {
            let next = source.next_epoch()?;
            if next <= *epoch {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!("epoch source went back from {epoch} to {next}"),
                ));
            }
            *epoch = next;
            *counter = 0;
        }
        *counter += 1;
        Ok(compose(*epoch, *counter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Epochs 1, 2, 3, … as a store that persists them would give.
    struct Counting(u32);

    impl EpochSource for Counting {
        fn next_epoch(&mut self) -> Result<u32> {
            self.0 += 1;
            Ok(self.0)
        }
    }

    // LOCK-02: two embedded stores opened one after the other: the later one's fences are larger,
    // and both are above the wall clock's microseconds.
    #[test]
    fn lock_02_later_store_grants_larger_fences() {
        let before = u64::try_from(unix_time().as_micros()).unwrap() << WALL_CLOCK_SHIFT;
        let mut first = Fences::wall_clock();
        let a = first.next_fence().unwrap();
        let mut second = Fences::wall_clock();
        let b = second.next_fence().unwrap();
        assert!(a >= before);
        assert!(b > a, "{b} <= {a}");
    }

    // LOCK-02: many grants in a burst never go back, whatever the wall clock says.
    #[test]
    fn lock_02_wall_clock_fences_strictly_grow() {
        let mut fences = Fences::wall_clock();
        let mut last = 0;
        for _ in 0..100_000 {
            let f = fences.next_fence().unwrap();
            assert!(f > last);
            last = f;
        }
    }

    // LOCK-02: at the end of an epoch's counter, fences move on to a new, larger epoch.
    #[test]
    fn lock_02_fences_grow_across_epoch_rollover() {
        let mut fences = Fences::starting_at(Box::new(Counting(6)), u32::MAX - 1).unwrap();
        assert_eq!(fences.epoch(), 7);
        let last = fences.next_fence().unwrap();
        let first_of_next = fences.next_fence().unwrap();
        assert_eq!(last, compose(7, u32::MAX));
        assert_eq!(first_of_next, compose(8, 1));
        assert_eq!(fences.epoch(), 8);
    }

    #[test]
    fn wall_clock_epoch_is_at_least_one_more() {
        assert_eq!(next_wall_clock_epoch(u32::MAX - 1).unwrap(), u32::MAX);
        assert!(next_wall_clock_epoch(u32::MAX).is_err());
        assert!(next_wall_clock_epoch(0).unwrap() >= 1_700_000_000);
    }
}
