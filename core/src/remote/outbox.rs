//! The frames on their way to the server over one connection, and the right
//! to write them.
//!
//! Whoever queues a frame writes it at once, on its own task, when nobody
//! is writing: a request goes out with no hop to another task or thread.
//! When someone is writing, the frame is left in the queue, and the one
//! writing takes it along before it lets go (so frames that come together
//! share one write). Code that cannot wait (a release sent from the
//! connection's reader) queues and wakes the connection's own task to write.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Mutex, MutexGuard};

use futures::SinkExt;
use tokio::io::WriteHalf;
use tokio::sync::Notify;
use tokio_util::bytes::Bytes;
use tokio_util::codec::{FramedWrite, LengthDelimitedCodec};
use tokio_util::sync::CancellationToken;

use super::connection::Io;
use super::protocol::{self, ClientFrame};

type Sink = FramedWrite<WriteHalf<Box<dyn Io>>, LengthDelimitedCodec>;

/// One connection's frames to send.
pub(super) struct Outbox {
    queued: Mutex<VecDeque<ClientFrame>>,
    sink: tokio::sync::Mutex<Sink>,
    /// Wakes the connection's writer to write what is queued.
    wake: Notify,
    /// Cancelled when a write failed (the connection is broken), when the
    /// connection ended, or when its client closed.
    broken: CancellationToken,
}

/// Marks a write that did not finish (its task was dropped mid-way): the
/// connection's task then writes what is left.
struct Unfinished<'a> {
    outbox: &'a Outbox,
    done: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.outbox.wake.notify_one();
        }
    }
}

impl Outbox {
    /// An outbox writing to `sink`, broken when `closed` fires.
    pub(super) fn new(sink: Sink, closed: &CancellationToken) -> Outbox {
        Outbox {
            queued: Mutex::new(VecDeque::new()),
            sink: tokio::sync::Mutex::new(sink),
            wake: Notify::new(),
            broken: closed.child_token(),
        }
    }

    fn queue_lock(&self) -> MutexGuard<'_, VecDeque<ClientFrame>> {
        self.queued.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a write failed.
    pub(super) fn is_broken(&self) -> bool {
        self.broken.is_cancelled()
    }

    /// Completes when the outbox broke.
    pub(super) async fn broken(&self) {
        self.broken.cancelled().await
    }

    /// Marks the outbox broken (its connection ended), which ends its writer.
    pub(super) fn shut(&self) {
        self.broken.cancel();
        self.wake.notify_one();
    }

    /// Adds a frame to the queue (the caller then writes, or wakes the writer).
    pub(super) fn queue(&self, frame: ClientFrame) {
        self.queue_lock().push_back(frame);
    }

    /// Adds a frame and has the connection's task write it.
    pub(super) fn queue_and_wake(&self, frame: ClientFrame) {
        self.queue(frame);
        self.wake.notify_one();
    }

    /// Writes what is queued unless someone is writing already, who then
    /// takes it along.
    pub(super) async fn write_out(&self) {
        loop {
            let Ok(mut sink) = self.sink.try_lock() else {
                return;
            };
            let mut unfinished = Unfinished {
                outbox: self,
                done: false,
            };
            self.drain(&mut sink).await;
            unfinished.done = true;
            drop(sink);
            // A frame queued while the sink was held, by one that found it
            // taken, is written now.
            if self.queue_lock().is_empty() {
                return;
            }
        }
    }

    /// The connection's own writer: writes what is queued whenever woken,
    /// until the outbox broke (its task also stops waiting on a write then).
    pub(super) async fn run(&self) {
        while !self.is_broken() {
            self.wake.notified().await;
            let mut sink = self.sink.lock().await;
            self.drain(&mut sink).await;
        }
    }

    /// Writes every queued frame, including those queued meanwhile, then
    /// flushes. A frame leaves the queue only once the sink has room for it,
    /// so a write dropped half-way loses none: what it left in the queue or
    /// in the sink's buffer, the next write takes.
    async fn drain(&self, sink: &mut Sink) {
        loop {
            let ready = poll_fn(|cx| SinkExt::<Bytes>::poll_ready_unpin(sink, cx)).await;
            if ready.is_err() {
                return self.broken.cancel();
            }
            let Some(frame) = self.queue_lock().pop_front() else {
                break;
            };
            let sent = match protocol::encode(&frame) {
                Ok(bytes) => SinkExt::<Bytes>::start_send_unpin(sink, Bytes::from(bytes)).is_ok(),
                Err(_) => false,
            };
            if !sent {
                return self.broken.cancel();
            }
        }
        if SinkExt::<Bytes>::flush(sink).await.is_err() {
            self.broken.cancel();
        }
    }
}
