//! The one-shot channel on which a store says that a lease ended without its
//! holder. Its receiver is a future, for code that waits, or takes a
//! callback, which the sender runs at once: a holder that only needs to
//! record the loss then costs no task, and the loss is recorded before the
//! store's call that caused it returns (a closed store's leases are lost
//! by the time `close` returns).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::loss::LossReason;

type Callback = Box<dyn FnOnce(LossReason) + Send>;

/// Where a channel's one loss is: not sent yet (with who waits for it), sent, or gone.
enum LossStatus {
    Open {
        waker: Option<Waker>,
        callback: Option<Callback>,
    },
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

/// The holder's end: await it, or hand it a callback with [`LossReceiver::on_loss`].
pub struct LossReceiver {
    shared: Arc<LossCell>,
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
/// use leasehold::driver::loss_channel;
/// use leasehold::LossReason;
/// let (tx, rx) = loss_channel();
/// let seen = Arc::new(Mutex::new(None));
/// let record = seen.clone();
/// rx.on_loss(move |reason| *record.lock().unwrap() = Some(reason));
/// tx.send(LossReason::Closed);
/// assert_eq!(*seen.lock().unwrap(), Some(LossReason::Closed));
/// ```
pub fn loss_channel() -> (LossSender, LossReceiver) {
    let shared = Arc::new(LossCell {
        state: Mutex::new(LossStatus::Open {
            waker: None,
            callback: None,
        }),
    });
    (
        LossSender {
            shared: shared.clone(),
        },
        LossReceiver { shared },
    )
}

impl LossSender {
    /// Says that the lease was lost: runs the receiver's callback now, on
    /// this thread, or wakes the task awaiting it.
    pub fn send(self, reason: LossReason) {
        let mut state = self.shared.lock();
        let LossStatus::Open { waker, callback } = std::mem::replace(&mut *state, LossStatus::Done)
        else {
            return;
        };
        match callback {
            Some(callback) => {
                drop(state);
                callback(reason);
            }
            None => {
                *state = LossStatus::Sent(reason);
                drop(state);
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
        }
    }
}

impl Drop for LossSender {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if let LossStatus::Open { waker, .. } = &mut *state {
            let waker = waker.take();
            *state = LossStatus::Done;
            drop(state);
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

impl LossReceiver {
    /// Runs `callback` with the reason once the lease is lost (at once if it
    /// was lost already); never if the sender goes away without a loss.
    pub fn on_loss(self, callback: impl FnOnce(LossReason) + Send + 'static) {
        let mut state = self.shared.lock();
        match &mut *state {
            LossStatus::Open { callback: slot, .. } => *slot = Some(Box::new(callback)),
            LossStatus::Sent(reason) => {
                let reason = *reason;
                *state = LossStatus::Done;
                drop(state);
                callback(reason);
            }
            LossStatus::Done => {}
        }
    }
}

impl Future for LossReceiver {
    type Output = Result<LossReason, NothingLost>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.shared.lock();
        match &mut *state {
            LossStatus::Open { waker, .. } => {
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone());
                }
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
    }

    // LOCK-09: a callback set after the loss runs at once; one set before runs at the send.
    #[test]
    fn lock_09_callbacks_run_once_before_or_after_the_send() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = loss_channel();
        tx.send(LossReason::Revoked);
        let s = seen.clone();
        rx.on_loss(move |r| s.lock().unwrap().push(r));
        let (tx, rx) = loss_channel();
        let s = seen.clone();
        rx.on_loss(move |r| s.lock().unwrap().push(r));
        assert!(seen.lock().unwrap().len() == 1);
        tx.send(LossReason::Closed);
        let (tx, rx) = loss_channel();
        let s = seen.clone();
        rx.on_loss(move |r| s.lock().unwrap().push(r));
        drop(tx);
        assert_eq!(
            *seen.lock().unwrap(),
            [LossReason::Revoked, LossReason::Closed]
        );
    }
}
