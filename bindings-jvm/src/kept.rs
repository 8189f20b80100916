//! `Kept`: the one wrapper of anything the core holds for the JVM (a key's
//! `Holding` in `holding`): the core's holding, kept until the JVM side
//! ends it once, and what its held work sees until then.

use std::sync::Mutex;

use leasehold::{Error, ErrorKind, Held, HeldView};

use crate::bridge::{self, OnDrop};
use crate::errors::NativeError;

/// A core holding until it ends, and what its held work sees.
pub(crate) struct Kept<H: Held> {
    view: H::View,
    holding: Mutex<Option<H>>,
}

impl<H: Held> Kept<H> {
    /// Keeps `holding`.
    pub(crate) fn new(holding: H) -> Kept<H> {
        Kept {
            view: holding.view().clone(),
            holding: Mutex::new(Some(holding)),
        }
    }

    /// What the held work sees.
    pub(crate) fn view(&self) -> &H::View {
        &self.view
    }

    /// Completes with the loss reason (`expired`, `revoked`, …) once the
    /// holding is lost; at once if it was lost already. Dropped (the
    /// awaiting coroutine cancelled), it stops waiting.
    pub(crate) async fn lost_signal(&self) -> Result<String, NativeError> {
        let view = self.view.clone();
        let lost = view.lost_signal();
        bridge::spawn(OnDrop::Abort, async move {
            lost.await;
            Ok(view
                .loss_reason()
                .map_or("unknown", |r| r.as_str())
                .to_owned())
        })
        .await
    }

    /// Ends the holding: fails `Lost` if it was lost while held (LOCK-10),
    /// `Closed` if it ended already. The release runs on to its end even if
    /// the awaiting coroutine is cancelled (LOCK-11).
    pub(crate) async fn end(&self) -> Result<(), NativeError> {
        let holding = self
            .holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        bridge::spawn(OnDrop::RunOn, async move {
            match holding {
                Some(holding) => holding.end().await,
                None => Err(Error::new(ErrorKind::Closed, "the hold ended already")),
            }
        })
        .await
    }
}
