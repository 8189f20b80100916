//! Waiting in a key's line (PG-06). The database promotes the first
//! waiter when the holder releases, in the releasing transaction, and
//! NOTIFYs it; the waiter's task then reads its grant. A holder that is
//! gone releases nothing, so the task also looks again at the holder's
//! expiry: the look ends a lease that ran out and promotes the line. Each
//! look keeps the request's own place for another ttl; a place not kept
//! (its store gone) is passed over when its turn comes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::answer::Answer;
use super::book::NewLease;
use super::book::Request;
use super::driver::PostgresCore;
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{GroupId, LeaseId, RequestId};
use crate::renewal::retry_after;

/// A request in line, as its waiter task keeps it.
pub(crate) struct InLine {
    pub(crate) request_id: RequestId,
    /// The lease id its grant will carry.
    pub(crate) lease_id: LeaseId,
    /// Its ttl: its place is kept for this long after each look.
    pub(crate) ttl: Duration,
    /// The renewal group its lease joins.
    pub(crate) group: Option<GroupId>,
    /// Woken when the database tells of its promotion, or when what it
    /// said may have been lost (the listener reconnected).
    pub(crate) wake: Arc<Notify>,
    /// Fires when the request is given up.
    pub(crate) stop: CancellationToken,
    /// When the holder's lease runs out, as the hold answered.
    pub(crate) first_look: Option<Duration>,
}

/// A promotion: its fence, expiry and maxHold, and when the look that found it was sent.
struct Promoted {
    fence: u64,
    revoke_in: Option<Duration>,
    expires_in: Duration,
    sent_at: crate::clock::Instant,
}

fn place_lost() -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "the request's place in line ran out: it was not kept while it waited",
    )
}

/// Keeps a request's place and takes its turn; hands the grant (or the
/// failure) to its waiter.
pub(crate) async fn wait(shared: Arc<PostgresCore>, w: InLine) {
    let outcome = tokio::select! {
        biased;
        _ = w.stop.cancelled() => return,
        _ = shared.closed.cancelled() => return,
        turn = take_turn(&shared, &w) => turn,
    };
    finish(shared, w, outcome).await;
}

/// The time to the next look: the holder's expiry (a moment past it),
/// and no later than a third of the ttl, to keep the place.
fn next_look(ttl: Duration, holder_expiry: Option<Duration>) -> Duration {
    let keep = ttl / 3;
    holder_expiry.map_or(keep, |e| (e + Duration::from_millis(1)).min(keep))
}

async fn take_turn(shared: &PostgresCore, w: &InLine) -> Result<Promoted> {
    let clock = shared.clock.clone();
    let mut next = clock.now() + next_look(w.ttl, w.first_look);
    loop {
        tokio::select! {
            _ = w.wake.notified() => {}
            _ = clock.sleep_until(next) => {}
        }
        let sent_at = clock.now();
        match shared.look_again(w.request_id).await {
            Ok(Answer::Granted {
                fence,
                revoke_in,
                expires_in,
            }) => {
                return Ok(Promoted {
                    fence,
                    revoke_in,
                    expires_in,
                    sent_at,
                })
            }
            Ok(Answer::Queued { wait, .. }) => next = clock.now() + next_look(w.ttl, wait),
            Ok(Answer::NotHeld) => next = clock.now() + next_look(w.ttl, None),
            Ok(Answer::Over(_)) => return Err(place_lost()),
            Err(_) => next = clock.now() + retry_after(shared.calls.bounds.attempt),
        }
    }
}

/// Hands the outcome to the waiter; a grant nobody waits for any more is released (LOCK-18).
async fn finish(shared: Arc<PostgresCore>, w: InLine, outcome: Result<Promoted>) {
    let undelivered = {
        let mut st = shared.lock();
        let closed = st.closed;
        let tx = match st.requests.get_mut(&w.request_id) {
            Some(Request::Waiting { tx, .. }) if !closed => tx.take(),
            _ => return,
        };
        match outcome {
            Ok(p) => {
                let new = NewLease {
                    request_id: w.request_id,
                    lease_id: w.lease_id,
                    fence: p.fence,
                    ttl: w.ttl,
                    group: w.group,
                    sent_at: p.sent_at,
                    expires_in: p.expires_in,
                    revoke_in: p.revoke_in,
                };
                let granted = shared.book(&mut st, new);
                drop(st);
                match tx {
                    Some(tx) => tx.send(Ok(granted)).is_err(),
                    None => true,
                }
            }
            Err(e) => {
                st.requests.remove(&w.request_id);
                drop(st);
                if let Some(tx) = tx {
                    let _ = tx.send(Err(e));
                }
                false
            }
        }
    };
    if undelivered {
        let _ = shared.release(w.lease_id).await;
    }
}
