//! Connections in their handshake: accepted, not yet past their hello (the
//! TLS handshake when TLS is on, then the hello frame).
//!
//! They have places of their own, `--max-handshakes`, apart from the
//! `--max-connections` of connections being served, so that connections
//! that say nothing never keep a speaking client out. When every place is
//! taken, a new connection takes the place of the oldest, which is closed
//! (evicted): a flood that reopens its connections as fast as they close
//! leaves a newcomer `max-handshakes / (the flood's rate)` seconds to say
//! hello, and a speaking client says it within one round trip. Each has
//! `--hello-timeout` from its accept for all of it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::Refusal;

/// The places of the connections in their handshake.
pub(crate) struct Handshakes {
    limit: usize,
    timeout: Duration,
    /// How many are in their handshake, as the metrics show it.
    gauge: Gauge,
    open: Mutex<Open>,
}

/// The connections in their handshake, oldest first.
struct Open {
    next: u64,
    /// Each one's eviction: dropping the sender closes the connection.
    by_age: BTreeMap<u64, oneshot::Sender<()>>,
}

/// Why a step of a handshake did not finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// A newer connection took its place.
    Evicted,
    /// `--hello-timeout` passed since its accept.
    TimedOut,
    /// The server shuts down.
    Shutdown,
}

impl Cut {
    /// The refusal the metrics count it as, if any.
    pub fn refusal(self) -> Option<Refusal> {
        match self {
            Cut::Evicted => Some(Refusal::Evicted),
            Cut::TimedOut => Some(Refusal::HelloTimeout),
            Cut::Shutdown => None,
        }
    }
}

/// One connection's place among those in their handshake, given back when
/// dropped.
pub(crate) struct Handshake {
    table: Arc<Handshakes>,
    age: u64,
    deadline: Instant,
    evicted: oneshot::Receiver<()>,
}

impl Handshakes {
    /// At most `limit` places, each for `timeout` from its accept; `gauge`
    /// shows how many are taken.
    pub fn new(limit: usize, timeout: Duration, gauge: Gauge) -> Handshakes {
        Handshakes {
            limit,
            timeout,
            gauge,
            open: Mutex::new(Open {
                next: 0,
                by_age: BTreeMap::new(),
            }),
        }
    }

    /// A place for a connection accepted now; when every place is taken,
    /// the oldest connection in its handshake is evicted to make room.
    pub fn enter(self: &Arc<Self>) -> Handshake {
        let (tx, evicted) = oneshot::channel();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let age = open.next;
        open.next += 1;
        let victim = if open.by_age.len() >= self.limit {
            open.by_age.pop_first()
        } else {
            None
        };
        open.by_age.insert(age, tx);
        self.gauge
            .set(i64::try_from(open.by_age.len()).unwrap_or(i64::MAX));
        drop(open);
        // Dropped outside the lock: it wakes the evicted connection's task.
        drop(victim);
        Handshake {
            table: self.clone(),
            age,
            deadline: Instant::now() + self.timeout,
            evicted,
        }
    }

    fn leave(&self, age: u64) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.by_age.remove(&age).is_some() {
            self.gauge
                .set(i64::try_from(open.by_age.len()).unwrap_or(i64::MAX));
        }
    }
}

impl Handshake {
    /// Runs `step` of the handshake, unless the connection is evicted, its
    /// `--hello-timeout` passes or the server shuts down first. A step that
    /// is done wins over an eviction or a deadline that came meanwhile.
    pub async fn within<F: Future>(
        &mut self,
        step: F,
        shutdown: &CancellationToken,
    ) -> Result<F::Output, Cut> {
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => Err(Cut::Shutdown),
            out = step => Ok(out),
            _ = &mut self.evicted => Err(Cut::Evicted),
            _ = tokio::time::sleep_until(self.deadline) => Err(Cut::TimedOut),
        }
    }
}

impl Drop for Handshake {
    fn drop(&mut self) {
        self.table.leave(self.age);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(limit: usize) -> Arc<Handshakes> {
        Arc::new(Handshakes::new(
            limit,
            Duration::from_secs(60),
            Gauge::default(),
        ))
    }

    #[tokio::test]
    async fn a_newcomer_evicts_the_oldest_when_every_place_is_taken() {
        let t = table(2);
        let mut a = t.enter();
        let mut b = t.enter();
        let mut c = t.enter();
        let shutdown = CancellationToken::new();
        let never = std::future::pending::<()>;
        assert_eq!(a.within(never(), &shutdown).await, Err(Cut::Evicted));
        // b is the oldest now; c's step still runs.
        assert_eq!(c.within(async { 7 }, &shutdown).await, Ok(7));
        drop(a);
        let mut d = t.enter();
        assert_eq!(b.within(never(), &shutdown).await, Err(Cut::Evicted));
        assert_eq!(t.gauge.get(), 2);
        // A place given back is not evicted for.
        drop(c);
        let _e = t.enter();
        assert_eq!(t.gauge.get(), 2);
        let still = tokio::time::timeout(Duration::from_millis(20), d.within(never(), &shutdown));
        assert!(still.await.is_err(), "d keeps its place");
    }

    #[tokio::test]
    async fn the_deadline_counts_from_the_accept() {
        let t = Arc::new(Handshakes::new(
            4,
            Duration::from_millis(300),
            Gauge::default(),
        ));
        let mut a = t.enter();
        let shutdown = CancellationToken::new();
        assert_eq!(a.within(async {}, &shutdown).await, Ok(()));
        let slow = tokio::time::sleep(Duration::from_secs(60));
        assert_eq!(a.within(slow, &shutdown).await, Err(Cut::TimedOut));
        // A step done at once wins over the deadline that passed.
        assert_eq!(a.within(async {}, &shutdown).await, Ok(()));
        shutdown.cancel();
        assert_eq!(a.within(async {}, &shutdown).await, Err(Cut::Shutdown));
    }
}
