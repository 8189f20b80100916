//! The one-shot channel on which a store says that a lease ended without its
//! holder. Its receiver is a future, for code that waits, or takes a
//! listener, which the sender calls at once: a holder that only needs to
//! record the loss then costs no task, and the loss is recorded before the
//! store's call that caused it returns (a closed store's leases are lost
//! by the time `close` returns). A listener is shared, not boxed: a
//! holder's own state listens, and a million held leases cost no
//! allocation for it.
//!
//! A store that tells the losses of many leases by id ([`LossSink`]) needs
//! no channel per lease: its receivers are [`LossReceiver::told_elsewhere`]
//! or, where a loss may come before the holder is ready to hear it by id,
//! [`LossReceiver::booked`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

use crate::ids::LeaseId;
use crate::loss::LossReason;

/// Who hears the losses of many leases, each named by its id: a server's
/// connection, a renewal group. Called on the thread that tells the loss.
pub type LossSink = Box<dyn Fn(LeaseId, LossReason) + Send + Sync>;

/// Who hears a lease's loss, once, on the thread that tells it
/// ([`LossReceiver::on_loss`]).
pub trait LossListener: Send + Sync {
    /// The lease was lost, for `reason`.
    fn lost(&self, reason: LossReason);
}

/// Where a channel's one loss is: not sent yet (and who waits for it, if
/// anyone: a task or a listener, never both), sent, or gone.
enum LossStatus {
    /// Not sent, and nobody waits yet.
    Open,
    /// Not sent; a task awaits the receiver.
    Awaited(Waker),
    /// Not sent; the listener is told at the send.
    Listened(Arc<dyn LossListener>),
    Sent(LossReason),
    /// The sender went away without a loss, or the receiver took the loss.
    Done,
}

/// The channel's one loss, shared by its two ends.
struct LossCell {
    state: Mutex<LossStatus>,
}

impl LossCell {
    fn lock(&self) -> MutexGuard<'_, LossStatus> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The store's end: [`LossSender::send`] once, or drop it for "nothing was lost".
pub struct LossSender {
    shared: Arc<LossCell>,
}

/// The holder's end: await it, or hand it a listener with [`LossReceiver::on_loss`].
pub struct LossReceiver {
    from: Source,
}

/// Where a receiver's loss comes from.
enum Source {
    /// The channel's cell.
    Cell(Arc<LossCell>),
    /// Nowhere: the store tells the loss elsewhere ([`LossReceiver::told_elsewhere`]).
    Elsewhere,
    /// The store's book of its leases ([`LossReceiver::booked`]).
    Book(Weak<dyn LossBook>, LeaseId),
}

/// A store's book of its leases, which tells their losses by id to a
/// [`LossSink`] once each lease's holder is ready for it, and keeps a loss
/// that came before until then.
pub(crate) trait LossBook: Send + Sync {
    /// The holder of `lease` is ready to hear its loss by id: returns the
    /// loss that came before, if one did.
    fn heard(&self, lease: LeaseId) -> Option<LossReason>;
}

/// What a [`LossReceiver`] yields when its sender went away without a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NothingLost;

impl fmt::Display for NothingLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the store let the lease go without a loss")
    }
}

impl std::error::Error for NothingLost {}

/// A new channel.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use leasehold::driver::{loss_channel, LossListener};
/// use leasehold::LossReason;
/// struct Seen(Mutex<Option<LossReason>>);
/// impl LossListener for Seen {
///     fn lost(&self, reason: LossReason) {
///         *self.0.lock().unwrap() = Some(reason);
///     }
/// }
/// let (tx, rx) = loss_channel();
/// let seen = Arc::new(Seen(Mutex::new(None)));
/// rx.on_loss(seen.clone());
/// tx.send(LossReason::Closed);
/// assert_eq!(*seen.0.lock().unwrap(), Some(LossReason::Closed));
/// ```
pub fn loss_channel() -> (LossSender, LossReceiver) {
    let shared = Arc::new(LossCell {
        state: Mutex::new(LossStatus::Open),
    });
    (
        LossSender {
            shared: shared.clone(),
        },
        LossReceiver {
            from: Source::Cell(shared),
        },
    )
}

impl LossSender {
    /// Says that the lease was lost: tells the receiver's listener now, on
    /// this thread, or wakes the task awaiting it.
    pub fn send(self, reason: LossReason) {
        let mut state = self.shared.lock();
        match std::mem::replace(&mut *state, LossStatus::Done) {
            LossStatus::Open => *state = LossStatus::Sent(reason),
            LossStatus::Awaited(waker) => {
                *state = LossStatus::Sent(reason);
                drop(state);
                waker.wake();
            }
            LossStatus::Listened(listener) => {
                drop(state);
                listener.lost(reason);
            }
            done @ (LossStatus::Sent(_) | LossStatus::Done) => *state = done,
        }
    }
}

impl Drop for LossSender {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        match std::mem::replace(&mut *state, LossStatus::Done) {
            LossStatus::Awaited(waker) => {
                drop(state);
                waker.wake();
            }
            LossStatus::Open | LossStatus::Listened(_) => {}
            sent @ (LossStatus::Sent(_) | LossStatus::Done) => *state = sent,
        }
    }
}

impl LossReceiver {
    /// The receiver of a lease whose loss the store tells its holder another
    /// way (a server's connection hears the losses of all its leases on one
    /// channel): it holds nothing, a listener is never told, and awaiting it
    /// yields [`NothingLost`] at once.
    pub fn told_elsewhere() -> LossReceiver {
        LossReceiver {
            from: Source::Elsewhere,
        }
    }

    /// The receiver of `lease`, whose loss `book` tells by id once its
    /// holder is ready: listening on it (or awaiting it) says the holder is,
    /// and hears only a loss that came before; a later one goes to the
    /// book's [`LossSink`].
    pub(crate) fn booked(book: Weak<dyn LossBook>, lease: LeaseId) -> LossReceiver {
        LossReceiver {
            from: Source::Book(book, lease),
        }
    }

    /// Tells `listener` the reason once the lease is lost (at once if it
    /// was lost already); never if the sender goes away without a loss. A
    /// booked receiver tells it only a loss that came before.
    pub fn on_loss(self, listener: Arc<dyn LossListener>) {
        let shared = match self.from {
            Source::Cell(shared) => shared,
            Source::Elsewhere => return,
            Source::Book(book, lease) => {
                if let Some(reason) = book.upgrade().and_then(|b| b.heard(lease)) {
                    listener.lost(reason);
                }
                return;
            }
        };
        let mut state = shared.lock();
        match &*state {
            LossStatus::Open | LossStatus::Awaited(_) | LossStatus::Listened(_) => {
                *state = LossStatus::Listened(listener);
            }
            LossStatus::Sent(reason) => {
                let reason = *reason;
                *state = LossStatus::Done;
                drop(state);
                listener.lost(reason);
            }
            LossStatus::Done => {}
        }
    }
}

impl Future for LossReceiver {
    type Output = Result<LossReason, NothingLost>;

    /// A booked receiver completes at once, with a loss that came before or
    /// [`NothingLost`].
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let shared = match &self.from {
            Source::Cell(shared) => shared,
            Source::Elsewhere => return Poll::Ready(Err(NothingLost)),
            Source::Book(book, lease) => {
                let early = book.upgrade().and_then(|b| b.heard(*lease));
                self.from = Source::Elsewhere;
                return Poll::Ready(early.ok_or(NothingLost));
            }
        };
        let mut state = shared.lock();
        match &*state {
            LossStatus::Awaited(waker) if waker.will_wake(cx.waker()) => Poll::Pending,
            LossStatus::Open | LossStatus::Awaited(_) | LossStatus::Listened(_) => {
                *state = LossStatus::Awaited(cx.waker().clone());
                Poll::Pending
            }
            LossStatus::Sent(reason) => {
                let reason = *reason;
                *state = LossStatus::Done;
                Poll::Ready(Ok(reason))
            }
            LossStatus::Done => Poll::Ready(Err(NothingLost)),
        }
    }
}

impl fmt::Debug for LossSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LossSender")
    }
}

impl fmt::Debug for LossReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LossReceiver")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-09: the reason reaches an awaiting task once.
    #[tokio::test]
    async fn lock_09_an_awaited_loss_arrives() {
        let (tx, rx) = loss_channel();
        let waiter = tokio::spawn(rx);
        tokio::task::yield_now().await;
        tx.send(LossReason::Expired);
        assert_eq!(waiter.await.unwrap(), Ok(LossReason::Expired));
    }

    #[tokio::test]
    async fn a_dropped_sender_means_nothing_lost() {
        let (tx, rx) = loss_channel();
        drop(tx);
        assert_eq!(rx.await, Err(NothingLost));
        assert_eq!(LossReceiver::told_elsewhere().await, Err(NothingLost));
    }

    /// Records the reasons it is told.
    struct Record(Mutex<Vec<LossReason>>);

    impl LossListener for Record {
        fn lost(&self, reason: LossReason) {
            self.0.lock().unwrap().push(reason);
        }
    }

    // LOCK-09: a listener set after the loss is told at once; one set before, at the send.
    #[test]
    fn lock_09_listeners_are_told_once_before_or_after_the_send() {
        let seen = Arc::new(Record(Mutex::new(Vec::new())));
        let (tx, rx) = loss_channel();
        tx.send(LossReason::Revoked);
        rx.on_loss(seen.clone());
        let (tx, rx) = loss_channel();
        rx.on_loss(seen.clone());
        assert!(seen.0.lock().unwrap().len() == 1);
        tx.send(LossReason::Closed);
        let (tx, rx) = loss_channel();
        rx.on_loss(seen.clone());
        drop(tx);
        assert_eq!(
            *seen.0.lock().unwrap(),
            [LossReason::Revoked, LossReason::Closed]
        );
    }
}
